"""The functional API (``@entrypoint``, ``@task``), on every saver, sync and async.

Ported from LangGraph's libs/langgraph/tests/test_pregel.py and test_pregel_async.py (the
tests with ``entrypoint``, ``task``, ``imp_`` or ``functional`` in their names). Where they
differ from LangGraph, the test says how:

- graphagent's interrupts come back as a tuple (``{"__interrupt__": (Interrupt, ...)}``);
  LangGraph returns a list from ``invoke``.
- LangGraph's ``state.tasks[0].interrupts`` is ``state.interrupts`` here.
- LangGraph's JSON-schema and ``durability=`` parameters are not part of graphagent.
- Timing assertions (``time.sleep`` deltas) are replaced by events, so the tests prove the
  same ordering without depending on the machine's speed.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from typing import Any

import pytest

from checkpoint import MemoryStore
from checkpoint.base import CheckpointSaver
from graphagent.errors import UserError
from graphagent.func import entrypoint, task
from graphagent.graph import (
    END,
    START,
    Command,
    Interrupt,
    ReplaceStrategy,
    StateGraph,
    interrupt,
)


def _thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


def _asked(result: Any) -> list[Any]:
    """The questions of a paused run's result, checked to be interrupts."""
    assert set(result) == {"__interrupt__"}, result
    questions = list(result["__interrupt__"])
    assert all(isinstance(q, Interrupt) for q in questions)
    return [q.value for q in questions]


# origin: langgraph tests/test_pregel.py::test_imp_task
def test_imp_task(saver: CheckpointSaver) -> None:
    """Tasks run concurrently, each streams its update, and a resume replays them."""
    mapper_calls = 0

    @task()
    def mapper(input: int) -> str:
        nonlocal mapper_calls
        mapper_calls += 1
        time.sleep(input / 100)
        return str(input) * 2

    @entrypoint(checkpointer=saver)
    def graph(input: list[int]) -> list[str]:
        futures = [mapper(i) for i in input]
        mapped = [f.result() for f in futures]
        answer = interrupt("question")
        return [m + answer for m in mapped]

    thread1 = _thread()
    result = [*graph.stream([0, 1], thread1)]
    assert sorted(result[:-1], key=str) == [{"mapper": "00"}, {"mapper": "11"}]
    assert _asked(result[-1]) == ["question"]
    assert mapper_calls == 2
    assert graph.invoke(Command(resume="answer"), thread1) == ["00answer", "11answer"]
    assert mapper_calls == 2


# origin: langgraph tests/test_pregel_async.py::test_imp_task
async def test_imp_task_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_imp_task`: tasks are event-loop tasks, awaited with gather."""
    mapper_calls = 0

    @task()
    async def mapper(input: int) -> str:
        nonlocal mapper_calls
        mapper_calls += 1
        await asyncio.sleep(input / 100)
        return str(input) * 2

    @entrypoint(checkpointer=saver)
    async def graph(input: list[int]) -> list[str]:
        mapped = await asyncio.gather(*[mapper(i) for i in input])
        answer = interrupt("question")
        return [m + answer for m in mapped]

    thread1 = _thread()
    result = [c async for c in graph.astream([0, 1], thread1)]
    assert sorted(result[:-1], key=str) == [{"mapper": "00"}, {"mapper": "11"}]
    assert _asked(result[-1]) == ["question"]
    assert mapper_calls == 2
    assert await graph.ainvoke(Command(resume="answer"), thread1) == ["00answer", "11answer"]
    assert mapper_calls == 2


def _add_a() -> Any:
    """LangGraph's ``StateGraph(list[str])`` adding "a" to each item, on a dict state."""
    g = StateGraph({"items": ReplaceStrategy()})
    g.add_node("mynode", lambda s: {"items": [it + "a" for it in s["items"]]})
    return g.add_edge(START, "mynode").add_edge("mynode", END).compile()


# origin: langgraph tests/test_pregel.py::test_imp_nested
def test_imp_nested(saver: CheckpointSaver) -> None:
    """Tasks call tasks; every one streams its update; a graph runs inside the entrypoint."""
    add_a = _add_a()

    @task
    def submapper(input: int) -> str:
        return str(input)

    @task()
    def mapper(input: int) -> str:
        return submapper(input).result() * 2

    @entrypoint(checkpointer=saver)
    def graph(input: list[int]) -> list[str]:
        mapped = [f.result() for f in [mapper(i) for i in input]]
        answer = interrupt("question")
        return add_a.invoke({"items": [m + answer for m in mapped]})["items"]  # type: ignore[no-any-return]

    thread1 = _thread()
    result = [*graph.stream([0, 1], thread1)]
    assert sorted(result[:-1], key=str) == [
        {"mapper": "00"},
        {"mapper": "11"},
        {"submapper": "0"},
        {"submapper": "1"},
    ]
    assert _asked(result[-1]) == ["question"]
    assert graph.invoke(Command(resume="answer"), thread1) == ["00answera", "11answera"]


# origin: langgraph tests/test_pregel_async.py::test_imp_nested
async def test_imp_nested_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_imp_nested`."""
    add_a = _add_a()

    @task
    async def submapper(input: int) -> str:
        return str(input)

    @task()
    async def mapper(input: int) -> str:
        return (await submapper(input)) * 2

    @entrypoint(checkpointer=saver)
    async def graph(input: list[int]) -> list[str]:
        mapped = await asyncio.gather(*[mapper(i) for i in input])
        answer = interrupt("question")
        final = await add_a.ainvoke({"items": [m + answer for m in mapped]})
        return final["items"]  # type: ignore[no-any-return]

    thread1 = _thread()
    result = [c async for c in graph.astream([0, 1], thread1)]
    assert sorted(result[:-1], key=str) == [
        {"mapper": "00"},
        {"mapper": "11"},
        {"submapper": "0"},
        {"submapper": "1"},
    ]
    assert _asked(result[-1]) == ["question"]
    assert await graph.ainvoke(Command(resume="answer"), thread1) == ["00answera", "11answera"]


def _chain_tasks(is_async: bool) -> tuple[Any, Any, Any]:
    if is_async:

        @task()
        async def foo(state: dict[str, Any]) -> Any:
            return {"a": state["a"] + "foo", "b": "bar"}

        @task
        async def bar(a: str, b: str, c: str | None = None) -> Any:
            return {"a": a + b, "c": (c or "") + "bark"}

        @task
        async def baz(state: dict[str, Any]) -> Any:
            return {"a": state["a"] + "baz", "c": "something else"}

        return foo, bar, baz

    @task()
    def sfoo(state: dict[str, Any]) -> Any:
        return {"a": state["a"] + "foo", "b": "bar"}

    @task
    def sbar(a: str, b: str, c: str | None = None) -> Any:
        return {"a": a + b, "c": (c or "") + "bark"}

    @task
    def sbaz(state: dict[str, Any]) -> Any:
        return {"a": state["a"] + "baz", "c": "something else"}

    return task(sfoo.fn, name="foo"), task(sbar.fn, name="bar"), task(sbaz.fn, name="baz")


_ORDERED = [
    {"foo": {"a": "0foo", "b": "bar"}},
    {"bar": {"a": "0foobar", "c": "bark"}},
    {"baz": {"a": "0foobarbaz", "c": "something else"}},
    {"graph": {"a": "0foobarbaz", "c": "something else"}},
]


# origin: langgraph tests/test_pregel.py::test_imp_stream_order
def test_imp_stream_order(saver: CheckpointSaver) -> None:
    """Updates come in the order tasks finish, then the entrypoint's; the state is the
    return value. (LangGraph's foo returns a tuple; a dict keeps the order test the same.)"""
    foo, bar, baz = _chain_tasks(False)

    @entrypoint(checkpointer=saver)
    def graph(state: dict[str, Any]) -> Any:
        got = foo(state).result()
        return baz(bar(got["a"], got["b"]).result()).result()

    thread1 = _thread()
    assert [*graph.stream({"a": "0"}, thread1)] == _ORDERED
    assert graph.get_state(thread1).values == {"a": "0foobarbaz", "c": "something else"}


# origin: langgraph tests/test_pregel_async.py::test_imp_stream_order
async def test_imp_stream_order_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_imp_stream_order`."""
    foo, bar, baz = _chain_tasks(True)

    @entrypoint(checkpointer=saver)
    async def graph(state: dict[str, Any]) -> Any:
        got = await foo(state)
        return await baz(await bar(got["a"], got["b"]))

    thread1 = _thread()
    assert [c async for c in graph.astream({"a": "0"}, thread1)] == _ORDERED
    assert (await graph.aget_state(thread1)).values == {"a": "0foobarbaz", "c": "something else"}


# origin: langgraph tests/test_pregel_async.py::test_imp_sync_from_async
async def test_imp_sync_from_async(saver: CheckpointSaver) -> None:
    """A sync entrypoint with sync tasks streams the same under ``astream``."""
    foo, bar, baz = _chain_tasks(False)

    @entrypoint(checkpointer=saver)
    def graph(state: dict[str, Any]) -> Any:
        got = foo(state).result()
        return baz(bar(got["a"], got["b"]).result()).result()

    assert [c async for c in graph.astream({"a": "0"}, _thread())] == _ORDERED


# origin: langgraph tests/test_pregel_async.py::test_imp_task_cancel
async def test_imp_task_cancel(saver: CheckpointSaver) -> None:
    """A cancelled task keeps no result: the resumed run runs (and here cancels) it again."""
    mapper_calls = 0
    mapper_cancels = 0
    started = asyncio.Event()

    @task()
    async def mapper(input: int) -> str:
        nonlocal mapper_calls, mapper_cancels
        mapper_calls += 1
        if input == 1:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                mapper_cancels += 1
                raise
        return str(input) * 2

    @entrypoint(checkpointer=saver)
    async def graph(input: list[int]) -> list[str]:
        started.clear()
        futures = [mapper(i) for i in input]
        await started.wait()
        futures.pop().cancel()
        mapped = await asyncio.gather(*futures)
        answer = interrupt("question")
        return [m + answer for m in mapped]

    thread1 = _thread()
    events = [c async for c in graph.astream([0, 1], thread1)]
    assert events[0] == {"mapper": "00"}
    assert _asked(events[1]) == ["question"] and len(events) == 2
    assert (mapper_calls, mapper_cancels) == (2, 1)
    assert await graph.ainvoke(Command(resume="answer"), thread1) == ["00answer"]
    assert (mapper_calls, mapper_cancels) == (3, 2)


# origin: langgraph tests/test_pregel.py::test_interrupt_functional
def test_interrupt_functional(saver: CheckpointSaver) -> None:
    """interrupt() in the entrypoint itself: the task before it is not run again."""
    calls: list[str] = []

    @task
    def foo(state: dict[str, Any]) -> dict[str, Any]:
        calls.append("foo")
        return {"a": state["a"] + "foo"}

    @task
    def bar(state: dict[str, Any]) -> dict[str, Any]:
        calls.append("bar")
        return {"a": state["a"] + "bar", "b": state["b"]}

    @entrypoint(checkpointer=saver)
    def graph(inputs: dict[str, Any]) -> dict[str, Any]:
        fut_foo = foo(inputs)
        value = interrupt("Provide value for bar:")
        return bar({**fut_foo.result(), "b": value}).result()

    config = _thread()
    assert _asked(graph.invoke({"a": ""}, config)) == ["Provide value for bar:"]
    assert graph.invoke(Command(resume="bar"), config) == {"a": "foobar", "b": "bar"}
    assert calls == ["foo", "bar"]


# origin: langgraph tests/test_pregel_async.py::test_interrupt_functional
async def test_interrupt_functional_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_interrupt_functional`."""

    @task
    async def foo(state: dict[str, Any]) -> dict[str, Any]:
        return {"a": state["a"] + "foo"}

    @task
    async def bar(state: dict[str, Any]) -> dict[str, Any]:
        return {"a": state["a"] + "bar", "b": state["b"]}

    @entrypoint(checkpointer=saver)
    async def graph(inputs: dict[str, Any]) -> dict[str, Any]:
        fut_foo = foo(inputs)
        value = interrupt("Provide value for bar:")
        return await bar({**(await fut_foo), "b": value})  # type: ignore[no-any-return]

    config = _thread()
    assert _asked(await graph.ainvoke({"a": ""}, config)) == ["Provide value for bar:"]
    assert await graph.ainvoke(Command(resume="bar"), config) == {"a": "foobar", "b": "bar"}


# origin: langgraph tests/test_pregel.py::test_interrupt_task_functional
def test_interrupt_task_functional(saver: CheckpointSaver) -> None:
    """interrupt() inside a task resumes there; the same task may ask twice in one run."""

    @task
    def foo(state: dict[str, Any]) -> dict[str, Any]:
        return {"a": state["a"] + "foo"}

    @task
    def bar(state: dict[str, Any]) -> dict[str, Any]:
        value = interrupt("Provide value for bar:")
        return {"a": state["a"] + value}

    @entrypoint(checkpointer=saver)
    def graph(inputs: dict[str, Any]) -> dict[str, Any]:
        return bar(foo(inputs).result()).result()

    config = _thread()
    assert _asked(graph.invoke({"a": ""}, config)) == ["Provide value for bar:"]
    assert graph.invoke(Command(resume="bar"), config) == {"a": "foobar"}

    @entrypoint(checkpointer=saver)
    def twice(inputs: dict[str, Any]) -> dict[str, Any]:
        return bar(bar(foo(inputs).result()).result()).result()

    config = _thread()
    assert _asked(twice.invoke({"a": ""}, config)) == ["Provide value for bar:"]
    assert _asked(twice.invoke(Command(resume="bar"), config)) == ["Provide value for bar:"]
    assert twice.invoke(Command(resume="baz"), config) == {"a": "foobarbaz"}


# origin: langgraph tests/test_pregel_async.py::test_interrupt_task_functional
async def test_interrupt_task_functional_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_interrupt_task_functional`."""

    @task
    async def foo(state: dict[str, Any]) -> dict[str, Any]:
        return {"a": state["a"] + "foo"}

    @task
    async def bar(state: dict[str, Any]) -> dict[str, Any]:
        value = interrupt("Provide value for bar:")
        return {"a": state["a"] + value}

    @entrypoint(checkpointer=saver)
    async def twice(inputs: dict[str, Any]) -> dict[str, Any]:
        return await bar(await bar(await foo(inputs)))  # type: ignore[no-any-return]

    config = _thread()
    assert _asked(await twice.ainvoke({"a": ""}, config)) == ["Provide value for bar:"]
    assert _asked(await twice.ainvoke(Command(resume="bar"), config)) == ["Provide value for bar:"]
    assert await twice.ainvoke(Command(resume="baz"), config) == {"a": "foobarbaz"}


# origin: langgraph tests/test_pregel.py::test_falsy_return_from_task
def test_falsy_return_from_task(saver: CheckpointSaver) -> None:
    """A task that returned ``False`` is replayed as ``False``, not run again. (LangGraph
    checks the debug stream's payloads; the replay is what that test guards.)"""
    calls = 0

    @task
    def falsy_task() -> bool:
        nonlocal calls
        calls += 1
        return False

    @entrypoint(checkpointer=saver)
    def graph(state: dict[str, Any]) -> Any:
        result = falsy_task().result()
        return [result, interrupt("test")]

    config = _thread()
    assert _asked(graph.invoke({"a": 5}, config)) == ["test"]
    assert graph.invoke(Command(resume="ok"), config) == [False, "ok"]
    assert calls == 1


def _doubling(calls: list[int]) -> Any:
    @task
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    return double


# origin: langgraph tests/test_pregel.py::test_multiple_interrupts_functional
def test_multiple_interrupts_functional(saver: CheckpointSaver) -> None:
    """Interrupts between tasks in a loop: each resume replays every task before it."""
    calls: list[int] = []
    double = _doubling(calls)

    @entrypoint(checkpointer=saver)
    def graph(state: dict[str, Any]) -> dict[str, Any]:
        values: list[Any] = []
        for idx in [1, 2, 3]:
            values.extend([double(idx).result(), interrupt({"a": "boo"})])
        return {"values": values}

    config = _thread()
    graph.invoke({}, config)
    graph.invoke(Command(resume="a"), config)
    graph.invoke(Command(resume="b"), config)
    result = graph.invoke(Command(resume="c"), config)
    assert result == {"values": [2, "a", 4, "b", 6, "c"]}
    assert calls == [1, 2, 3]


# origin: langgraph tests/test_pregel_async.py::test_multiple_interrupts_functional
async def test_multiple_interrupts_functional_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_multiple_interrupts_functional` (sync tasks, async entrypoint)."""
    calls: list[int] = []
    double = _doubling(calls)

    @entrypoint(checkpointer=saver)
    async def graph(state: dict[str, Any]) -> dict[str, Any]:
        values: list[Any] = []
        for idx in [1, 2, 3]:
            values.extend([await double(idx), interrupt({"a": "boo"})])
        return {"values": values}

    config = _thread()
    await graph.ainvoke({}, config)
    await graph.ainvoke(Command(resume="a"), config)
    await graph.ainvoke(Command(resume="b"), config)
    result = await graph.ainvoke(Command(resume="c"), config)
    assert result == {"values": [2, "a", 4, "b", 6, "c"]}
    assert calls == [1, 2, 3]


# origin: langgraph tests/test_pregel.py::test_task_before_interrupt_resume
def test_task_before_interrupt_resume(saver: CheckpointSaver) -> None:
    """A task before two asking tasks (all defined inside the entrypoint): each resume
    answers the next question."""

    @entrypoint(checkpointer=saver)
    def workflow(number_of_topics: int) -> dict[str, Any]:
        @task
        def setup() -> int:
            return number_of_topics

        @task
        def ask(question: str) -> str:
            return interrupt(question)  # type: ignore[no-any-return]

        answers = []
        for i in range(setup().result()):
            answers.append(ask(f"Whats the answer for topic {i + 1}?").result())
        return {"answers": answers}

    config = _thread()
    assert _asked(workflow.invoke(2, config=config)) == ["Whats the answer for topic 1?"]
    assert _asked(workflow.invoke(Command(resume="answer1"), config=config)) == [
        "Whats the answer for topic 2?"
    ]
    result = workflow.invoke(Command(resume="answer2"), config=config)
    assert result == {"answers": ["answer1", "answer2"]}


# origin: langgraph tests/test_pregel_async.py::test_task_before_interrupt_resume
async def test_task_before_interrupt_resume_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_task_before_interrupt_resume`."""

    @entrypoint(checkpointer=saver)
    async def workflow(number_of_topics: int) -> dict[str, Any]:
        @task
        async def setup() -> int:
            return number_of_topics

        @task
        async def ask(question: str) -> str:
            return interrupt(question)  # type: ignore[no-any-return]

        answers = []
        for i in range(await setup()):
            answers.append(await ask(f"Whats the answer for topic {i + 1}?"))
        return {"answers": answers}

    config = _thread()
    assert _asked(await workflow.ainvoke(2, config=config)) == ["Whats the answer for topic 1?"]
    assert _asked(await workflow.ainvoke(Command(resume="answer1"), config=config)) == [
        "Whats the answer for topic 2?"
    ]
    result = await workflow.ainvoke(Command(resume="answer2"), config=config)
    assert result == {"answers": ["answer1", "answer2"]}


# origin: langgraph tests/test_pregel.py::test_multiple_tasks_before_interrupt_resume
def test_multiple_tasks_before_interrupt_resume(saver: CheckpointSaver) -> None:
    """Two tasks in a row, then a task that asks: the resume returns both results."""

    @task
    def step_a(x: int) -> int:
        return x + 1

    @task
    def step_b(x: int) -> int:
        return x * 2

    @task
    def ask(question: str) -> str:
        return interrupt(question)  # type: ignore[no-any-return]

    @entrypoint(checkpointer=saver)
    def workflow(inputs: dict[str, Any]) -> dict[str, Any]:
        b = step_b(step_a(inputs["x"]).result()).result()
        return {"computed": b, "answer": ask(f"Result so far is {b}. What next?").result()}

    config = _thread()
    assert _asked(workflow.invoke({"x": 5}, config=config)) == ["Result so far is 12. What next?"]
    result = workflow.invoke(Command(resume="continue"), config=config)
    assert result == {"computed": 12, "answer": "continue"}


class _CountingWrites:
    """Counts a saver's ``put_writes`` calls per pending-write slot."""

    def __init__(self, saver: CheckpointSaver) -> None:
        self.slots: list[str] = []
        self.saver = saver
        self.put_writes = saver.put_writes

    def __enter__(self) -> _CountingWrites:
        def spy(thread_id: str, checkpoint_id: str, writes: Any) -> None:
            self.slots.extend(w.task for w in writes)
            self.put_writes(thread_id, checkpoint_id, writes)

        self.saver.put_writes = spy  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.saver.put_writes


# origin: langgraph tests/test_pregel.py::test_no_redundant_put_writes_for_cached_task
def test_no_redundant_put_writes_for_replayed_task(saver: CheckpointSaver) -> None:
    """A replayed task stores nothing on resume: only the asking task's result is written."""

    @task
    def setup(x: int) -> int:
        return x

    @task
    def ask(question: str) -> str:
        return interrupt(question)  # type: ignore[no-any-return]

    @entrypoint(checkpointer=saver)
    def workflow(x: int) -> dict[str, Any]:
        n = setup(x).result()
        return {"answer": ask(f"q{n}").result()}

    config = _thread()
    assert _asked(workflow.invoke(1, config=config)) == ["q1"]
    with _CountingWrites(saver) as spy:
        assert workflow.invoke(Command(resume="ans"), config=config) == {"answer": "ans"}
    assert [s.rsplit("|", 1)[-1] for s in spy.slots] == ["~1"]  # ask's result, once


# origin: langgraph tests/test_pregel.py::test_sync_streaming_with_functional_api
def test_sync_streaming_with_functional_api() -> None:
    """Updates arrive as tasks finish, not at the end: the second task waits until the
    reader has seen the first one's update (LangGraph measures arrival times)."""
    seen_first = threading.Event()

    @task()
    def slow(n: int) -> dict[str, Any]:
        if n == 2:
            assert seen_first.wait(10), "the first update was not streamed before the end"
        return {"n": n}

    @entrypoint()
    def graph(inputs: dict[str, Any]) -> list[Any]:
        return [slow(1).result(), slow(2).result()]

    chunks = []
    for chunk in graph.stream({}):
        chunks.append(chunk)
        seen_first.set()
    assert chunks == [{"slow": {"n": 1}}, {"slow": {"n": 2}}, {"graph": [{"n": 1}, {"n": 2}]}]


# origin: langgraph tests/test_pregel_async.py::test_async_streaming_with_functional_api
async def test_async_streaming_with_functional_api() -> None:
    """Async :func:`test_sync_streaming_with_functional_api`."""
    seen_first = asyncio.Event()

    @task()
    async def slow(n: int) -> dict[str, Any]:
        if n == 2:
            await asyncio.wait_for(seen_first.wait(), 10)
        return {"n": n}

    @entrypoint()
    async def graph(inputs: dict[str, Any]) -> list[Any]:
        return [await slow(1), await slow(2)]

    chunks = []
    async for chunk in graph.astream({}):
        chunks.append(chunk)
        seen_first.set()
    assert chunks == [{"slow": {"n": 1}}, {"slow": {"n": 2}}, {"graph": [{"n": 1}, {"n": 2}]}]


# origin: langgraph tests/test_pregel.py::test_entrypoint_without_checkpointer
def test_entrypoint_without_checkpointer() -> None:
    """Without a saver a thread keeps nothing: ``previous`` is always ``None``."""

    @entrypoint()
    def foo(inputs: Any) -> Any:
        return inputs

    config = _thread()
    assert foo.invoke({"a": "1"}, config) == {"a": "1"}

    @entrypoint()
    def bar(inputs: Any, *, previous: Any) -> Any:
        return {"previous": previous, "current": inputs}

    assert bar.invoke({"a": "1"}, config) == {"current": {"a": "1"}, "previous": None}
    assert bar.invoke({"a": "1"}, config) == {"current": {"a": "1"}, "previous": None}


# origin: langgraph tests/test_pregel_async.py::test_async_entrypoint_without_checkpointer
async def test_async_entrypoint_without_checkpointer() -> None:
    """Async :func:`test_entrypoint_without_checkpointer`."""

    @entrypoint()
    async def bar(inputs: Any, *, previous: Any) -> Any:
        return {"previous": previous, "current": inputs}

    config = _thread()
    assert await bar.ainvoke({"a": "1"}, config) == {"current": {"a": "1"}, "previous": None}
    assert await bar.ainvoke({"a": "1"}, config) == {"current": {"a": "1"}, "previous": None}


_NESTED = {
    "current": {"a": "3"},
    "previous": {
        "current": {"a": "2"},
        "previous": {"current": {"a": "1"}, "previous": None},
    },
}


# origin: langgraph tests/test_pregel.py::test_entrypoint_stateful
def test_entrypoint_stateful(saver: CheckpointSaver) -> None:
    """``previous`` is what the thread's last run returned; ``stream`` shows the return
    value under the entrypoint's name."""
    states = []

    @entrypoint(checkpointer=saver)
    def foo(inputs: Any, *, previous: Any) -> Any:
        states.append(previous)
        return {"previous": previous, "current": inputs}

    config = _thread()
    assert foo.invoke({"a": "1"}, config) == {"current": {"a": "1"}, "previous": None}
    foo.invoke({"a": "2"}, config)
    assert foo.invoke({"a": "3"}, config) == _NESTED
    assert states == [None, _NESTED["previous"]["previous"], _NESTED["previous"]]  # type: ignore[index]
    items = list(foo.stream({"a": "1"}, _thread()))
    assert items == [{"foo": {"current": {"a": "1"}, "previous": None}}]


# origin: langgraph tests/test_pregel_async.py::test_entrypoint_stateful
async def test_entrypoint_stateful_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_entrypoint_stateful`."""

    @entrypoint(checkpointer=saver)
    async def foo(inputs: Any, *, previous: Any) -> Any:
        return {"previous": previous, "current": inputs}

    config = _thread()
    await foo.ainvoke({"a": "1"}, config)
    await foo.ainvoke({"a": "2"}, config)
    assert await foo.ainvoke({"a": "3"}, config) == _NESTED
    items = [c async for c in foo.astream({"a": "1"}, _thread())]
    assert items == [{"foo": {"current": {"a": "1"}, "previous": None}}]


# origin: langgraph tests/test_pregel.py::test_entrypoint_stateful_update_state
def test_entrypoint_stateful_update_state(saver: CheckpointSaver) -> None:
    """``update_state`` sets what the next run gets as ``previous``."""
    states = []

    @entrypoint(checkpointer=saver)
    def foo(inputs: Any, *, previous: Any) -> Any:
        states.append(previous)
        return {"previous": previous, "current": inputs}

    config = _thread()
    foo.update_state(config, {"a": "-1"})
    assert foo.invoke({"a": "1"}, config) == {"current": {"a": "1"}, "previous": {"a": "-1"}}
    assert foo.invoke({"a": "2"}, config) == {
        "current": {"a": "2"},
        "previous": {"current": {"a": "1"}, "previous": {"a": "-1"}},
    }
    foo.update_state(config, {"a": "3"})
    assert list(foo.stream({"a": "1"}, config)) == [
        {"foo": {"current": {"a": "1"}, "previous": {"a": "3"}}}
    ]
    assert states[0] == {"a": "-1"} and states[-1] == {"a": "3"}


# origin: langgraph tests/test_pregel_async.py::test_entrypoint_stateful_update_state
async def test_entrypoint_stateful_update_state_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_entrypoint_stateful_update_state`."""

    @entrypoint(checkpointer=saver)
    async def foo(inputs: Any, *, previous: Any) -> Any:
        return {"previous": previous, "current": inputs}

    config = _thread()
    await foo.aupdate_state(config, {"a": "-1"})
    assert await foo.ainvoke({"a": "1"}, config) == {
        "current": {"a": "1"},
        "previous": {"a": "-1"},
    }


# origin: langgraph tests/test_pregel.py::test_entrypoint_from_sync_generator and
# tests/test_pregel_async.py::test_entrypoint_from_async_generator (LangGraph raises
# NotImplementedError; graphagent's error says what to do instead)
def test_entrypoint_from_generators() -> None:
    """A generator function (sync or async) cannot be an entrypoint."""
    with pytest.raises(UserError, match="generator"):

        @entrypoint()
        def foo(inputs: Any, previous: Any = None) -> Any:
            yield "a"

    with pytest.raises(UserError, match="generator"):

        @entrypoint()
        async def bar(inputs: Any) -> Any:
            yield "a"


def _sum_and_product() -> tuple[Any, Any]:
    @entrypoint()
    def add(inputs: tuple[int, int]) -> int:
        a, b = inputs
        return a + b

    @task
    def multiply_task(a: int, b: int) -> int:
        return a * b

    @entrypoint()
    def multiply(inputs: tuple[int, int]) -> int:
        return multiply_task(*inputs).result()

    return add, multiply


# origin: langgraph tests/test_pregel.py::test_multiple_subgraphs_functional
def test_multiple_subgraphs_functional(saver: CheckpointSaver) -> None:
    """Entrypoints called from a task of another entrypoint run nested in it."""
    add, multiply = _sum_and_product()

    @task
    def call_same_subgraph(a: int, b: int) -> int:
        return add.invoke([add.invoke([a, b]), 10])  # type: ignore[no-any-return]

    @entrypoint(checkpointer=saver)
    def parent_call_same_subgraph(inputs: list[int]) -> int:
        return call_same_subgraph(*inputs).result()

    assert parent_call_same_subgraph.invoke([2, 3], _thread()) == 15

    @task
    def call_multiple_subgraphs(a: int, b: int) -> list[int]:
        return [add.invoke([a, b]), multiply.invoke([a, b])]

    @entrypoint(checkpointer=saver)
    def parent_call_multiple_subgraphs(inputs: list[int]) -> list[int]:
        return call_multiple_subgraphs(*inputs).result()

    assert parent_call_multiple_subgraphs.invoke([2, 3], _thread()) == [5, 6]


# origin: langgraph tests/test_pregel_async.py::test_multiple_subgraphs_functional
async def test_multiple_subgraphs_functional_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_multiple_subgraphs_functional`."""
    add, multiply = _sum_and_product()

    @task
    async def call_multiple_subgraphs(a: int, b: int) -> list[int]:
        return [await add.ainvoke([a, b]), await multiply.ainvoke([a, b])]

    @entrypoint(checkpointer=saver)
    async def parent(inputs: list[int]) -> list[int]:
        return await call_multiple_subgraphs(*inputs)  # type: ignore[no-any-return]

    assert await parent.ainvoke([2, 3], _thread()) == [5, 6]


def _pair_graphs() -> tuple[Any, Any]:
    add = StateGraph({k: ReplaceStrategy() for k in ("a", "b", "result")})
    add.add_node("add", lambda s: {"result": s["a"] + s["b"]})
    mul = StateGraph({k: ReplaceStrategy() for k in ("a", "b", "result")})
    mul.add_node("multiply", lambda s: {"result": s["a"] * s["b"]})
    return (
        add.add_edge(START, "add").add_edge("add", END).compile(),
        mul.add_edge(START, "multiply").add_edge("multiply", END).compile(),
    )


# origin: langgraph tests/test_pregel.py::test_multiple_subgraphs_mixed_entrypoint
def test_multiple_subgraphs_mixed_entrypoint(saver: CheckpointSaver) -> None:
    """State graphs called from a task of an entrypoint."""
    add_subgraph, multiply_subgraph = _pair_graphs()

    @task
    def call_same_subgraph(a: int, b: int) -> int:
        result = add_subgraph.invoke({"a": a, "b": b})["result"]
        return add_subgraph.invoke({"a": result, "b": 10})["result"]  # type: ignore[no-any-return]

    @entrypoint(checkpointer=saver)
    def parent_call_same_subgraph(inputs: list[int]) -> int:
        return call_same_subgraph(*inputs).result()

    assert parent_call_same_subgraph.invoke([2, 3], _thread()) == 15

    @task
    def call_multiple_subgraphs(a: int, b: int) -> list[int]:
        return [
            add_subgraph.invoke({"a": a, "b": b})["result"],
            multiply_subgraph.invoke({"a": a, "b": b})["result"],
        ]

    @entrypoint(checkpointer=saver)
    def parent_call_multiple_subgraphs(inputs: list[int]) -> list[int]:
        return call_multiple_subgraphs(*inputs).result()

    assert parent_call_multiple_subgraphs.invoke([2, 3], _thread()) == [5, 6]


# origin: langgraph tests/test_pregel.py::test_multiple_subgraphs_mixed_state_graph
def test_multiple_subgraphs_mixed_state_graph(saver: CheckpointSaver) -> None:
    """Entrypoints called from a node of a state graph."""
    add, multiply = _sum_and_product()

    def call_multiple_subgraphs(state: Any) -> dict[str, Any]:
        return {
            "add_result": add.invoke([state["a"], state["b"]]),
            "multiply_result": multiply.invoke([state["a"], state["b"]]),
        }

    g = StateGraph({k: ReplaceStrategy() for k in ("a", "b", "add_result", "multiply_result")})
    g.add_node("call_multiple_subgraphs", call_multiple_subgraphs)
    g.add_edge(START, "call_multiple_subgraphs").add_edge("call_multiple_subgraphs", END)
    parent = g.compile(saver)
    assert parent.invoke({"a": 2, "b": 3}, _thread()) == {
        "a": 2,
        "b": 3,
        "add_result": 5,
        "multiply_result": 6,
    }


# origin: langgraph tests/test_pregel.py::test_entrypoint_output_schema_with_return_and_save
def test_entrypoint_final_takes_two_parameters() -> None:
    """``entrypoint.final[value type, save type]``; one parameter is refused. (LangGraph
    also checks the output JSON schema, which graphagent does not make.)"""
    assert entrypoint.final[str, int](value="foo", save=1).value == "foo"
    with pytest.raises(TypeError):
        entrypoint.final[int]  # type: ignore[misc]


# origin: langgraph tests/test_pregel.py::test_entrypoint_with_return_and_save
def test_entrypoint_with_return_and_save(saver: CheckpointSaver) -> None:
    """``entrypoint.final``: the caller gets ``value``, the next run gets ``save``."""
    previous_ = None

    @entrypoint(checkpointer=saver)
    def foo(msg: str, *, previous: Any) -> entrypoint.final[int, list[str]]:
        nonlocal previous_
        previous_ = previous
        previous = previous or []
        return entrypoint.final(value=len(previous), save=[*previous, msg])

    config = _thread()
    assert foo.invoke("hello", config) == 0
    assert previous_ is None
    assert foo.invoke("goodbye", config) == 1
    assert previous_ == ["hello"]
    assert foo.invoke("definitely", config) == 2
    assert previous_ == ["hello", "goodbye"]


# origin: langgraph tests/test_pregel.py::test_overriding_injectable_args_with_tasks
def test_overriding_injectable_args_with_tasks() -> None:
    """A task's ``store``/``writer`` parameters take what the caller passes over the run's;
    the entrypoint's ``store`` parameter gets ``entrypoint(store=...)``."""
    store = MemoryStore()
    seen: list[Any] = []

    @task
    def foo(store: Any, writer: Any, value: Any) -> None:
        assert store is value
        assert writer is value

    @task
    def injected(store: Any = None) -> None:
        seen.append(store)

    @entrypoint(store=store)
    def main(inputs: Any, store: Any) -> str:
        assert store is not None
        foo(store=None, writer=None, value=None).result()
        foo(store="hello", writer="hello", value="hello").result()
        injected().result()
        return "OK"

    assert main.invoke({}) == "OK"
    assert seen == [store]


# origin: langgraph tests/test_pregel_async.py::test_overriding_injectable_args_with_async_task
async def test_overriding_injectable_args_with_async_task() -> None:
    """Async :func:`test_overriding_injectable_args_with_tasks`."""
    store = MemoryStore()

    @task
    async def foo(store: Any, writer: Any, value: Any) -> None:
        assert store is value
        assert writer is value

    @entrypoint(store=store)
    async def main(inputs: Any, store: Any) -> str:
        assert store is not None
        await foo(store=None, writer=None, value=None)
        await foo(store="hello", writer="hello", value="hello")
        return "OK"

    assert await main.ainvoke({}) == "OK"


class _Foo:
    def foo(self, value: str) -> str:
        return value + "foo"


class _Qux:
    def __call__(self, value: str) -> str:
        return value + "|qux"


def baz(update: str, value: str) -> str:
    return value + f"|{update}"


_NAMED = [
    {"custom_foo": "foo"},
    {"other_foo": "foo"},
    {"custom_bar": "foo|bar"},
    {"baz": "foo|bar|baz"},
    {"custom_baz": "foo|bar|baz|custom_baz"},
    {"qux": "foo|bar|baz|custom_baz|qux"},
    {"workflow": "foo|bar|baz|custom_baz|qux"},
]


# origin: langgraph tests/test_pregel.py::test_named_tasks_functional
def test_named_tasks_functional() -> None:
    """Tasks from methods, partials and callable objects, named or not."""
    f = _Foo()
    foo = task(f.foo, name="custom_foo")
    other_foo = task(f.foo, name="other_foo")

    @task(name="custom_bar")
    def bar(value: str) -> str:
        return value + "|bar"

    baz_task = task(functools.partial(baz, "baz"))
    custom_baz_task = task(functools.partial(baz, "custom_baz"), name="custom_baz")
    qux_task = task(_Qux(), name="qux")

    @entrypoint()
    def workflow(inputs: str) -> str:
        foo_result = foo(inputs).result()
        other_foo(inputs).result()
        fut_baz = baz_task(bar(foo_result).result())
        return qux_task(custom_baz_task(fut_baz.result()).result()).result()

    assert list(workflow.stream("", stream_mode="updates")) == _NAMED


# origin: langgraph tests/test_pregel_async.py::test_named_tasks_functional
async def test_named_tasks_functional_async() -> None:
    """Async :func:`test_named_tasks_functional` (sync tasks awaited)."""
    f = _Foo()
    foo = task(f.foo, name="custom_foo")
    other_foo = task(f.foo, name="other_foo")

    @task(name="custom_bar")
    async def bar(value: str) -> str:
        return value + "|bar"

    baz_task = task(functools.partial(baz, "baz"))
    custom_baz_task = task(functools.partial(baz, "custom_baz"), name="custom_baz")
    qux_task = task(_Qux(), name="qux")

    @entrypoint()
    async def workflow(inputs: str) -> str:
        foo_result = await foo(inputs)
        await other_foo(inputs)
        baz_result = await baz_task(await bar(foo_result))
        return await qux_task(await custom_baz_task(baz_result))  # type: ignore[no-any-return]

    assert [c async for c in workflow.astream("", stream_mode="updates")] == _NAMED


# origin: langgraph tests/test_pregel.py::test_imp_exception
def test_imp_exception(saver: CheckpointSaver) -> None:
    """A task's exception reaches the caller, which may catch it and go on; a failed
    call streams no update."""

    @task()
    def my_task(number: int) -> int:
        return number * 2

    @task()
    def task_with_exception(number: int) -> int:
        raise Exception("This is a test exception")

    @entrypoint(checkpointer=saver)
    def my_workflow(number: int) -> str:
        my_task(number).result()
        try:
            task_with_exception(number).result()
        except Exception as e:
            assert str(e) == "This is a test exception"
        my_task(number).result()
        return "done"

    thread1 = _thread()
    assert my_workflow.invoke(1, thread1) == "done"
    assert list(my_workflow.stream(1, thread1)) == [
        {"my_task": 2},
        {"my_task": 2},
        {"my_workflow": "done"},
    ]


def _participants() -> Any:
    @task
    async def add_participant(name: str) -> str:
        feedback = interrupt(f"Hey do you want to add {name}?")
        if feedback is False:
            return f"The user changed their mind and doesn't want to add {name}!"
        if feedback is True:
            return f"Added {name}!"
        raise ValueError("Invalid feedback")

    return add_participant


# origin: langgraph tests/test_pregel_async.py::test_handles_multiple_interrupts_from_tasks
async def test_handles_multiple_interrupts_from_tasks(saver: CheckpointSaver) -> None:
    """Two tasks ask one after the other; the thread's state holds the open question."""
    add_participant = _participants()

    @entrypoint(checkpointer=saver)
    async def program(_state: Any) -> list[str]:
        return [await add_participant("James"), await add_participant("Will")]

    config = _thread()
    result = await program.ainvoke("this is ignored", config=config)
    assert _asked(result) == ["Hey do you want to add James?"]
    state = await program.aget_state(config=config)
    assert [i.value for i in state.interrupts] == ["Hey do you want to add James?"]
    result = await program.ainvoke(Command(resume=True), config=config)
    assert _asked(result) == ["Hey do you want to add Will?"]
    state = await program.aget_state(config=config)
    assert [i.value for i in state.interrupts] == ["Hey do you want to add Will?"]
    result = await program.ainvoke(Command(resume=True), config=config)
    assert result == ["Added James!", "Added Will!"]


# origin: langgraph tests/test_pregel_async.py::test_interrupts_in_tasks_surfaced_once
async def test_interrupts_in_tasks_surfaced_once(saver: CheckpointSaver) -> None:
    """Each pause streams its question once."""
    add_participant = _participants()

    @entrypoint(checkpointer=saver)
    async def program(_state: Any) -> list[str]:
        return [await add_participant("James"), await add_participant("Will")]

    config = _thread()
    events = [e async for e in program.astream("this is ignored", config=config)]
    assert len([e for e in events if "__interrupt__" in e]) == 1
    events = [e async for e in program.astream(Command(resume=True), config=config)]
    assert len([e for e in events if "__interrupt__" in e]) == 1
    state = await program.aget_state(config=config)
    assert [i.value for i in state.interrupts] == ["Hey do you want to add Will?"]
    assert await program.ainvoke(Command(resume=True), config=config) == [
        "Added James!",
        "Added Will!",
    ]


def _cached_doubling(calls: list[int]) -> Any:
    from graphagent.graph import CachePolicy

    @task(cache_policy=CachePolicy())
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    return double


_CACHED_VALUES = {"values": [2, "a", 2, "b", 4, "c", 4, "d", 6, "e", 6, "f"]}


# origin: langgraph tests/test_pregel.py::test_multiple_interrupts_functional_cache
def test_multiple_interrupts_functional_cache(saver: CheckpointSaver) -> None:
    """A cached task called twice with the same input between interrupts runs once per
    input, across threads too, until its cache is cleared."""
    from checkpoint.cache import MemoryCache

    cache = MemoryCache()
    calls: list[int] = []
    double = _cached_doubling(calls)

    @entrypoint(checkpointer=saver, cache=cache)
    def graph(state: dict[str, Any]) -> dict[str, Any]:
        values: list[Any] = []
        for idx in [1, 1, 2, 2, 3, 3]:
            values.extend([double(idx).result(), interrupt({"a": "boo"})])
        return {"values": values}

    def run_thread() -> Any:
        config = _thread()
        graph.invoke({}, config)
        for answer in "abcde":
            graph.invoke(Command(resume=answer), config)
        return graph.invoke(Command(resume="f"), config)

    assert run_thread() == _CACHED_VALUES
    assert len(calls) == 3
    assert run_thread() == _CACHED_VALUES  # all cached now
    assert len(calls) == 3
    double.clear_cache(cache)
    assert run_thread() == _CACHED_VALUES
    assert len(calls) == 6


# origin: langgraph tests/test_pregel_async.py::test_multiple_interrupts_functional_cache
async def test_multiple_interrupts_functional_cache_async(saver: CheckpointSaver) -> None:
    """Async :func:`test_multiple_interrupts_functional_cache`."""
    from checkpoint.cache import MemoryCache

    cache = MemoryCache()
    calls: list[int] = []
    double = _cached_doubling(calls)

    @entrypoint(checkpointer=saver, cache=cache)
    async def graph(state: dict[str, Any]) -> dict[str, Any]:
        values: list[Any] = []
        for idx in [1, 1, 2, 2, 3, 3]:
            values.extend([await double(idx), interrupt({"a": "boo"})])
        return {"values": values}

    async def run_thread() -> Any:
        config = _thread()
        await graph.ainvoke({}, config)
        for answer in "abcde":
            await graph.ainvoke(Command(resume=answer), config)
        return await graph.ainvoke(Command(resume="f"), config)

    assert await run_thread() == _CACHED_VALUES
    assert await run_thread() == _CACHED_VALUES
    assert len(calls) == 3
    await double.aclear_cache(cache)
    assert await run_thread() == _CACHED_VALUES
    assert len(calls) == 6
