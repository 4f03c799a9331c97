"""A process killed (SIGKILL) in the middle of a ``Send`` fan-out (and of parallel branches),
on every store that outlives a process: the tasks that had finished keep their work as
pending writes stored as each finished, so a new process resumes the thread with
``invoke(None)`` and reruns only the tasks that had not finished."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _stores import Store, close

from graphagent.config import RunnableConfig
from graphagent.graph import StateSnapshot

SCRIPT = textwrap.dedent(
    """
    import asyncio, operator, os, signal, sys, time
    from typing import Annotated, TypedDict
    sys.path.insert(0, sys.argv[1])
    from _stores import Store
    from graphagent.graph import END, START, Send, StateGraph

    ran, how, shape = sys.argv[2], sys.argv[3], sys.argv[4]
    store = Store(*sys.argv[5:8])
    first = sys.argv[8] == "first"
    saver = store.open()
    N, SLOW = 8, 5

    class State(TypedDict):
        xs: list[int]
        ys: Annotated[list[int], operator.add]

    def note(x):
        with open(ran, "a") as f:  # one line per task run, written when it starts
            f.write(f"{x}\\n")

    def kept():
        head = saver.get("t")
        return [] if head is None else [w for w in head.pending_writes if w.kind == "done"]

    def work(x):
        note(x)
        if x == SLOW and first:
            # the others finish and are stored; then this process dies mid-step
            deadline = time.monotonic() + 30
            while len(kept()) < N - 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(os.getpid(), signal.SIGKILL)
        return {"ys": [x * x]}

    async def awork(x):
        note(x)
        if x == SLOW and first:
            deadline = time.monotonic() + 30
            while len(await asyncio.to_thread(kept)) < N - 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            os.kill(os.getpid(), signal.SIGKILL)
        return {"ys": [x * x]}

    fn = awork if how == "async" else work
    g = StateGraph(State).add_node("prep", lambda s: {"xs": list(range(N))})
    if shape == "send":
        g.add_node("work", lambda arg: fn(arg["x"]))
        fan = lambda s: [Send("work", {"x": x}) for x in s["xs"]]
        g.add_conditional_edges("prep", fan).add_edge("work", END)
    else:  # N parallel branches, each its own node
        for x in range(N):
            g.add_node(f"w{x}", (lambda x: lambda s: fn(x))(x))
            g.add_edge("prep", f"w{x}").add_edge(f"w{x}", END)
    g.add_edge(START, "prep")
    app = g.compile(saver=saver)
    given = {"xs": [], "ys": []} if first else None
    if how == "async":
        out = asyncio.run(app.ainvoke(given, {"thread_id": "t"}))
    else:
        out = app.invoke(given, {"thread_id": "t"})
    print(out["ys"])
    """
)


@pytest.mark.parametrize("shape", ["send", "branches"])
@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_process_killed_mid_fan_out_resumes_only_the_unfinished_tasks(
    store: Store, tmp_path: Path, how: str, shape: str
) -> None:
    """Killed while task 5 of 8 runs (the 7 others finished): the next process runs task 5
    only, and the step merges all 8 results in the order the sends were made."""
    ran = tmp_path / "ran.txt"

    def run(which: str) -> subprocess.CompletedProcess[str]:
        tests = str(Path(__file__).parent)
        argv = [sys.executable, "-c", SCRIPT, tests, str(ran), how, shape, *store.argv(), which]
        return subprocess.run(argv, capture_output=True, text=True, timeout=90, check=False)

    crashed = run("first")
    assert crashed.returncode == -9, crashed.stderr
    assert sorted(map(int, ran.read_text().split())) == list(range(8))
    saver = store.open()
    try:
        head = saver.get("t")
        assert head is not None and head.values["ys"] == []  # the step did not commit
        kept = sorted(w.task for w in head.pending_writes if w.kind == "done")
        assert len(kept) == 7
        if shape == "branches":  # get_state shows the finished branches' results
            snap = StateSnapshot.from_checkpoint(head, RunnableConfig(thread_id="t"))
            results = {t.name: t.result for t in snap.tasks}
            assert results == {f"w{x}": None if x == 5 else {"ys": [x * x]} for x in range(8)}
        resumed = run("again")
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip() == str([x * x for x in range(8)])
        runs = list(map(int, ran.read_text().split()))
        assert sorted(runs[8:]) == [5]  # only the unfinished task ran again
        final = saver.get("t")
        assert final is not None and final.values["ys"] == [x * x for x in range(8)]
        assert final.next == ()
    finally:
        close(saver)
