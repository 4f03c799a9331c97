"""A step of several tasks stores each task's work as it finishes (pending writes of kind
``"done"``), on every saver that outlives the process, sync and async; a replay of an
older checkpoint still reruns its step, and ``durability="exit"`` stores nothing until
the run stops. The in-memory saver keeps nothing mid-step: its threads die with the
process, so keeping would cost (~3 µs a task) and save nothing.
(The crash itself, in a killed process: tests/test_send_crash.py.)"""

from __future__ import annotations

import asyncio
import operator
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from checkpoint import SqliteSaver
from checkpoint.base import CheckpointSaver
from checkpoint.errors import CheckpointStorageError
from graphagent.errors import CheckpointStorageError as GraphCheckpointStorageError
from graphagent.graph import END, START, Send, StateGraph

N, SLOW = 6, 3


class State(TypedDict):
    xs: list[int]
    ys: Annotated[list[int], operator.add]


def _kept(saver: CheckpointSaver) -> list[str]:
    head = saver.get("t")
    return [] if head is None else sorted(w.task for w in head.pending_writes if w.kind == "done")


def _expected(saver: CheckpointSaver, keys: list[str]) -> list[list[str]]:
    return [keys if saver.outlives_process else []]


def _wait_for(saver: CheckpointSaver, count: int) -> None:
    deadline = time.monotonic() + (20 if saver.outlives_process else 0.05)
    while len(_kept(saver)) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def _graph(saver: CheckpointSaver, work: Any, durability: str | None = None) -> Any:
    g = StateGraph(State).add_node("prep", lambda s: {"xs": list(range(N))})
    g.add_node("work", work)
    g.add_conditional_edges("prep", lambda s: [Send("work", {"x": x}) for x in s["xs"]])
    g.add_edge(START, "prep").add_edge("work", END)
    return g.compile(saver=saver, durability=durability)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_finished_tasks_are_stored_while_the_slow_one_runs(
    saver: CheckpointSaver, durability: str
) -> None:
    """While task 3 still runs, the saver already holds the other 5 tasks' work."""
    seen: list[list[str]] = []

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        if arg["x"] == SLOW:
            _wait_for(saver, N - 1)
            seen.append(_kept(saver))
        return {"ys": [arg["x"]]}

    out = _graph(saver, work, durability).invoke({"xs": [], "ys": []}, {"thread_id": "t"})
    assert out["ys"] == list(range(N))
    assert seen == _expected(saver, [f"work[{x}]" for x in range(N) if x != SLOW])


async def test_async_finished_tasks_are_stored_while_the_slow_one_runs(
    saver: CheckpointSaver,
) -> None:
    """ainvoke: the finished tasks' work is stored while the slow task awaits."""
    seen: list[list[str]] = []

    async def work(arg: dict[str, int]) -> dict[str, list[int]]:
        if arg["x"] == SLOW:
            deadline = time.monotonic() + (20 if saver.outlives_process else 0.05)
            while len(await saver_kept(saver)) < N - 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            seen.append(await saver_kept(saver))
        return {"ys": [arg["x"]]}

    out = await _graph(saver, work).ainvoke({"xs": [], "ys": []}, {"thread_id": "t"})
    assert out["ys"] == list(range(N))
    assert seen == _expected(saver, [f"work[{x}]" for x in range(N) if x != SLOW])


async def saver_kept(saver: CheckpointSaver) -> list[str]:
    head = await saver.aget("t")
    return [] if head is None else sorted(w.task for w in head.pending_writes if w.kind == "done")


def test_a_replay_of_the_fan_out_checkpoint_reruns_every_task(saver: CheckpointSaver) -> None:
    """Work kept as tasks finished counts only on the head: replaying the checkpoint the
    fan-out grew from runs all its tasks again."""
    calls: list[int] = []

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        calls.append(arg["x"])
        return {"ys": [arg["x"]]}

    app = _graph(saver, work)
    config = {"thread_id": "t"}
    app.invoke({"xs": [], "ys": []}, config)
    before = next(s for s in app.get_state_history(config) if s.next == ("work",))
    calls.clear()
    assert app.invoke(None, before.config)["ys"] == list(range(N))
    assert sorted(calls) == list(range(N))


def test_exit_durability_stores_no_task_before_the_run_stops(saver: CheckpointSaver) -> None:
    """durability="exit" writes once, when the run stops: nothing is kept mid-step."""
    seen: list[list[str]] = []

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        if arg["x"] == SLOW:
            time.sleep(0.05)
            seen.append(_kept(saver))
        return {"ys": [arg["x"]]}

    out = _graph(saver, work, "exit").invoke({"xs": [], "ys": []}, {"thread_id": "t"})
    assert out["ys"] == list(range(N)) and seen == [[]]


def test_a_fan_out_from_start_stores_its_input_first(saver: CheckpointSaver) -> None:
    """A fan-out in the run's first step stores the input before it runs, so the finished
    tasks have a checkpoint to be kept on (and the input survives a crash)."""
    seen: list[list[str]] = []

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        if arg["x"] == 0:
            _wait_for(saver, 1)
            seen.append(_kept(saver))
        return {"ys": [arg["x"]]}

    g = StateGraph(State).add_node("work", work)
    g.add_conditional_edges(START, lambda s: [Send("work", {"x": x}) for x in s["xs"]])
    app = g.add_edge("work", END).compile(saver=saver)
    assert app.invoke({"xs": [0, 1], "ys": []}, {"thread_id": "t"})["ys"] == [0, 1]
    assert seen == _expected(saver, ["work[1]"])
    sources = [c.metadata["source"] for c in saver.list("t")]
    assert sources == ["loop", "input"]


class _FailingWrites(SqliteSaver):
    """A SQLite saver whose pending writes fail while ``broken`` (the store went away)."""

    broken = True

    def put_writes(self, thread_id: str, checkpoint_id: str, writes: Any) -> None:
        if self.broken:
            raise CheckpointStorageError("disk gone")
        super().put_writes(thread_id, checkpoint_id, writes)


@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_failed_keeping_write_ends_the_run_with_the_saver_error(tmp_path: Path, how: str) -> None:
    """A task's work that cannot be stored ends the run with the saver's error (what
    finished is still committed if the checkpoint write works); continuing the thread
    once the store is back gives each task's result once."""
    with _FailingWrites(tmp_path / "t.sqlite") as saver:
        app = _graph(saver, lambda arg: {"ys": [arg["x"]]})
        config = {"thread_id": "t"}
        with pytest.raises(GraphCheckpointStorageError, match="disk gone"):
            if how == "sync":
                app.invoke({"xs": [], "ys": []}, config)
            else:
                asyncio.run(app.ainvoke({"xs": [], "ys": []}, config))
        head = saver.get("t")
        assert head is not None and head.values["ys"] in ([], list(range(N)))
        saver.broken = False
        assert app.invoke(None, config)["ys"] == list(range(N))


def test_ainvoke_keeps_a_sync_task_that_finishes_after_a_sibling_failed(
    saver: CheckpointSaver,
) -> None:
    """Under ainvoke a failure cancels the step's other tasks, but a sync node's thread
    cannot be stopped: its result is waited for and kept, so it is not run again."""
    calls: list[int] = []
    broken = {0}

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        calls.append(arg["x"])
        if arg["x"] in broken:
            raise RuntimeError("flaky")
        time.sleep(0.3)  # still running when its sibling fails
        return {"ys": [arg["x"]]}

    g = StateGraph(State).add_node("work", work)
    g.add_conditional_edges(START, lambda s: [Send("work", {"x": x}) for x in s["xs"]])
    app = g.add_edge("work", END).compile(saver=saver)
    config = {"thread_id": "t"}
    with pytest.raises(RuntimeError, match="flaky"):
        asyncio.run(app.ainvoke({"xs": [0, 1], "ys": []}, config))
    broken.clear()
    calls.clear()
    assert asyncio.run(app.ainvoke(None, config))["ys"] == [0, 1]
    assert calls == [0]
