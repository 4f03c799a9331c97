"""What a step's checkpoint write costs under each durability mode, per saver.

``"sync"`` writes each step before the next starts; ``"async"`` writes it while the next
step runs; ``"exit"`` writes once per run. The nodes here do nothing, so ``"async"`` has
no node work to hide its writes behind: it shows the cost of handing a write to a worker.

Run: ``.venv/bin/python bench/durability.py`` (Redis on 127.0.0.1:6379 for its row).
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import best_of, machine

from checkpoint import MemorySaver, RedisSaver, SqliteSaver
from graphagent.graph import END, START, StateGraph

STEPS = 20


def inc(state: Any) -> dict[str, int]:
    return {"x": state["x"] + 1}


def slow_inc(state: Any) -> dict[str, int]:
    time.sleep(0.0005)  # a node that waits on I/O for half a millisecond
    return {"x": state["x"] + 1}


def runner(saver: Any, mode: str, node: Any = inc) -> Any:
    g = StateGraph()
    names = [f"n{i}" for i in range(STEPS)]
    for name in names:
        g.add_node(name, node)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    app = g.add_edge(names[-1], END).compile(saver=saver)
    threads = itertools.count()
    prefix = uuid.uuid4().hex[:8]

    def run() -> None:
        cfg = {"thread_id": f"{prefix}-{next(threads)}", "recursion_limit": STEPS + 5}
        assert app.invoke({"x": 0}, cfg, durability=mode)["x"] == STEPS

    return run


def main() -> None:
    print(f"per node-step, {STEPS}-node linear graph, by durability ({machine()})")
    print(f"{'saver':<26}{'sync':>12}{'async':>12}{'exit':>12}")
    savers: list[tuple[str, Any]] = [("MemorySaver", MemorySaver())]
    tmp = tempfile.mkdtemp()
    savers.append(("SqliteSaver", SqliteSaver(Path(tmp) / "bench.sqlite")))
    try:
        redis_saver = RedisSaver.from_url(
            "redis://127.0.0.1:6379/0", prefix=f"bench{uuid.uuid4().hex[:6]}"
        )
        redis_saver.client.ping()
        savers.append(("RedisSaver", redis_saver))
    except Exception as exc:  # no Redis here: its row is left out
        print(f"(RedisSaver left out: {exc})")
    for node, what in ((inc, ""), (slow_inc, ", 0.5 ms nodes")):
        for name, saver in savers:
            row = [
                best_of(runner(saver, m, node), repeat=5, number=3) / STEPS
                for m in ("sync", "async", "exit")
            ]
            print(f"{name + what:<26}" + "".join(f"{t * 1e6:>9.1f} us" for t in row))
    for _, saver in savers:
        client = getattr(saver, "client", None)
        if client is not None:  # leave nothing behind in the shared Redis
            for key in client.scan_iter(match=f"{{{saver.prefix}:*", count=1000):
                client.delete(key)


if __name__ == "__main__":
    main()
