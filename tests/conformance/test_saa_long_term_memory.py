"""Spring AI Alibaba's long-term memory agent tests, translated, on every store backend.

Origin: spring-ai-alibaba-agent-framework ``agent/memory/LongTermMemoryTest.java`` (five
cases; there a DashScope model answers and a ``MemoryStore`` held by the test is read in
hooks and tools; here a scripted ``FunctionChatModel`` answers, deterministically, and the
agent's own store, ``ReactAgent(store=...)``, is reached as ``request.config.store`` in an
interceptor, a ``store`` parameter in a hook and ``ctx.store`` in a tool). The
cross-session case with the built-in remember/recall tools is in
``test_saa_store_graph.py::test_long_term_memory_across_sessions``.
"""

from __future__ import annotations

import json
from typing import Any

from checkpoint import MemorySaver
from checkpoint.store import BaseStore
from graphagent.agent import ModelInterceptor, ReactAgent, after_model
from graphagent.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage
from graphagent.models import FunctionChatModel
from graphagent.tools import ToolContext, tool


class ProfileInterceptor(ModelInterceptor):
    """Sends the user's stored profile (``namespace``/``{user_id}``) before the messages."""

    def __init__(self, namespace: tuple[str, ...], render: Any) -> None:
        self.namespace = namespace
        self.render = render

    def intercept_model(self, request: Any, handler: Any) -> AssistantMessage:
        user_id = request.config.metadata.get("user_id")
        item = request.config.store.get(self.namespace, user_id) if user_id else None
        if item is None:
            return handler(request)
        note = SystemMessage(self.render(item.value))
        return handler(request.override(messages=[note, *request.messages]))


def _system_text(messages: list[Any]) -> str:
    return "\n".join(m.text for m in messages if isinstance(m, SystemMessage))


def test_long_term_memory_with_interceptor(lt_store: BaseStore) -> None:
    """LongTermMemoryTest.testLongTermMemoryWithInterceptor: a profile stored beforehand
    reaches the model of a user's session through an interceptor keyed by metadata."""
    lt_store.put(
        ("user_profiles",),
        "user_001",
        {"name": "王小明", "age": 28, "email": "wang@example.com", "preferences": ["咖啡", "阅读"]},
    )

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        return AssistantMessage(_system_text(messages) or "no profile")

    agent = ReactAgent(
        name="memory_agent",
        model=FunctionChatModel(script),
        interceptors=[
            ProfileInterceptor(
                ("user_profiles",), lambda v: f"用户信息:姓名={v['name']}, 年龄={v['age']}"
            )
        ],
        saver=MemorySaver(),
        store=lt_store,
    )
    answer = agent.call(
        "请介绍一下我的信息。",
        config={"thread_id": "session_001", "metadata": {"user_id": "user_001"}},
    ).text
    assert "王小明" in answer and "28" in answer
    other = agent.call("hi", config={"thread_id": "s2", "metadata": {"user_id": "nobody"}})
    assert other.text == "no profile"


@tool
def save_memory(namespace: list[str], key: str, value: dict[str, Any], ctx: ToolContext) -> str:
    """Save a value to long-term memory.

    Args:
        namespace: the namespace's labels.
        key: the item's key.
        value: what to keep.
    """
    ctx.store.put(tuple(namespace), key, value)
    return json.dumps({"message": "saved", "value": value}, ensure_ascii=False)


@tool
def get_memory(namespace: list[str], key: str, ctx: ToolContext) -> str:
    """Read a value from long-term memory.

    Args:
        namespace: the namespace's labels.
        key: the item's key.
    """
    item = ctx.store.get(tuple(namespace), key)
    found = {"message": "found", "value": item.value} if item else {"message": "not found"}
    return json.dumps(found, ensure_ascii=False)


def _tool_agent(store: BaseStore) -> ReactAgent:
    """A model that calls the tool a user message names, with the JSON arguments after
    its colon, then answers with the tool's result."""

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        last = messages[-1]
        if isinstance(last, UserMessage):
            name, _, arguments = last.text.partition(":")
            return AssistantMessage(tool_calls=(ToolCall(id="t1", name=name, arguments=arguments),))
        return AssistantMessage(f"tool said: {last.text}")

    return ReactAgent(
        name="memory_tool_agent",
        model=FunctionChatModel(script),
        tools=[save_memory, get_memory],
        saver=MemorySaver(),
        store=store,
    )


def test_long_term_memory_with_tools(lt_store: BaseStore) -> None:
    """LongTermMemoryTest.testLongTermMemoryWithTools: one tool saves a value, another
    reads it back later in the same thread."""
    agent = _tool_agent(lt_store)
    config = {"thread_id": "memory_tool_thread"}
    save = {"namespace": ["user_preferences"], "key": "favorite_color", "value": {"color": "蓝色"}}
    assert "saved" in agent.call("save_memory:" + json.dumps(save), config=config).text
    got = lt_store.get(("user_preferences",), "favorite_color")
    assert got is not None and got.value == {"color": "蓝色"}
    read = {"namespace": ["user_preferences"], "key": "favorite_color"}
    assert "蓝色" in agent.call("get_memory:" + json.dumps(read), config=config).text


def test_memory_across_sessions(lt_store: BaseStore) -> None:
    """LongTermMemoryTest.testMemoryAcrossSessions: what a tool saved in the morning's
    thread is read in the afternoon's, which shares none of its messages."""
    agent = _tool_agent(lt_store)
    meta = {"user_id": "user_003"}
    save = {
        "namespace": ["credentials"],
        "key": "user_003_password",
        "value": {"password": "secret123"},
    }
    agent.call("save_memory:" + json.dumps(save), config={"thread_id": "morning", "metadata": meta})
    read = {"namespace": ["credentials"], "key": "user_003_password"}
    afternoon = {"thread_id": "afternoon", "metadata": meta}
    assert "secret123" in agent.call("get_memory:" + json.dumps(read), config=afternoon).text
    thread = agent.graph.get_state({"thread_id": "afternoon"}).values["messages"]
    assert not any("save_memory" in m.text for m in thread)


def test_combined_memory(lt_store: BaseStore) -> None:
    """LongTermMemoryTest.testCombinedMemory: the thread (short-term) remembers what the
    user said a turn ago, the store (long-term) who the user is; the model gets both.
    (Spring's hook there declares BEFORE_MODEL but implements afterModel, so its profile
    never reaches the model; the case's intent is translated.)"""
    lt_store.put(("profiles",), "user_002", {"name": "李工程师", "occupation": "软件工程师"})
    seen: list[list[Any]] = []

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        seen.append(list(messages))
        return AssistantMessage("ok")

    agent = ReactAgent(
        name="combined_memory_agent",
        model=FunctionChatModel(script),
        interceptors=[
            ProfileInterceptor(
                ("profiles",), lambda v: f"长期记忆:用户 {v['name']}, 职业: {v['occupation']}"
            )
        ],
        saver=MemorySaver(),
        store=lt_store,
    )
    config = {"thread_id": "combined_thread", "metadata": {"user_id": "user_002"}}
    agent.call("我今天在做一个 Spring 项目。", config=config)
    agent.call("根据我的职业和今天的工作, 给我一些建议。", config=config)
    last = seen[-1]
    assert "软件工程师" in _system_text(last)
    assert [m.text for m in last if isinstance(m, UserMessage)] == [
        "我今天在做一个 Spring 项目。",
        "根据我的职业和今天的工作, 给我一些建议。",
    ]


def test_user_preference_learning(lt_store: BaseStore) -> None:
    """LongTermMemoryTest.testUserPreferenceLearning: an after-model hook (here a function
    hook with a ``store`` parameter) learns the preferences a user states, across turns and
    threads, into one item per user."""

    @after_model
    def learn(state: Any, config: Any, *, store: BaseStore) -> None:
        user_id = config.metadata.get("user_id")
        if not user_id:
            return
        key = f"{user_id}_preferences"
        found = store.get(("user_data",), key)
        prefs: list[str] = list(found.value["items"]) if found else []
        for message in state["messages"]:
            text = message.text
            stated = "喜欢" in text or "偏好" in text
            if isinstance(message, UserMessage) and stated and text not in prefs:
                prefs.append(text)
        store.put(("user_data",), key, {"items": prefs})

    agent = ReactAgent(
        name="learning_agent",
        model=FunctionChatModel(lambda messages, tools: AssistantMessage("好的")),
        hooks=[learn],
        saver=MemorySaver(),
        store=lt_store,
    )
    meta = {"user_id": "user_004"}
    agent.call("我喜欢喝咖啡, 不加糖。", config={"thread_id": "p1", "metadata": meta})
    agent.call("今天天气不错。", config={"thread_id": "p1", "metadata": meta})
    agent.call("我偏好在早上工作。", config={"thread_id": "p2", "metadata": meta})
    got = lt_store.get(("user_data",), "user_004_preferences")
    assert got is not None
    assert got.value["items"] == ["我喜欢喝咖啡, 不加糖。", "我偏好在早上工作。"]
