"""Every way a store reaches user code, on every store backend (issue 27, "Wiring"):
a parameter *named* ``store`` receives it, keyword-only or second positional (then it is
the store, not the config), in sync and async nodes, callable objects, entrypoints and
tasks, agent hooks and tools, and subgraphs inherit the parent's."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.store import BaseStore, MemoryStore
from graphagent.agent import ModelHook, ReactAgent, after_model, before_model
from graphagent.graph import END, START, ReplaceStrategy, Runtime, StateGraph
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FunctionChatModel
from graphagent.tools import ToolContext, tool

NS = ("wiring",)


def _graph(node: Any) -> StateGraph:
    g = StateGraph({"out": ReplaceStrategy(), "seen": ReplaceStrategy()})
    g.add_node("n", node)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    return g


def _config_ok(config: Any, store: Any) -> None:
    """The config slot got the run's config, not the store."""
    assert not isinstance(config, BaseStore)
    assert config.store is store


def _sync_forms() -> dict[str, Any]:
    def second(state, store):  # type: ignore[no-untyped-def]
        return {"out": store.get(NS, "k").value["v"]}

    def keyword_only(state, *, store):  # type: ignore[no-untyped-def]
        return {"out": store.get(NS, "k").value["v"]}

    def config_then_keyword(state, config, *, store):  # type: ignore[no-untyped-def]
        _config_ok(config, store)
        return {"out": store.get(NS, "k").value["v"]}

    def config_then_store(state, config, store):  # type: ignore[no-untyped-def]
        _config_ok(config, store)
        return {"out": store.get(NS, "k").value["v"]}

    def store_then_config(state, store, config):  # type: ignore[no-untyped-def]
        _config_ok(config, store)
        return {"out": store.get(NS, "k").value["v"]}

    def with_default(state, store=None):  # type: ignore[no-untyped-def]
        return {"out": store.get(NS, "k").value["v"]}

    def annotated(state: dict[str, Any], store: BaseStore) -> dict[str, Any]:
        return {"out": store.get(NS, "k").value["v"]}  # type: ignore[union-attr]

    def with_runtime(state, runtime: Runtime, *, store):  # type: ignore[no-untyped-def]
        assert runtime.store is store
        return {"out": store.get(NS, "k").value["v"]}

    def extra_default(state, store, scale=1):  # type: ignore[no-untyped-def]
        return {"out": store.get(NS, "k").value["v"] * scale}

    class Node:
        def __call__(self, state, config, store):  # type: ignore[no-untyped-def]
            _config_ok(config, store)
            return {"out": store.get(NS, "k").value["v"]}

    return {
        "second": second,
        "keyword_only": keyword_only,
        "config_then_keyword": config_then_keyword,
        "config_then_store": config_then_store,
        "store_then_config": store_then_config,
        "with_default": with_default,
        "annotated": annotated,
        "with_runtime": with_runtime,
        "extra_default": extra_default,
        "callable_object": Node(),
        "partial": functools.partial(extra_default, scale=1),
        "lambda": lambda state, store: {"out": store.get(NS, "k").value["v"]},
    }


def _async_forms() -> dict[str, Any]:
    async def second(state, store):  # type: ignore[no-untyped-def]
        return {"out": (await store.aget(NS, "k")).value["v"]}

    async def keyword_only(state, *, store):  # type: ignore[no-untyped-def]
        return {"out": (await store.aget(NS, "k")).value["v"]}

    async def config_then_keyword(state, config, *, store):  # type: ignore[no-untyped-def]
        _config_ok(config, store)
        return {"out": (await store.aget(NS, "k")).value["v"]}

    async def store_then_config(state, store, config):  # type: ignore[no-untyped-def]
        _config_ok(config, store)
        return {"out": (await store.aget(NS, "k")).value["v"]}

    class Node:
        async def __call__(self, state, config, store):  # type: ignore[no-untyped-def]
            _config_ok(config, store)
            return {"out": (await store.aget(NS, "k")).value["v"]}

    return {
        "second": second,
        "keyword_only": keyword_only,
        "config_then_keyword": config_then_keyword,
        "store_then_config": store_then_config,
        "callable_object": Node(),
    }


@pytest.mark.parametrize("form", list(_sync_forms()))
def test_every_sync_node_form_gets_the_store(lt_store: BaseStore, form: str) -> None:
    """Each signature is handed the compiled store (under invoke and ainvoke)."""
    lt_store.put(NS, "k", {"v": 7})
    app = _graph(_sync_forms()[form]).compile(store=lt_store)
    assert app.invoke({})["out"] == 7
    assert asyncio.run(app.ainvoke({}))["out"] == 7


@pytest.mark.parametrize("form", list(_async_forms()))
def test_every_async_node_form_gets_the_store(lt_store: BaseStore, form: str) -> None:
    """Each async signature is awaited with the store, under ainvoke and invoke."""
    lt_store.put(NS, "k", {"v": 8})
    app = _graph(_async_forms()[form]).compile(store=lt_store)
    assert asyncio.run(app.ainvoke({}))["out"] == 8
    assert app.invoke({})["out"] == 8


def test_without_a_store_every_form_gets_none() -> None:
    """A graph compiled without a store hands ``store=None``, never the config."""

    def second(state, store):  # type: ignore[no-untyped-def]
        return {"out": store is None}

    def store_then_config(state, store, config):  # type: ignore[no-untyped-def]
        return {"out": store is None and config.store is None}

    async def keyword_only(state, *, store):  # type: ignore[no-untyped-def]
        return {"out": store is None}

    for node in (second, store_then_config, keyword_only):
        assert _graph(node).compile().invoke({})["out"] is True


# ---------------------------------------------------------------- functional API


@pytest.mark.parametrize("module", ["graphagent.func", "graphagent.graph"])
def test_entrypoint_and_task_get_the_store(lt_store: BaseStore, module: str) -> None:
    """``@entrypoint(store=)``: the function's and its tasks' ``store`` parameters get it,
    keyword-only or not, sync and async; a caller's own ``store=`` wins in a task."""
    api = __import__(module, fromlist=["entrypoint", "task"])

    @api.task
    def save(key: str, store: Any) -> str:
        store.put(NS, key, {"v": key})
        return key

    @api.task
    def check(value: Any, *, store: Any) -> bool:
        return store is value

    @api.entrypoint(store=lt_store, saver=MemorySaver())
    def main(inputs: Any, *, previous: Any = None, store: Any) -> list[Any]:
        assert store is lt_store
        other = MemoryStore()
        return [
            save(inputs).result(),
            check(None, store=None).result(),
            check(other, store=other).result(),
            check(lt_store).result(),
        ]

    assert main.invoke("a", thread_id="t1") == ["a", True, True, True]

    @api.task
    async def asave(key: str, *, store: Any) -> str:
        await store.aput(NS, key, {"v": key})
        return key

    @api.entrypoint(store=lt_store)
    async def amain(inputs: Any, store: Any) -> str:
        assert store is lt_store
        got: str = await asave(inputs)
        return got

    assert asyncio.run(amain.ainvoke("b")) == "b"
    assert {i.key for i in lt_store.search(NS)} == {"a", "b"}


def test_task_store_passed_positionally_is_used(lt_store: BaseStore) -> None:
    """A task called with its store positionally keeps that store (the run's is only
    the default)."""
    from graphagent.func import entrypoint, task

    other = MemoryStore()

    @task
    def save(key: str, store: Any) -> bool:
        store.put(NS, key, {"v": 1})
        return store is other

    @entrypoint(store=lt_store)
    def main(inputs: Any) -> bool:
        result: bool = save("x", other).result()
        return result

    assert main.invoke("go") is True
    assert other.get(NS, "x") is not None and lt_store.get(NS, "x") is None


# ---------------------------------------------------------------- agents


def _agent(store: BaseStore, hooks: list[Any], tools: list[Any] | None = None) -> ReactAgent:
    def script(messages: list[Any], _tools: Any) -> AssistantMessage:
        if tools and not any(m.role == "tool" for m in messages):
            return AssistantMessage(tool_calls=(ToolCall(id="c1", name="note", arguments="{}"),))
        return AssistantMessage("done")

    return ReactAgent(model=FunctionChatModel(script), tools=tools or [], hooks=hooks, store=store)


def test_agent_hooks_of_every_form_get_the_store(lt_store: BaseStore) -> None:
    """Function hooks take ``store`` like nodes (second positional, keyword-only, after
    the config); class hooks read ``config.store``."""
    seen: list[str] = []

    @before_model
    def second(state, store):  # type: ignore[no-untyped-def]
        assert store is lt_store
        seen.append("second")

    @before_model
    def keyword_only(state, *, store):  # type: ignore[no-untyped-def]
        assert store is lt_store
        seen.append("keyword_only")

    @after_model
    def config_then_store(state, config, *, store):  # type: ignore[no-untyped-def]
        _config_ok(config, store)
        seen.append("config_then_store")

    @after_model
    async def async_second(state, store):  # type: ignore[no-untyped-def]
        await store.aput(NS, "hook", {"v": 1})
        seen.append("async_second")

    class ClassHook(ModelHook):
        def before_model(self, state: Any, config: Any) -> None:
            assert config.store is lt_store
            seen.append("class")

    hooks = [second, keyword_only, config_then_store, async_second, ClassHook()]
    assert asyncio.run(_agent(lt_store, hooks).acall("hi")).text == "done"
    assert sorted(set(seen)) == sorted(
        ["second", "keyword_only", "config_then_store", "async_second", "class"]
    )
    seen.clear()
    assert _agent(lt_store, hooks[:3] + hooks[4:]).call("hi").text == "done"
    assert len(set(seen)) == 4
    assert lt_store.get(NS, "hook") is not None


def test_agent_tool_reaches_the_store(lt_store: BaseStore) -> None:
    """A tool reads and writes the agent's store as ``ctx.store``."""

    @tool
    def note(ctx: ToolContext) -> str:
        """Write a note."""
        ctx.store.put(NS, "tool", {"v": 1})
        return "ok"

    assert _agent(lt_store, [], [note]).call("hi").text == "done"
    assert lt_store.get(NS, "tool") is not None


# ---------------------------------------------------------------- subgraphs


def test_subgraphs_inherit_the_parents_store(lt_store: BaseStore) -> None:
    """A subgraph added as a node, two levels down, and one a node invokes itself, all
    use the parent's store (a store compiled into the subgraph is the fallback only)."""
    own = MemoryStore()

    def write(state, store):  # type: ignore[no-untyped-def]
        store.put(NS, "deep", {"v": 1})
        return {"out": "deep"}

    inner = _graph(write).compile(store=own)
    middle = _graph(inner).compile()
    app = _graph(middle).compile(store=lt_store)
    assert app.invoke({})["out"] == "deep"

    leaf = _graph(lambda state, *, store: {"out": store is lt_store}).compile(store=own)

    def calls_leaf(state, config):  # type: ignore[no-untyped-def]
        return {"seen": leaf.invoke({}, config)["out"]}

    caller = _graph(calls_leaf).compile(store=lt_store)
    assert caller.invoke({})["seen"] is True
    assert lt_store.get(NS, "deep") is not None and len(own) == 0
