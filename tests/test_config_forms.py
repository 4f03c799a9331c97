"""Every user callable the engine hands the run's config takes it the way a node does:
as the second positional parameter, as a keyword-only parameter named ``config``, or not
at all (found after 04a12b6 fixed nodes only: ``def hook(state, *, config)`` and
``def router(state, *, config)`` were never handed it, and a class hook's point without
a config parameter failed with a TypeError)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.store import MemoryStore
from graphagent.agent import Hook, ReactAgent, after_agent, after_model, before_agent, before_model
from graphagent.graph import END, START, Command, ReplaceStrategy, StateGraph
from graphagent.messages import AssistantMessage
from graphagent.models import FunctionChatModel

POINTS = {
    "before_agent": before_agent,
    "before_model": before_model,
    "after_model": after_model,
    "after_agent": after_agent,
}
THREAD = "t-forms"


def _check(config: Any) -> str:
    """What a hook saw: the thread id from the config, or ``"none"``."""
    return "none" if config is None else str(config.thread_id)


def _sync_forms(seen: list[str]) -> dict[str, Any]:
    def positional(state, config):  # type: ignore[no-untyped-def]
        seen.append(_check(config))

    def other_name(state, cfg):  # type: ignore[no-untyped-def]
        seen.append(_check(cfg))

    def keyword_only(state, *, config):  # type: ignore[no-untyped-def]
        seen.append(_check(config))

    def keyword_default(state, *, config=None):  # type: ignore[no-untyped-def]
        seen.append(_check(config))

    def keyword_beside_store(state, *, store, config):  # type: ignore[no-untyped-def]
        assert isinstance(store, MemoryStore)
        seen.append(_check(config))

    def store_then_keyword(state, store, *, config):  # type: ignore[no-untyped-def]
        assert isinstance(store, MemoryStore)
        seen.append(_check(config))

    def no_config(state):  # type: ignore[no-untyped-def]
        seen.append(THREAD)

    return {
        "positional": positional,
        "other_name": other_name,
        "keyword_only": keyword_only,
        "keyword_default": keyword_default,
        "keyword_beside_store": keyword_beside_store,
        "store_then_keyword": store_then_keyword,
        "no_config": no_config,
    }


def _async_forms(seen: list[str]) -> dict[str, Any]:
    async def positional(state, config):  # type: ignore[no-untyped-def]
        seen.append(_check(config))

    async def keyword_only(state, *, config):  # type: ignore[no-untyped-def]
        seen.append(_check(config))

    async def keyword_beside_store(state, *, store, config):  # type: ignore[no-untyped-def]
        assert isinstance(store, MemoryStore)
        seen.append(_check(config))

    async def no_config(state):  # type: ignore[no-untyped-def]
        seen.append(THREAD)

    return {
        "positional": positional,
        "keyword_only": keyword_only,
        "keyword_beside_store": keyword_beside_store,
        "no_config": no_config,
    }


def _agent(hooks: list[Any]) -> ReactAgent:
    model = FunctionChatModel(lambda messages, tools: AssistantMessage("done"))
    return ReactAgent(model=model, hooks=hooks, store=MemoryStore(), saver=MemorySaver())


def _run_both(hooks: list[Any]) -> None:
    agent = _agent(hooks)
    assert agent.call("hi", thread_id=THREAD).text == "done"
    assert asyncio.run(agent.acall("hi", thread_id=THREAD)).text == "done"


@pytest.mark.parametrize("point", list(POINTS))
@pytest.mark.parametrize("form", list(_sync_forms([])))
def test_sync_function_hook_takes_config_in_every_form(point: str, form: str) -> None:
    """A sync function hook at each point gets the run's config in each form."""
    seen: list[str] = []
    _run_both([POINTS[point](_sync_forms(seen)[form])])
    assert seen == [THREAD, THREAD]


@pytest.mark.parametrize("point", list(POINTS))
@pytest.mark.parametrize("form", list(_async_forms([])))
def test_async_function_hook_takes_config_in_every_form(point: str, form: str) -> None:
    """An async function hook at each point gets the run's config in each form."""
    seen: list[str] = []
    _run_both([POINTS[point](_async_forms(seen)[form])])
    assert seen == [THREAD, THREAD]


def _class_hooks(seen: list[str]) -> dict[str, Hook]:
    class Positional(Hook):
        def before_model(self, state: Any, config: Any) -> None:
            seen.append(_check(config))

    class KeywordOnly(Hook):
        def after_model(self, state: Any, *, config: Any) -> None:  # type: ignore[override]
            seen.append(_check(config))

    class NoConfig(Hook):
        def before_agent(self, state: Any) -> None:  # type: ignore[override]
            seen.append(THREAD)

    class AsyncKeywordOnly(Hook):
        async def after_agent(self, state: Any, *, config: Any) -> None:  # type: ignore[override]
            seen.append(_check(config))

    class AsyncNoConfig(Hook):
        async def before_model(self, state: Any) -> None:  # type: ignore[override]
            seen.append(THREAD)

    return {
        "positional": Positional(),
        "keyword_only": KeywordOnly(),
        "no_config": NoConfig(),
        "async_keyword_only": AsyncKeywordOnly(),
        "async_no_config": AsyncNoConfig(),
    }


@pytest.mark.parametrize("form", list(_class_hooks([])))
def test_class_hook_points_take_config_in_every_form(form: str) -> None:
    """A class hook's overridden point may take the config positionally, keyword-only,
    or not at all, sync or async."""
    seen: list[str] = []
    _run_both([_class_hooks(seen)[form]])
    assert seen == [THREAD, THREAD]


@pytest.mark.parametrize("keyword", [False, True])
def test_async_hook_jumps_are_honoured(keyword: bool) -> None:
    """An async hook's ``Command(goto="end")`` jumps, as a sync hook's does (it was
    handed back unread and the run routed to a node named ``end``)."""
    calls: list[str] = []

    async def stop(state: Any, config: Any = None) -> Command:
        return Command(goto="end", update={"stopped": config is not None})

    async def stop_kw(state: Any, *, config: Any) -> Command:
        return Command(goto="end", update={"stopped": config is not None})

    hook = before_model(stop_kw if keyword else stop, name="stop", can_jump_to=("end",))

    def script(messages: Any, tools: Any) -> AssistantMessage:
        calls.append("model")
        return AssistantMessage("done")

    agent = ReactAgent(model=FunctionChatModel(script), hooks=[hook])
    agent.call("hi")
    asyncio.run(agent.acall("hi"))
    assert calls == []


# ---------------------------------------------------------------- routers


def _routers() -> dict[str, Any]:
    def positional(state, config):  # type: ignore[no-untyped-def]
        return "yes" if config.thread_id == THREAD else "no"

    def keyword_only(state, *, config):  # type: ignore[no-untyped-def]
        return "yes" if config.thread_id == THREAD else "no"

    def keyword_beside_store(state, *, store, config):  # type: ignore[no-untyped-def]
        return "yes" if config.thread_id == THREAD and store is not None else "no"

    def store_second(state, store):  # type: ignore[no-untyped-def]
        return "yes" if isinstance(store, MemoryStore) else "no"

    def with_runtime(state, runtime):  # type: ignore[no-untyped-def]
        return "yes" if isinstance(runtime.store, MemoryStore) else "no"

    def no_config(state):  # type: ignore[no-untyped-def]
        return "yes"

    return {
        "with_runtime": with_runtime,
        "positional": positional,
        "keyword_only": keyword_only,
        "keyword_beside_store": keyword_beside_store,
        "store_second": store_second,
        "no_config": no_config,
    }


@pytest.mark.parametrize("form", list(_routers()))
def test_router_takes_config_in_every_form(form: str) -> None:
    """A conditional edge's router gets the config (and the store) as a node does."""
    g = StateGraph({"out": ReplaceStrategy()})
    g.add_node("start", lambda state: {})
    g.add_node("yes", lambda state: {"out": "yes"})
    g.add_node("no", lambda state: {"out": "no"})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", _routers()[form], ["yes", "no"])
    g.add_edge("yes", END)
    g.add_edge("no", END)
    app = g.compile(store=MemoryStore())
    assert app.invoke({}, {"thread_id": THREAD})["out"] == "yes"
    assert asyncio.run(app.ainvoke({}, {"thread_id": THREAD}))["out"] == "yes"
