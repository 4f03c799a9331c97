"""LangGraph's graph tests that inject a store, translated, on every store backend.

Origin: langgraph ``libs/langgraph/tests/test_pregel.py::test_store_injected`` and
``test_pregel_async.py::test_store_injected_async`` (a node's ``store`` parameter receives
the store given to ``compile(store=...)``; many nodes of one step write one document).
LangGraph runs 500 nodes in the step; 50 keep the same shape at a tenth of the time.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

from checkpoint import MemorySaver
from checkpoint.store import BaseStore
from graphagent.graph import END, START, StateGraph

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
    """test_pregel_async.py::test_store_injected_async: the same under ainvoke, with an
    async node awaiting the store's async methods."""
    namespace = (f"foo-{uuid.uuid4().hex}", "bar")

    async def node(inputs: Any, config: Any, *, store: BaseStore) -> dict[str, int]:
        await store.aput(namespace, "doc", {"from_thread": config.thread_id})
        return {"count": 1}

    builder = StateGraph(State)
    for i in range(10):
        builder.add_node(f"node_{i}", node)
        builder.add_edge(START, f"node_{i}")
        builder.add_edge(f"node_{i}", END)
    graph = builder.compile(store=lt_store, saver=MemorySaver())
    result = asyncio.run(graph.ainvoke({"count": 0}, {"thread_id": "a1"}))
    assert result == {"count": 10}
    got = lt_store.get(namespace, "doc")
    assert got is not None and got.value == {"from_thread": "a1"}
