"""Processes sharing threads through every store that outlives a process (SQLite,
PostgreSQL, Redis, Cluster): of several stepping one thread from the same head at the same
moment exactly one lands. (Threads continued by other processes: test_scale_out and
test_crash_mid_step.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from _stores import Store, close

from graphagent.graph import END, START, AppendStrategy, StateGraph

RACERS = 3

SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from _stores import Store
    from graphagent.errors import CheckpointConflictError
    from graphagent.graph import END, START, AppendStrategy, StateGraph

    go, name = sys.argv[2:4]
    store = Store(*sys.argv[4:7])

    def work(state):
        print("ready", flush=True)  # this racer has loaded the head and runs the node
        while not os.path.exists(go):
            time.sleep(0.005)
        return {"log": [name]}

    g = StateGraph({"log": AppendStrategy()}).add_node("work", work)
    app = g.add_edge(START, "work").add_edge("work", END).compile(saver=store.open())
    try:
        app.invoke(None, {"thread_id": "t"})
        print("won")
    except CheckpointConflictError as exc:
        print("conflict:", str(exc).splitlines()[0])
    """
)


def test_racing_processes_one_step_lands(store: Store, tmp_path: Path) -> None:
    """3 processes resume one paused thread at once: one wins, two conflict, nothing mixed."""
    saver = store.open()
    g = StateGraph({"log": AppendStrategy()}).add_node("work", lambda s: {"log": ["here"]})
    paused = (
        g.add_edge(START, "work")
        .add_edge("work", END)
        .compile(saver=saver, interrupt_before=["work"])
    )
    try:
        paused.invoke({"log": ["in"]}, {"thread_id": "t"})
        head = saver.head("t")
        go = tmp_path / "go"
        tests = str(Path(__file__).parent)
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", SCRIPT, tests, str(go), f"r{i}", *store.argv()],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(RACERS)
        ]
        for r in racers:  # every racer has read the same head before any writes
            assert r.stdout is not None and r.stdout.readline().strip() == "ready"
        go.touch()
        outcomes = []
        for r in racers:
            out, err = r.communicate(timeout=60)
            assert r.returncode == 0, err
            outcomes.append(out.strip())
        assert sum(o == "won" for o in outcomes) == 1, outcomes
        assert all(o == "won" or "moved to checkpoint" in o for o in outcomes), outcomes
        state = saver.get("t")
        assert state is not None and len(state.values["log"]) == 2  # "in" and the winner's
        assert state.parent_id == head and len(saver.list("t")) == 2
    finally:
        close(saver)
