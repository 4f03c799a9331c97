"""LangGraph's graph tests that inject a store, translated, on every store backend.

Origin: langgraph ``libs/langgraph/tests/test_pregel.py::test_store_injected`` and
``test_pregel_async.py::test_store_injected_async`` (a node's ``store`` parameter receives
the store given to ``compile(store=...)``; many nodes of one step write one document),
``::test_overriding_injectable_args_with_tasks`` (both files), ``test_runtime.py`` and
``test_runnable.py`` (the store through ``runtime`` and without one), and the prebuilt
agent's ``test_react_agent.py::test_prompt_with_store`` and ``::test_tool_node_inject_store``.
LangGraph runs 500 nodes in the step; 50 keep the same shape at a tenth of the time.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from checkpoint import MemorySaver
from checkpoint.store import BaseStore, MemoryStore
from graphagent.agent import ModelInterceptor, ReactAgent
from graphagent.func import entrypoint, task
from graphagent.graph import END, START, ReplaceStrategy, Runtime, StateGraph
from graphagent.messages import AssistantMessage, SystemMessage, ToolCall
from graphagent.models import FunctionChatModel
from graphagent.tools import ToolContext, tool

N = 50


class State(TypedDict):
    count: Annotated[int, operator.add]


def _graph(store: BaseStore, namespace: tuple[str, ...], doc_id: str, threads: set[str]) -> Any:
    doc = {"some-key": "this-is-a-val"}

    def make(i: int | None) -> Any:
        def node(inputs: Any, config: Any, store: BaseStore) -> dict[str, int]:
            assert isinstance(store, BaseStore)
            target = (
                namespace if i is not None and config.thread_id in threads else (f"foo_{i}", "bar")
            )
            store.put(
                target,
                doc_id,
                {**doc, "from_thread": config.thread_id, "some_val": inputs["count"]},
            )
            return {"count": 1}

        return node

    builder = StateGraph(State)
    builder.add_node("node", make(None))
    builder.add_edge(START, "node")
    builder.add_edge("node", END)  # graphagent wants a path to END named
    for i in range(N):
        builder.add_node(f"node_{i}", make(i))
        builder.add_edge(START, f"node_{i}")
        builder.add_edge(f"node_{i}", END)
    return builder.compile(store=store, saver=MemorySaver())


def test_store_injected(lt_store: BaseStore) -> None:
    """test_pregel.py::test_store_injected: every node of a wide step gets the store; one
    document is overwritten whole, by each thread in turn."""
    namespace = (f"foo-{uuid.uuid4().hex}", "bar")
    doc_id = str(uuid.uuid4())
    thread_1, thread_2 = str(uuid.uuid4()), str(uuid.uuid4())
    graph = _graph(lt_store, namespace, doc_id, {thread_1, thread_2})
    doc = {"some-key": "this-is-a-val"}

    assert graph.invoke({"count": 0}, {"thread_id": thread_1}) == {"count": N + 1}
    got = lt_store.get(namespace, doc_id)
    assert got is not None and got.value == {**doc, "from_thread": thread_1, "some_val": 0}
    assert len(lt_store.search(namespace)) == 1
    assert graph.invoke({"count": 0}, {"thread_id": thread_1}) == {"count": (N + 1) * 2}
    got = lt_store.get(namespace, doc_id)
    assert got is not None and got.value == {**doc, "from_thread": thread_1, "some_val": N + 1}
    assert graph.invoke({"count": 0}, {"thread_id": thread_2}) == {"count": N + 1}
    got = lt_store.get(namespace, doc_id)
    assert got is not None and got.value == {**doc, "from_thread": thread_2, "some_val": 0}
    assert len(lt_store.search(namespace)) == 1


def test_store_injected_async(lt_store: BaseStore) -> None:
    """test_pregel_async.py::test_store_injected_async: under ainvoke, a callable object
    whose async ``__call__(self, inputs, config, store)`` awaits the store, a wide step of
    them, then a sync node that puts and reads back in the next step."""
    namespace = (f"foo-{uuid.uuid4().hex}", "bar")

    class Node:
        def __init__(self, i: int | None = None) -> None:
            self.i = i

        async def __call__(self, inputs: Any, config: Any, store: BaseStore) -> dict[str, int]:
            assert isinstance(store, BaseStore)
            target = namespace if self.i is not None else (f"foo_{self.i}", "bar")
            await store.aput(target, "doc", {"from_thread": config.thread_id, "n": inputs["count"]})
            return {"count": 1}

    def other_node(inputs: Any, config: Any, store: BaseStore) -> dict[str, int]:
        store.put(("not", "interesting"), "key", {"val": "val"})
        item = store.get(("not", "interesting"), "key")
        assert item is not None and item.value == {"val": "val"}
        return {"count": 0}

    builder = StateGraph(State)
    builder.add_node("node", Node())
    builder.add_node("other_node", other_node)
    builder.add_edge(START, "node")
    builder.add_edge("node", "other_node")
    builder.add_edge("other_node", END)
    for i in range(10):
        builder.add_node(f"node_{i}", Node(i))
        builder.add_edge(START, f"node_{i}")
        builder.add_edge(f"node_{i}", END)
    graph = builder.compile(store=lt_store, saver=MemorySaver())
    assert asyncio.run(graph.ainvoke({"count": 0}, {"thread_id": "a1"})) == {"count": 11}
    got = lt_store.get(namespace, "doc")
    assert got is not None and got.value == {"from_thread": "a1", "n": 0}
    assert asyncio.run(graph.ainvoke({"count": 0}, {"thread_id": "a1"})) == {"count": 22}
    got = lt_store.get(namespace, "doc")
    assert got is not None and got.value == {"from_thread": "a1", "n": 11}
    assert len(lt_store.search(namespace)) == 1
    assert lt_store.get(("foo_None", "bar"), "doc") is not None


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_overriding_injectable_args_with_tasks(lt_store: BaseStore, use_async: bool) -> None:
    """test_pregel.py::test_overriding_injectable_args_with_tasks and its async twin in
    test_pregel_async.py: a task's ``store`` (and ``writer``) is the run's unless the
    caller passes one, even ``None``."""
    if use_async:

        @task
        async def afoo(store: Any, writer: Any, value: Any) -> None:
            assert store is value and writer is value

        @entrypoint(store=lt_store)
        async def amain(inputs: Any, store: BaseStore) -> str:
            assert store is lt_store
            await afoo(store=None, writer=None, value=None)
            await afoo(store="hello", writer="hello", value="hello")
            await afoo(value=lt_store, writer=lt_store)  # only the writer overridden
            return "OK"

        assert asyncio.run(amain.ainvoke({})) == "OK"
        return

    @task
    def foo(store: Any, writer: Any, value: Any) -> None:
        assert store is value and writer is value

    @entrypoint(store=lt_store)
    def main(inputs: Any, store: BaseStore) -> str:
        assert store is lt_store
        foo(store=None, writer=None, value=None).result()
        foo(store="hello", writer="hello", value="hello").result()
        foo(value=lt_store, writer=lt_store).result()
        return "OK"

    assert main.invoke({}) == "OK"


def test_runtime_carries_the_store(lt_store: BaseStore) -> None:
    """test_runtime.py::test_foreign_object_in_runtime_slot_is_coerced (its last check:
    the store reaches a node's ``runtime.store``); LangGraph's foreign-runtime slot has no
    counterpart here."""
    seen: dict[str, Any] = {}

    def echo(state: Any, runtime: Runtime) -> dict[str, str]:
        seen["store"] = runtime.store
        return {"text": state.get("text", "") + " echoed"}

    builder = StateGraph({"text": ReplaceStrategy()})
    builder.add_node("echo", echo)
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    assert builder.compile(store=lt_store).invoke({"text": "hi"}) == {"text": "hi echoed"}
    assert seen["store"] is lt_store


def test_store_parameter_without_a_store() -> None:
    """test_runnable.py::test_runnable_callable_injectable_arguments: a ``store:
    Optional[BaseStore]`` parameter gets None when the run has no store. Difference:
    LangGraph raises ValueError for a required ``store: BaseStore`` without a store;
    graphagent hands it None too, as it does to every store parameter."""

    def optional(state: Any, store: BaseStore | None) -> dict[str, Any]:
        return {"text": "none" if store is None else "store"}

    def required(state: Any, store: BaseStore) -> dict[str, Any]:
        return {"text": "none" if store is None else "store"}

    for node in (optional, required):
        builder = StateGraph({"text": ReplaceStrategy()})
        builder.add_node("n", node)
        builder.add_edge(START, "n")
        builder.add_edge("n", END)
        assert builder.compile().invoke({"text": ""}) == {"text": "none"}
        assert builder.compile(store=MemoryStore()).invoke({"text": ""}) == {"text": "store"}


def test_prompt_with_store(lt_store: BaseStore) -> None:
    """prebuilt test_react_agent.py::test_prompt_with_store: what is sent to the model is
    built from the store for the run's user (LangGraph's ``prompt(state, config, *,
    store)`` callable is a model interceptor here, reading ``request.config.store``)."""
    lt_store.put(("memories", "1"), "user_name", {"data": "User name is Alice"})
    lt_store.put(("memories", "2"), "user_name", {"data": "User name is Bob"})

    class Prompt(ModelInterceptor):
        def intercept_model(self, request: Any, handler: Any) -> AssistantMessage:
            user_id = request.config.metadata["user_id"]
            item = request.config.store.get(("memories", user_id), "user_name")
            system = SystemMessage(item.value["data"])
            return handler(request.override(messages=[system, *request.messages]))

    def echo(messages: list[Any], tools: Any) -> AssistantMessage:
        return AssistantMessage("-".join(m.text for m in messages))

    agent = ReactAgent(model=FunctionChatModel(echo), interceptors=[Prompt()], store=lt_store)
    assert agent.call("hi", config={"metadata": {"user_id": "1"}}).text == "User name is Alice-hi"
    assert agent.call("hi", config={"metadata": {"user_id": "2"}}).text == "User name is Bob-hi"


def test_tool_node_inject_store(lt_store: BaseStore) -> None:
    """prebuilt test_react_agent.py::test_tool_node_inject_store (and test_tool_node.py's):
    tools read the store the graph was given (LangGraph's ``InjectedStore()`` argument is
    ``ctx.store`` here), alongside the model's arguments."""
    lt_store.put(("test",), "test_key", {"bar": 3})

    @tool
    def tool1(some_val: int, ctx: ToolContext) -> str:
        """Tool 1.

        Args:
            some_val: a number.
        """
        return str(some_val + ctx.store.get(("test",), "test_key").value["bar"])

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        if messages[-1].role == "tool":
            return AssistantMessage(f"hi-{messages[-1].text}")
        return AssistantMessage(
            tool_calls=(ToolCall(id="some 0", name="tool1", arguments='{"some_val": 1}'),)
        )

    agent = ReactAgent(model=FunctionChatModel(script), tools=[tool1], store=lt_store)
    assert agent.call("hi").text == "hi-4"
