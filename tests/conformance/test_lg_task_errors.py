"""A failed task's error in ``StateSnapshot.tasks``, on every saver, sync and async; ported
from LangGraph's libs/langgraph/tests/test_pregel.py::test_pending_writes_resume (the
snapshot after a parallel step where one node fails: the other's result is kept, the
failing one carries its error, and resuming reruns only the failed node).

graphagent keeps the error as its ``repr`` (a string): a stored exception object would
need pickle, which the serde refuses (docs/coming-from.md)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, Command, Send, StateGraph, interrupt


class State(TypedDict):
    value: Annotated[int, operator.add]


class Failing:
    """A node that fails while ``fail`` is set; counts its calls."""

    def __init__(self, name: str, error: Exception | None, add: int) -> None:
        self.name, self.error, self.add, self.calls = name, error, add, 0

    def __call__(self, state: Any) -> dict[str, int]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return {"value": self.add}


def _graph(saver: CheckpointSaver, one: Failing, two: Failing) -> Any:
    g = StateGraph(State).add_node("one", one).add_node("two", two)
    g.add_edge(START, "one").add_edge(START, "two").add_edge("one", END).add_edge("two", END)
    return g.compile(saver=saver)


# origin: langgraph tests/test_pregel.py::test_pending_writes_resume
def test_a_failed_tasks_error_is_in_the_snapshot_and_history(saver: CheckpointSaver) -> None:
    """One of two parallel nodes fails: its task shows the error, the other its result;
    continuing reruns only the failed node and clears the error."""
    one = Failing("one", None, 2)
    two = Failing("two", ConnectionError("I'm not good"), 3)
    app = _graph(saver, one, two)
    config = thread()
    with pytest.raises(ConnectionError, match="I'm not good"):
        app.invoke({"value": 1}, config)
    state = app.get_state(config)
    assert state.values == {"value": 1} and state.next == ("two",)
    by_name = {t.name: t for t in state.tasks}
    assert by_name["one"].error is None and by_name["one"].result == {"value": 2}
    assert by_name["two"].error == 'ConnectionError("I\'m not good")'
    assert by_name["two"].result is None
    listed = next(iter(app.get_state_history(config)))
    assert {t.name: t.error for t in listed.tasks} == {
        "one": None,
        "two": 'ConnectionError("I\'m not good")',
    }
    two.error = None
    assert app.invoke(None, config) == {"value": 6}
    assert (one.calls, two.calls) == (1, 2)
    assert all(t.error is None for t in app.get_state(config).tasks)


# origin: langgraph tests/test_pregel.py::test_pending_writes_resume (async twin)
async def test_async_a_failed_tasks_error_is_in_the_snapshot(saver: CheckpointSaver) -> None:
    """ainvoke: the failed task's error is kept the same way."""
    one = Failing("one", None, 2)
    two = Failing("two", ValueError("bad input"), 3)
    app = _graph(saver, one, two)
    config = thread()
    with pytest.raises(ValueError, match="bad input"):
        await app.ainvoke({"value": 1}, config)
    state = await app.aget_state(config)
    assert {t.name: t.error for t in state.tasks} == {"one": None, "two": "ValueError('bad input')"}
    two.error = None
    assert await app.ainvoke(None, config) == {"value": 6}
    assert (one.calls, two.calls) == (1, 2)


def test_a_failed_send_tasks_error_shows_on_its_node(saver: CheckpointSaver) -> None:
    """A Send task that fails: its node's task carries the error; continuing reruns only
    that task."""
    calls: list[int] = []
    broken = {2}

    def work(arg: dict[str, int]) -> dict[str, int]:
        calls.append(arg["x"])
        if arg["x"] in broken:
            raise KeyError(arg["x"])
        return {"value": arg["x"]}

    g = StateGraph(State).add_node("work", work)
    g.add_conditional_edges(START, lambda s: [Send("work", {"x": x}) for x in (1, 2, 3)])
    app = g.add_edge("work", END).compile(saver=saver)
    config = thread()
    with pytest.raises(KeyError):
        app.invoke({"value": 0}, config)
    assert [t.error for t in app.get_state(config).tasks if t.name == "work"] == ["KeyError(2)"]
    broken.clear()
    calls.clear()
    assert app.invoke(None, config) == {"value": 6}
    assert calls == [2]


def test_an_error_is_cleared_when_the_rerun_task_pauses_instead(saver: CheckpointSaver) -> None:
    """The task fails, then on its rerun asks a question: the snapshot shows the question
    and no stale error; a resume that the node refuses keeps the question pending."""
    tries: list[int] = []

    def ask(state: Any) -> dict[str, int]:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("flaky")
        answer = interrupt("how much?")
        if not isinstance(answer, int):
            raise TypeError(f"not a number: {answer!r}")
        return {"value": answer}

    g = StateGraph(State).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    app = g.compile(saver=saver)
    config = thread()
    with pytest.raises(RuntimeError):
        app.invoke({"value": 0}, config)
    assert [t.error for t in app.get_state(config).tasks] == ["RuntimeError('flaky')"]
    app.invoke(None, config)
    state = app.get_state(config)
    assert [t.error for t in state.tasks] == [None]
    assert [i.value for i in state.interrupts] == ["how much?"]
    with pytest.raises(TypeError):
        app.invoke(Command(resume="lots"), config)
    state = app.get_state(config)
    assert [i.value for i in state.interrupts] == ["how much?"]
    assert [t.error for t in state.tasks] == ["TypeError(\"not a number: 'lots'\")"]
    assert app.invoke(Command(resume=5), config) == {"value": 5}
