"""A store reaches nodes, hooks, tools and subgraphs; agents remember across threads."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from checkpoint import MemorySaver, MemoryStore
from graphagent.agent import MemoryRecallInterceptor, ReactAgent, before_model, memory_tools
from graphagent.graph import END, START, ReplaceStrategy, StateGraph
from graphagent.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage
from graphagent.models import FunctionChatModel
from graphagent.tools import ToolContext, tool


def _graph(node: Any) -> StateGraph:
    g = StateGraph({"out": ReplaceStrategy()})
    g.add_node("n", node)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    return g


def test_node_parameter_named_store_receives_it() -> None:
    """Keyword-only, second positional, or after config: a parameter named store gets it."""
    store = MemoryStore()
    store.put(("s",), "k", {"v": 7})

    def keyword_only(state: Any, *, store: Any) -> dict[str, Any]:
        return {"out": store.get(("s",), "k").value["v"]}

    def second(state: Any, store: Any) -> dict[str, Any]:
        return {"out": store.get(("s",), "k").value["v"] + 1}

    def both(state: Any, config: Any, store: Any) -> dict[str, Any]:
        assert config.store is store
        return {"out": store.get(("s",), "k").value["v"] + 2}

    def plain(state: Any, config: Any) -> dict[str, Any]:
        return {"out": config.store.get(("s",), "k").value["v"] + 3}

    for offset, node in enumerate([keyword_only, second, both, plain]):
        app = _graph(node).compile(store=store)
        assert app.invoke({})["out"] == 7 + offset


def test_async_node_gets_the_store_under_ainvoke() -> None:
    """An async node with a store parameter is awaited with the store."""

    async def node(state: Any, *, store: Any) -> dict[str, Any]:
        await store.aput(("a",), "k", {"v": 1})
        return {"out": (await store.aget(("a",), "k")).value["v"]}

    store = MemoryStore()
    assert asyncio.run(_graph(node).compile(store=store).ainvoke({}))["out"] == 1
    assert len(store) == 1


def test_without_a_store_the_parameter_is_none() -> None:
    """A graph compiled without a store hands nodes None (not the config)."""
    app = _graph(lambda state, store: {"out": store is None}).compile()
    assert app.invoke({})["out"] is True


def test_a_store_in_the_config_wins_and_subgraphs_inherit() -> None:
    """config={'store': ...} overrides the compiled one; a subgraph uses its parent's."""
    parent_store, own_store, passed = MemoryStore(), MemoryStore(), MemoryStore()

    def write(state: Any, *, store: Any) -> dict[str, Any]:
        store.put(("w",), "k", {"v": 1})
        return {"out": "sub"}

    sub = _graph(write).compile(store=own_store)
    g = StateGraph({"out": ReplaceStrategy()})
    g.add_node("sub", sub)
    g.add_edge(START, "sub")
    g.add_edge("sub", END)
    app = g.compile(store=parent_store)
    assert app.invoke({})["out"] == "sub"
    assert len(parent_store) == 1 and len(own_store) == 0
    app.invoke({}, {"store": passed})
    assert len(passed) == 1


def test_tools_and_hooks_reach_the_agent_store() -> None:
    """A tool reads ctx.store and a hook config.store on a ReactAgent(store=...)."""
    store = MemoryStore()
    seen: list[Any] = []

    @tool
    def save(text: str, ctx: ToolContext) -> str:
        """Save text.

        Args:
            text: what to save.
        """
        ctx.store.put(("notes",), "n1", {"text": text})
        return "saved"

    @before_model
    def peek(state: Any, config: Any) -> None:
        seen.append(config.store)

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        if not any(m.role == "tool" for m in messages):
            return AssistantMessage(
                tool_calls=(ToolCall(id="c1", name="save", arguments='{"text": "hello"}'),)
            )
        return AssistantMessage("done")

    agent = ReactAgent(model=FunctionChatModel(script), tools=[save], hooks=[peek], store=store)
    assert agent.call("save it").text == "done"
    got = store.get(("notes",), "n1")
    assert got is not None and got.value == {"text": "hello"}
    assert seen and all(s is store for s in seen)


def _memory_agent(store: MemoryStore, sent: list[list[Any]]) -> ReactAgent:
    """A scripted agent: it remembers what follows "remember:", and answers questions
    from the memories the interceptor sent it."""

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        sent.append(list(messages))
        last = messages[-1]
        if isinstance(last, UserMessage) and last.text.startswith("remember:"):
            fact = last.text.removeprefix("remember:").strip()
            arguments = json.dumps({"fact": fact})
            return AssistantMessage(
                tool_calls=(ToolCall(id="m1", name="remember", arguments=arguments),)
            )
        if last.role == "tool":
            return AssistantMessage("I'll remember that.")
        notes = [m.text for m in messages if isinstance(m, SystemMessage) and "remember" in m.text]
        return AssistantMessage(
            f"From memory: {notes[0].splitlines()[1]}" if notes else "I don't know."
        )

    return ReactAgent(
        name="memo",
        model=FunctionChatModel(script),
        tools=memory_tools(),
        interceptors=[MemoryRecallInterceptor()],
        saver=MemorySaver(),
        store=store,
        system_prompt="You are helpful.",
    )


def test_agent_remembers_a_fact_in_one_thread_and_uses_it_in_another() -> None:
    """Thread 1 stores a user's fact through the remember tool; thread 2 (same user) gets
    it recalled before the model call; another user's thread does not."""
    store = MemoryStore()
    sent: list[list[Any]] = []
    agent = _memory_agent(store, sent)
    ada = {"metadata": {"user_id": "ada"}}
    first = agent.call("remember: drinks green tea", config={**ada, "thread_id": "t1"})
    assert first.text == "I'll remember that."
    assert [i.value["text"] for i in store.search(("memories", "ada"))] == ["drinks green tea"]
    answer = agent.call("What do I like to drink?", config={**ada, "thread_id": "t2"})
    assert answer.text == "From memory: - drinks green tea"
    assert isinstance(sent[-1][0], SystemMessage) and sent[-1][0].text == "You are helpful."
    thread2 = agent.graph.get_state({"thread_id": "t2"}).values["messages"]
    assert not any("green tea" in m.text for m in thread2[:-1])  # recalled, never stored
    bob = agent.call(
        "What do I like to drink?", config={"metadata": {"user_id": "bob"}, "thread_id": "t3"}
    )
    assert bob.text == "I don't know."


def test_memory_tools_name_what_is_missing() -> None:
    """Without the user id the namespace needs, the recall tool says what to pass."""
    calls = iter(
        [
            AssistantMessage(
                tool_calls=(ToolCall(id="y", name="recall", arguments='{"query": "q"}'),)
            ),
            AssistantMessage("ok"),
        ]
    )
    agent = ReactAgent(
        model=FunctionChatModel(lambda m, t: next(calls)), tools=memory_tools(), store=MemoryStore()
    )
    out = agent.invoke({"messages": [UserMessage("hi")]})
    said = [m.text for m in out["messages"] if m.role == "tool"]
    assert said and "user_id" in said[0] and "metadata" in said[0]


def test_remember_without_a_store_names_the_fix() -> None:
    """The remember tool on an agent without a store tells how to give it one."""
    calls = iter(
        [
            AssistantMessage(
                tool_calls=(ToolCall(id="z", name="remember", arguments='{"fact": "f"}'),)
            ),
            AssistantMessage("ok"),
        ]
    )
    agent = ReactAgent(model=FunctionChatModel(lambda m, t: next(calls)), tools=memory_tools())
    out = agent.invoke({"messages": [UserMessage("hi")]}, {"metadata": {"user_id": "u"}})
    said = [m.text for m in out["messages"] if m.role == "tool"]
    assert said and "store=MemoryStore()" in said[0]


@pytest.mark.parametrize("bad", [("memories", "{tenant}")])
def test_memory_namespace_template(bad: tuple[str, ...]) -> None:
    """Templates fill from metadata; a missing name is a UserError naming it."""
    from graphagent.agent import memory_namespace
    from graphagent.errors import UserError

    assert memory_namespace(("m", "{user_id}"), {"user_id": 42}) == ("m", "42")
    with pytest.raises(UserError, match="'tenant'"):
        memory_namespace(bad, {})
