"""A worker process killed (SIGKILL) in the middle of a step, on every store that outlives a
process: inside a node, and inside the saver's write of the step's checkpoint. Either way
the thread stays at its last good step, nothing is half-written, and a new process resumes
it from there."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _stores import Store, close

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from _stores import Store
    from checkpoint.serde import Serde
    from graphagent.graph import END, START, AppendStrategy, StateGraph

    where, marker = sys.argv[2:4]
    store = Store(*sys.argv[4:7])

    class CrashingSerde(Serde):
        # encoding the value "BOOM" kills the process: a crash inside the step's write
        def dumps(self, value):
            if value == "BOOM":
                os.kill(os.getpid(), signal.SIGKILL)
            return super().dumps(value)

    def b(state):
        if os.path.exists(marker):
            return {"log": ["b"]}
        open(marker, "w").close()
        if where == "node":
            os.kill(os.getpid(), signal.SIGKILL)
        return {"log": ["BOOM"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: {"log": ["a"]}).add_node("b", b)
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    app = g.compile(saver=store.open(serde=CrashingSerde()))
    first = not os.path.exists(marker)
    out = app.invoke({"log": []} if first else None, {"thread_id": "t"})
    print("|".join(out["log"]))
    """
)


@pytest.mark.parametrize("where", ["node", "write"])
def test_a_process_killed_mid_step_leaves_the_last_good_step(
    store: Store, where: str, tmp_path: Path
) -> None:
    """Killed in node b (or while writing b's step): the thread resumes from after a."""
    marker = tmp_path / "b-ran-once"

    def run() -> subprocess.CompletedProcess[str]:
        tests = str(Path(__file__).parent)
        argv = [sys.executable, "-c", SCRIPT, tests, where, str(marker), *store.argv()]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    crashed = run()
    assert crashed.returncode == -9, crashed.stderr
    saver = store.open()
    try:
        head = saver.get("t")
        assert head is not None
        assert head.values == {"log": ["a"]} and head.next == ("b",)  # the last good step
        resumed = run()
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip() == "a|b|c"  # b's work once, nothing half-written
        history = saver.list("t")
        assert [h.step for h in history] == sorted({h.step for h in history}, reverse=True)
        for newer, older in itertools.pairwise(history):
            assert newer.parent_id == older.id
        final = saver.get("t")
        assert final is not None and final.values == {"log": ["a", "b", "c"]}
    finally:
        close(saver)
