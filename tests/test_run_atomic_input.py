"""A run's input lands with its first step or not at all (issue 13 item 3), on every saver.

Two runs racing on one thread used to store the loser's input as a checkpoint of its own
before its first step, so the loser's message stayed, unanswered, in the winner's thread
even though the loser got ``CheckpointConflictError``, and the documented retry (run the
same input again) then stored it twice.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from checkpoint import (
    CheckpointConflictError as SaverConflictError,
)
from checkpoint import (
    CheckpointNotFoundError,
    CheckpointWrite,
    MemorySaver,
    SerializationError,
    new_checkpoint_id,
)
from checkpoint.base import CheckpointSaver
from graphagent.errors import CheckpointConflictError
from graphagent.graph import END, START, AppendStrategy, CompiledGraph, StateGraph, interrupt


def _chat(saver: CheckpointSaver, both_read: threading.Barrier | None) -> CompiledGraph:
    """A one-node chat: the reply names the last message."""

    def reply(state: Any) -> dict[str, Any]:
        if both_read is not None:
            both_read.wait()  # both runs have loaded the thread before either commits
        return {"log": [f"reply to {state['log'][-1]}"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("reply", reply).add_edge(START, "reply").add_edge("reply", END)
    return g.compile(saver=saver)


def _second(saver: CheckpointSaver, make_saver: Any) -> CheckpointSaver:
    return saver if isinstance(saver, MemorySaver) else make_saver()  # type: ignore[no-any-return]


def _race(*runs: Any) -> list[BaseException | None]:
    errors: list[BaseException | None] = [None] * len(runs)

    def go(i: int) -> None:
        try:
            runs[i]()
        except BaseException as exc:
            errors[i] = exc

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return errors


@pytest.mark.parametrize("thread_exists", [False, True], ids=["new-thread", "old-thread"])
def test_a_losing_racer_leaves_nothing_and_its_retry_lands_once(
    saver: CheckpointSaver, make_saver: Any, thread_exists: bool
) -> None:
    """Of two runs with input racing on a thread, the loser stores nothing at all; running
    its input again (the documented retry) adds it once."""
    config = {"thread_id": "t"}
    if thread_exists:
        _chat(saver, None).invoke({"log": ["hello"]}, config)
    before = [c.id for c in saver.list("t")]
    both_read = threading.Barrier(2, timeout=10)
    apps = {"A": _chat(saver, both_read), "B": _chat(_second(saver, make_saver), both_read)}
    errors = dict(
        zip(
            apps,
            _race(*(lambda n=n, a=a: a.invoke({"log": [n]}, config) for n, a in apps.items())),
            strict=True,
        )
    )
    lost = [n for n, e in errors.items() if e is not None]
    assert len(lost) == 1, errors
    loser, winner = lost[0], "B" if lost[0] == "A" else "A"
    assert isinstance(errors[loser], CheckpointConflictError)
    start = ["hello", "reply to hello"] if thread_exists else []
    state = apps[winner].get_state(config)
    assert state.values["log"] == [*start, winner, f"reply to {winner}"]
    history = [c.id for c in saver.list("t")]
    assert history[len(history) - len(before) :] == before and len(history) == len(before) + 2
    _chat(saver, None).invoke({"log": [loser]}, config)  # the retry
    assert apps[winner].get_state(config).values["log"] == [
        *start,
        winner,
        f"reply to {winner}",
        loser,
        f"reply to {loser}",
    ]


def test_input_and_first_step_are_one_write(saver: CheckpointSaver) -> None:
    """A run stores its input checkpoint and its first step's together: the history shows
    both, and a failing first node still leaves the input for invoke(None) to retry."""
    _chat(saver, None).invoke({"log": ["hi"]}, {"thread_id": "t"})
    cps = saver.list("t")
    assert [c.metadata["source"] for c in cps] == ["loop", "input"]
    assert cps[0].parent_id == cps[1].id and cps[1].values == {"log": ["hi"]}

    calls = []

    def flaky(state: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("flaky")
        return {"log": ["ok"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("flaky", flaky).add_edge(START, "flaky").add_edge("flaky", END)
    app = g.compile(saver=saver)
    with pytest.raises(RuntimeError, match="flaky"):
        app.invoke({"log": ["q"]}, {"thread_id": "u"})
    assert app.get_state({"thread_id": "u"}).values == {"log": ["q"]}
    assert app.invoke(None, {"thread_id": "u"}) == {"log": ["q", "ok"]}


def test_a_graph_that_ends_at_once_stores_its_input(saver: CheckpointSaver) -> None:
    """A run whose input routes straight to END still stores the input checkpoint."""
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("n", lambda state: {"log": ["n"]})
    g.add_conditional_edges(START, lambda state: END, [END, "n"]).add_edge("n", END)
    app = g.compile(saver=saver)
    assert app.invoke({"log": ["x"]}, {"thread_id": "t"}) == {"log": ["x"]}
    assert app.get_state({"thread_id": "t"}).values == {"log": ["x"]}


def test_a_first_step_that_interrupts_stores_input_and_question(saver: CheckpointSaver) -> None:
    """A first node that asks a question: the input lands with the question pending."""

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [interrupt("name?")]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    app = g.compile(saver=saver)
    app.invoke({"log": ["hi"]}, {"thread_id": "t"})
    state = app.get_state({"thread_id": "t"})
    assert state.values == {"log": ["hi"]} and state.next == ("ask",)
    assert [i.value for i in state.interrupts] == ["name?"]


def _w(parent: str | None, value: Any) -> CheckpointWrite:
    return CheckpointWrite(
        new_checkpoint_id(), parent, 0, {"log": ("append", [value])}, (), {}, time.time()
    )


def test_put_many_lands_whole_or_not_at_all(saver: CheckpointSaver) -> None:
    """put_many stores a chain as one step: all of it, or (on a conflict, a value that
    cannot be stored, or a write that is no chain) none of it."""
    a = _w(None, 0)
    saver.put("t", a, expected_head=None)
    b, c = _w(a.id, 1), _w(None, 2)
    c.parent_id = b.id
    saver.put_many("t", [b, c], expected_head=a.id)
    assert [cp.id for cp in saver.list("t")] == [c.id, b.id, a.id]
    head, middle = saver.get("t"), saver.get("t", b.id)
    assert head is not None and head.values == {"log": [0, 1, 2]}
    assert middle is not None and middle.values == {"log": [0, 1]}
    d = _w(c.id, 3)
    e = _w(d.id, 4)
    with pytest.raises(SaverConflictError):
        saver.put_many("t", [d, e], expected_head=b.id)
    bad = _w(d.id, object())
    with pytest.raises(SerializationError):
        saver.put_many("t", [d, bad], expected_head=c.id)
    with pytest.raises(ValueError, match="chain"):
        saver.put_many("t", [d, _w(c.id, 5)], expected_head=c.id)
    assert [cp.id for cp in saver.list("t")] == [c.id, b.id, a.id]
    with pytest.raises(CheckpointNotFoundError):
        saver.get("t", d.id)
    saver.put_many("t", [d, e], expected_head=c.id)
    last = saver.get("t")
    assert last is not None and last.id == e.id and last.values == {"log": [0, 1, 2, 3, 4]}


async def test_async_put_many(saver: CheckpointSaver) -> None:
    """aput_many is put_many's async twin."""
    a = _w(None, 0)
    b = _w(a.id, 1)
    await saver.aput_many("t", [a, b], expected_head=None)
    assert [cp.id for cp in await saver.alist("t")] == [b.id, a.id]
