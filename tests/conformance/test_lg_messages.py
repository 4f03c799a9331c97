"""The messages reducer, ``push_message`` and thread ids, ported from LangGraph's
libs/langgraph/tests/test_messages_state.py and test_pregel.py (origin named per test).

graphagent's messages always carry an id (a fresh one unless given), so LangGraph's
"Message ID is required" error for ``push_message`` has no counterpart.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from checkpoint.base import CheckpointSaver
from graphagent.errors import UserError
from graphagent.graph import END, START, AppendStrategy, StateGraph, push_message
from graphagent.messages import (
    REMOVE_ALL_MESSAGES,
    AssistantMessage,
    Message,
    RemoveMessage,
    SystemMessage,
    UserMessage,
    add_messages,
)


def _texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


# origin: langgraph tests/test_messages_state.py::test_add_single_message
def test_add_single_message() -> None:
    """One message (not in a list) appends."""
    left = [UserMessage("Hello", id="1")]
    assert add_messages(left, AssistantMessage("Hi there!", id="2")) == [
        UserMessage("Hello", id="1"),
        AssistantMessage("Hi there!", id="2"),
    ]


# origin: langgraph tests/test_messages_state.py::test_update_existing_message
def test_update_existing_message() -> None:
    """A message with an id already present replaces it."""
    left = [UserMessage("Hello", id="1")]
    assert add_messages(left, UserMessage("Hello again", id="1")) == [
        UserMessage("Hello again", id="1")
    ]


# origin: langgraph tests/test_messages_state.py::test_duplicates_in_input
def test_duplicates_in_input() -> None:
    """Two messages with one id in one update: the last wins, once."""
    result = add_messages([], [AssistantMessage("a", id="1"), AssistantMessage("b", id="1")])
    assert result == [AssistantMessage("b", id="1")]


# origin: langgraph tests/test_messages_state.py::test_duplicates_in_input_with_remove
def test_duplicates_in_input_with_remove() -> None:
    """Remove, then write the id twice: one message, the last written."""
    left = [AssistantMessage("Hello!", id="1")]
    right = [RemoveMessage("1"), AssistantMessage("a", id="1"), AssistantMessage("b", id="1")]
    assert add_messages(left, right) == [AssistantMessage("b", id="1")]


# origin: langgraph tests/test_messages_state.py::test_duplicate_remove_message
def test_duplicate_remove_message_removes_once() -> None:
    """The same ``RemoveMessage`` twice in one update removes the message once, no error."""
    left = [UserMessage("Hello", id="1"), AssistantMessage("Hi", id="2")]
    assert add_messages(left, [RemoveMessage("2"), RemoveMessage("2")]) == [
        UserMessage("Hello", id="1")
    ]


# origin: langgraph tests/test_messages_state.py::test_remove_nonexistent_message
def test_remove_nonexistent_message() -> None:
    """Removing an id that is not there is an error naming the id."""
    with pytest.raises(ValueError, match="'2'"):
        add_messages([UserMessage("Hello", id="1")], RemoveMessage("2"))


# origin: langgraph tests/test_messages_state.py::test_mixed_operations
def test_mixed_operations() -> None:
    """Replace, remove and append in one update."""
    left = [UserMessage("Hello", id="1"), AssistantMessage("Hi", id="2")]
    right = [UserMessage("Updated", id="1"), RemoveMessage("2"), SystemMessage("New", id="3")]
    expected = [UserMessage("Updated", id="1"), SystemMessage("New", id="3")]
    assert add_messages(left, right) == expected


# origin: langgraph tests/test_messages_state.py::test_empty_inputs
def test_empty_inputs() -> None:
    """Empty on either side changes nothing."""
    one = UserMessage("Hello", id="1")
    assert add_messages([], []) == []
    assert add_messages([], [one]) == [one]
    assert add_messages([one], []) == [one]


# origin: langgraph tests/test_messages_state.py::test_non_list_inputs
def test_single_message_on_both_sides() -> None:
    """``left`` may be one message too, not only a list."""
    left, right = UserMessage("Hello", id="1"), AssistantMessage("Hi", id="2")
    assert add_messages(left, right) == [left, right]


# origin: langgraph tests/test_messages_state.py::test_delete_all
def test_delete_each() -> None:
    """Removing every id leaves an empty list."""
    left = [UserMessage("Hello", id="1"), AssistantMessage("Hi", id="2")]
    assert add_messages(left, [RemoveMessage("1"), RemoveMessage("2")]) == []


# origin: langgraph tests/test_messages_state.py::test_remove_all_messages
def test_remove_all_messages() -> None:
    """``RemoveMessage(REMOVE_ALL_MESSAGES)`` clears the list, and what came before it in
    the same update; what follows it is the new list."""
    left = [UserMessage("Hello"), AssistantMessage("Hi there!")]
    assert add_messages(left, [RemoveMessage(REMOVE_ALL_MESSAGES)]) == []
    out = add_messages(left, [RemoveMessage(REMOVE_ALL_MESSAGES), UserMessage("Updated hello")])
    assert _texts(out) == ["Updated hello"]
    right = [UserMessage("a"), RemoveMessage(REMOVE_ALL_MESSAGES), UserMessage("b")]
    assert _texts(add_messages(left, right)) == ["b"]


class MessagesState(TypedDict):
    messages: Annotated[list[Message], AppendStrategy()]


class MessagesStatePydantic(BaseModel):
    messages: Annotated[list[Message], AppendStrategy()] = []


# origin: langgraph tests/test_messages_state.py::test_messages_state
@pytest.mark.parametrize("schema", [MessagesState, MessagesStatePydantic])
def test_messages_state(schema: Any) -> None:
    """A ``messages`` key coerces role dicts and appends node messages."""
    g = StateGraph(schema).add_node("foo", lambda s: {"messages": [UserMessage("foo")]})
    app = g.add_edge(START, "foo").add_edge("foo", END).compile()
    out = app.invoke({"messages": [{"role": "user", "content": "meow"}]})
    assert _texts(out["messages"]) == ["meow", "foo"]


def test_remove_all_messages_in_a_graph(saver: CheckpointSaver) -> None:
    """A node that clears the history and writes a summary: the thread stores only that,
    on every saver, sync and async."""

    def summarize(state: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(REMOVE_ALL_MESSAGES), AssistantMessage("summary")]}

    g = StateGraph(MessagesState).add_node("summarize", summarize)
    app = g.add_edge(START, "summarize").add_edge("summarize", END).compile(saver=saver)
    thread = uuid.uuid4().hex
    app.invoke({"messages": ["one", "two"]}, thread_id=thread)
    assert _texts(app.get_state(thread_id=thread).values["messages"]) == ["summary"]
    asyncio.run(app.ainvoke({"messages": ["three"]}, thread_id=thread))
    got = asyncio.run(app.aget_state(thread_id=thread)).values["messages"]
    assert _texts(got) == ["summary"]


# origin: langgraph tests/test_messages_state.py::test_push_messages_in_graph
def test_push_messages_in_graph() -> None:
    """Pushed messages stream as they are pushed and land in the state."""

    def chat(state: Any) -> None:
        push_message(AssistantMessage("First", id="1"))
        push_message(UserMessage("Second", id="2"))
        push_message(AssistantMessage("Third", id="3"))

    app = StateGraph(MessagesState).add_node(chat).add_edge(START, "chat").add_edge("chat", END)
    graph = app.compile()
    streamed: list[Message] = []
    values: dict[str, Any] = {}
    for mode, chunk in graph.stream({"messages": []}, mode=["messages", "values"]):
        if mode == "values":
            values = chunk
        else:
            message, info = chunk
            assert info["node"] == "chat"
            streamed.append(message)
    assert values["messages"] == streamed and _texts(streamed) == ["First", "Second", "Third"]


def test_pushed_messages_come_before_the_returned_ones(saver: CheckpointSaver) -> None:
    """A node that pushes and returns messages stores the pushed ones first; under
    ``invoke`` (no stream) and ``ainvoke`` the state gets them all the same."""

    def chat(state: Any) -> dict[str, Any]:
        push_message("working on it")
        return {"messages": AssistantMessage("done")}

    async def achat(state: Any) -> dict[str, Any]:
        push_message(AssistantMessage("async working"))
        return {"messages": [AssistantMessage("async done")]}

    for node in (chat, achat):
        g = StateGraph(MessagesState).add_node("chat", node)
        app = g.add_edge(START, "chat").add_edge("chat", END).compile(saver=saver)
        thread = uuid.uuid4().hex
        if node is chat:
            out = app.invoke({"messages": []}, thread_id=thread)
            assert _texts(out["messages"]) == ["working on it", "done"]
        else:
            out = asyncio.run(app.ainvoke({"messages": []}, thread_id=thread))
            assert _texts(out["messages"]) == ["async working", "async done"]
        assert app.get_state(thread_id=thread).values == out


def test_push_message_without_state_key_only_streams() -> None:
    """``state_key=None`` shows the message to the stream and leaves the state alone."""

    def chat(state: Any) -> None:
        push_message(AssistantMessage("typing..."), state_key=None)

    g = StateGraph(MessagesState).add_node(chat).add_edge(START, "chat").add_edge("chat", END)
    events = list(g.compile().stream({"messages": []}, mode=["messages", "values"]))
    assert [e[0] for e in events] == ["values", "messages", "values"]
    assert events[-1][1] == {"messages": []}


def test_push_message_outside_a_node_is_refused() -> None:
    """Outside a running node there is nowhere to push: a clear error."""
    with pytest.raises(UserError, match="inside a node"):
        push_message(AssistantMessage("lost"))


@pytest.mark.parametrize("kind", ["int", "uuid"])
def test_thread_id_may_be_an_int_or_a_uuid(saver: CheckpointSaver, kind: str) -> None:
    """An int or a UUID thread id names the thread by its text, on every saver, in every
    place a thread id is taken (config, configurable, the ``thread_id=`` shortcut), sync
    and async."""
    g = StateGraph({"count": lambda a, b: a + b}).add_node("inc", lambda s: {"count": 1})
    app = g.add_edge(START, "inc").add_edge("inc", END).compile(saver=saver)
    tid: Any = uuid.uuid4() if kind == "uuid" else uuid.uuid4().int % 10**12
    app.invoke({"count": 0}, {"thread_id": tid})
    app.invoke({"count": 0}, {"configurable": {"thread_id": tid}})
    asyncio.run(app.ainvoke({"count": 0}, thread_id=tid))
    assert app.get_state(thread_id=str(tid)).values == {"count": 3}
    snapshot = app.get_state({"configurable": {"thread_id": tid}})
    assert snapshot.values == {"count": 3} and snapshot.config.thread_id == str(tid)
    assert len(app.get_state_history(thread_id=tid)) == 6
