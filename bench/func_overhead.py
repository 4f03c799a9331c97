"""Per task overhead of the functional API, graphagent vs LangGraph.

An entrypoint calls a trivial task ``n`` times, one after the other (``t(i).result()``)
or all at once (``[t(i) for ...]`` then each ``.result()``); the figure is the run's time
divided by ``n``, so it holds what a task call costs: numbering, the future, the worker
thread, keeping the result (with MemorySaver: one stored pending write each), the update
for streams.

Run: ``make bench`` or ``.venv/bin/python bench/func_overhead.py``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import best_of, have_langgraph, machine, ratio

from checkpoint import MemorySaver
from graphagent.func import entrypoint, task


def inc(x: int) -> int:
    return x + 1


def _runner(app: Any, n: int, saver: bool, configurable: bool) -> Any:
    threads = itertools.count()

    def run() -> None:
        cfg: dict[str, Any] = {}
        if saver:
            thread = f"t{next(threads)}"
            cfg = {"configurable": {"thread_id": thread}} if configurable else {"thread_id": thread}
        assert app.invoke(n, cfg) == n

    return run


def ours(n: int, saver: bool, fan_out: bool) -> Any:
    step = task(inc)

    @entrypoint(saver=MemorySaver() if saver else None)
    def work(count: int) -> int:
        if fan_out:
            return sum(f.result() for f in [step(0) for _ in range(count)])
        return sum(step(0).result() for _ in range(count))

    return _runner(work, n, saver, False)


def theirs(n: int, saver: bool, fan_out: bool) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import entrypoint as lentrypoint
    from langgraph.func import task as ltask

    step = ltask(inc)

    @lentrypoint(checkpointer=InMemorySaver() if saver else None)
    def work(count: int) -> int:
        if fan_out:
            return sum(f.result() for f in [step(0) for _ in range(count)])
        return sum(step(0).result() for _ in range(count))

    return _runner(work, n, saver, True)


def main() -> None:
    print(f"functional API overhead per task ({machine()})")
    print(f"{'case':<40}{'graphagent':>14}{'LangGraph':>14}   ratio")
    lg = have_langgraph()
    n = 100
    for saver in (False, True):
        for fan_out in (False, True):
            shape = "fan-out" if fan_out else "one by one"
            label = f"{n} tasks {shape}, {'MemorySaver' if saver else 'no saver'}"
            a = best_of(ours(n, saver, fan_out), repeat=15, number=10) / n
            b = best_of(theirs(n, saver, fan_out), repeat=15, number=2) / n if lg else None
            theirs_text = f"{b * 1e6:>11.1f} us" if b is not None else f"{'-':>14}"
            print(f"{label:<40}{a * 1e6:>11.1f} us{theirs_text}   {ratio(b, a)}")


if __name__ == "__main__":
    main()
