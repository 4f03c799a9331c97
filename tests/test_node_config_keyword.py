"""A node that takes the run's config as a keyword-only parameter named ``config`` gets it,
as LangGraph passes it by name (found by the store audit: ``def node(state, *, config)``
was never handed the config, with or without a store)."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver, MemoryStore
from graphagent.graph import END, START, StateGraph


def _run(node: Any, **compile: Any) -> dict[str, Any]:
    graph = StateGraph().add_node("n", node).add_edge(START, "n").add_edge("n", END)
    app = graph.compile(checkpointer=MemorySaver(), **compile)
    return dict(app.invoke({}, {"thread_id": "t-kw", "metadata": {"user": "ada"}}))


def test_keyword_only_config_is_passed() -> None:
    def node(state: Any, *, config: Any) -> dict[str, Any]:
        return {"thread": config.thread_id, "user": config.metadata["user"]}

    assert _run(node) == {"thread": "t-kw", "user": "ada"}


def test_keyword_only_config_with_a_default_is_passed() -> None:
    def node(state: Any, *, config: Any = None) -> dict[str, Any]:
        return {"thread": None if config is None else config.thread_id}

    assert _run(node) == {"thread": "t-kw"}


async def test_async_keyword_only_config_beside_a_store() -> None:
    store = MemoryStore()
    store.put(("prefs",), "ada", {"tone": "dry"})

    async def node(state: Any, *, store: Any, config: Any) -> dict[str, Any]:
        item = await store.aget(("prefs",), config.metadata["user"])
        return {"tone": item.value["tone"], "thread": config.thread_id}

    graph = StateGraph().add_node("n", node).add_edge(START, "n").add_edge("n", END)
    app = graph.compile(checkpointer=MemorySaver(), store=store)
    out = await app.ainvoke({}, {"thread_id": "t-kw", "metadata": {"user": "ada"}})
    assert dict(out) == {"tone": "dry", "thread": "t-kw"}


@pytest.mark.parametrize("second", ["cfg", "config"])
def test_a_positional_config_still_comes_second(second: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def node(state, {second}):\n    return {{'thread': {second}.thread_id}}", namespace)
    assert _run(namespace["node"]) == {"thread": "t-kw"}
