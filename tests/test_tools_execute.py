"""Executing a model's tool calls: order, concurrency, errors, return_direct, state updates."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from graphagent.errors import ToolExecutionError, UserError
from graphagent.messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from graphagent.tools import (
    DefaultToolExecutionExceptionProcessor,
    ToolCallingManager,
    ToolContext,
    ToolDefinition,
    tool,
)


def ask(*calls: tuple[str, str, str]) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in calls])


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(return_direct=True)
def final(text: str) -> str:
    """Give the final answer."""
    return text


@tool
def explode(secret: str, ctx: ToolContext) -> str:
    """Always fails."""
    raise ValueError("the service said no")


def test_results_in_call_order_with_ids() -> None:
    """Each call gets a ToolResponseMessage with its id, in the order the model asked."""
    history = [UserMessage("sums")]
    msg = ask(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "add", '{"a": 5, "b": 5}'))
    result = ToolCallingManager().execute_tool_calls(history, msg, tools=[add])
    assert [(m.tool_call_id, m.name, m.content) for m in result.tool_responses] == [
        ("c1", "add", "3"),
        ("c2", "add", "10"),
    ]
    assert result.conversation_history == [*history, msg, *result.tool_responses]
    assert result.return_direct is False


def test_sync_tools_run_concurrently() -> None:
    """Two sync tools of one message run at the same time (each waits for the other)."""
    barrier = threading.Barrier(2, timeout=5)

    @tool
    def meet(who: str) -> str:
        """Wait for the other caller."""
        barrier.wait()
        return who

    msg = ask(("1", "meet", '{"who": "x"}'), ("2", "meet", '{"who": "y"}'))
    result = ToolCallingManager().execute_tool_calls([], msg, tools=[meet])
    assert [m.content for m in result.tool_responses] == ["x", "y"]


async def test_async_tools_gathered() -> None:
    """Async tools of one message are awaited together."""

    @tool
    async def slow(n: int) -> int:
        """Sleep then answer."""
        await asyncio.sleep(0.2)
        return n

    msg = ask(("1", "slow", '{"n": 1}'), ("2", "slow", '{"n": 2}'), ("3", "add", '{"a":1,"b":1}'))
    start = time.perf_counter()
    result = await ToolCallingManager().aexecute_tool_calls([], msg, tools=[slow, add])
    assert [m.content for m in result.tool_responses] == ["1", "2", "2"]
    assert time.perf_counter() - start < 0.35


def test_return_direct_only_when_every_tool_has_it() -> None:
    """return_direct holds only if every called tool is return_direct."""
    manager = ToolCallingManager()
    only = manager.execute_tool_calls([], ask(("1", "final", '{"text": "hi"}')), tools=[final, add])
    assert only.return_direct is True
    mixed = manager.execute_tool_calls(
        [], ask(("1", "final", '{"text": "hi"}'), ("2", "add", '{"a":1,"b":1}')), tools=[final, add]
    )
    assert mixed.return_direct is False


def test_failures_become_messages_for_the_model() -> None:
    """Invalid JSON, schema errors, unknown tools and exceptions are told to the model."""
    msg = ask(
        ("1", "add", '{"a": 1,'),
        ("2", "add", '{"a": "x", "b": 1}'),
        ("3", "nope", "{}"),
        ("4", "explode", '{"secret": "hunter2"}'),
    )
    result = ToolCallingManager().execute_tool_calls([], msg, tools=[add, explode])
    texts = [m.content for m in result.tool_responses]
    assert "not valid JSON" in texts[0] and "again" in texts[0]
    assert "a: Input should be a valid integer" in texts[1]
    assert "unknown tool 'nope'" in texts[2]
    assert texts[3] == "tool 'explode' failed: ValueError: the service said no"
    assert not any("hunter2" in t or "ToolContext" in t for t in texts)
    assert all(isinstance(m, ToolResponseMessage) for m in result.tool_responses)


def test_always_throw_raises_with_name_and_id() -> None:
    """With always_throw the failure propagates as ToolExecutionError naming tool and call."""
    manager = ToolCallingManager(
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True)
    )
    with pytest.raises(ToolExecutionError) as info:
        manager.execute_tool_calls([], ask(("c9", "explode", '{"secret": "s"}')), tools=[explode])
    assert info.value.tool_name == "explode" and info.value.tool_call_id == "c9"
    assert isinstance(info.value.__cause__, ValueError)


def test_rethrow_listed_types_and_stop_signals() -> None:
    """Listed exception types propagate; KeyboardInterrupt is never turned into text."""

    class AuthError(Exception):
        pass

    @tool
    def guarded() -> str:
        """Needs auth."""
        raise AuthError("expired")

    @tool
    def interrupted() -> str:
        """Ctrl-C inside."""
        raise KeyboardInterrupt

    manager = ToolCallingManager(
        exception_processor=DefaultToolExecutionExceptionProcessor(rethrow=(AuthError,))
    )
    # the tool's own exception, not a wrapper (Spring AI DefaultToolExecutionExceptionProcessor)
    with pytest.raises(AuthError, match="expired") as info:
        manager.execute_tool_calls([], ask(("1", "guarded", "{}")), tools=[guarded])
    assert type(info.value) is AuthError
    with pytest.raises(KeyboardInterrupt):
        manager.execute_tool_calls([], ask(("1", "interrupted", "{}")), tools=[interrupted])


def test_timeout_per_call() -> None:
    """A tool that hangs past the timeout is reported to the model; others still answer."""
    release = threading.Event()

    @tool
    def hang() -> str:
        """Hangs."""
        release.wait(5)
        return "late"

    manager = ToolCallingManager(timeout=0.2)
    result = manager.execute_tool_calls(
        [], ask(("1", "hang", "{}"), ("2", "add", '{"a":1,"b":1}')), tools=[hang, add]
    )
    release.set()
    assert result.tool_responses[0].content == "tool 'hang' did not finish within 0.2 s"
    assert result.tool_responses[1].content == "2"


async def test_async_timeout() -> None:
    """The async path honours the timeout too."""

    @tool
    async def never() -> str:
        """Never ends."""
        await asyncio.sleep(10)
        return "no"

    result = await ToolCallingManager(timeout=0.1).aexecute_tool_calls(
        [], ask(("1", "never", "{}")), tools=[never]
    )
    assert "did not finish" in result.tool_responses[0].content


def test_state_updates_in_call_order_and_context_fields() -> None:
    """update_state writes come back in call order; each call sees its own id."""

    @tool
    def mark(label: str, ctx: ToolContext) -> str:
        """Mark."""
        if label == "slow":
            time.sleep(0.05)
        ctx.update_state({"labels": [label], "by": ctx.metadata["user_id"]})
        return ctx.tool_call_id

    msg = ask(("a", "mark", '{"label": "slow"}'), ("b", "mark", '{"label": "fast"}'))
    result = ToolCallingManager().execute_tool_calls(
        [], msg, tools=[mark], state={"messages": []}, config={"metadata": {"user_id": "u1"}}
    )
    assert [m.content for m in result.tool_responses] == ["a", "b"]
    assert result.state_updates == [
        {"labels": ["slow"], "by": "u1"},
        {"labels": ["fast"], "by": "u1"},
    ]


def test_user_controlled_loop() -> None:
    """Call the model yourself, execute tool calls, loop on the conversation history."""
    replies = iter(
        [
            ask(("c1", "add", '{"a": 2, "b": 3}')),
            AssistantMessage("The sum is 5."),
        ]
    )

    def model(history: list[Any]) -> AssistantMessage:
        return next(replies)

    manager = ToolCallingManager()
    history: list[Any] = [UserMessage("What is 2+3?")]
    answer = model(history)
    while answer.tool_calls:
        history = manager.execute_tool_calls(history, answer, tools=[add]).conversation_history
        answer = model(history)
    assert answer.text == "The sum is 5."
    assert [type(m).__name__ for m in history] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
    ]
    assert ToolCallingManager.resolve_tool_definitions([add])[0].name == "add"


def test_non_error_base_exception_becomes_tool_execution_error() -> None:
    """A BaseException that is not an Exception (and not a stop signal) is raised, named."""

    class Abort(BaseException):
        pass

    @tool
    def abort() -> str:
        """Aborts."""
        raise Abort("stop everything")

    with pytest.raises(ToolExecutionError) as info:
        ToolCallingManager().execute_tool_calls([], ask(("x1", "abort", "{}")), tools=[abort])
    assert info.value.tool_name == "abort" and info.value.tool_call_id == "x1"
    assert isinstance(info.value.__cause__, Abort)


def test_arguments_json_reads_as_json_does() -> None:
    """Arguments parse as the json module reads them, whatever parser runs first: lone
    surrogates, NaN, big numbers, repeated keys; bad JSON is explained in json's words."""

    @tool
    def echo(value: Any) -> str:
        """Echo the value's repr."""
        return repr(value)

    cases = [
        '{"value": "\\ud800"}',
        '{"value": NaN}',
        '{"value": 123456789012345678901234567890}',
        '{"value": 1, "value": 2}',
        '{"value": [1.5, -0.0, "\\u00e9"]}',
        ' {"value": null} ',
    ]
    for text in cases:
        assert echo.call(text) == repr(json.loads(text)["value"]), text
    msg = ask(("a", "echo", '{"value": 1,}'))
    told = ToolCallingManager().execute_tool_calls([], msg, tools=[echo]).tool_responses[0]
    try:
        json.loads('{"value": 1,}')
    except json.JSONDecodeError as exc:
        assert f"({exc.msg} at position {exc.pos})" in told.content


def test_a_context_reaches_every_tool_that_can_see_one() -> None:
    """Function tools declaring a ToolContext, hand-written tools and interceptors' calls
    all get the call's context (history, state, config); plain function tools run as
    before, and their calls' results come back in order with the others'."""
    seen: dict[str, Any] = {}

    class Handmade:
        definition = ToolDefinition("handmade", "Hand-made.", {"type": "object"})

        def call(self, tool_input: str, context: ToolContext | None = None) -> str:
            assert context is not None
            seen["handmade"] = (context.tool_call_id, len(context.history), context.state["k"])
            return "h"

    @tool
    def with_ctx(ctx: ToolContext) -> str:
        """Reads its context."""
        seen["with_ctx"] = (ctx.tool_call_id, len(ctx.history), ctx.state["k"])
        ctx.update_state({"k": 2})
        return "w"

    msg = ask(("a", "add", '{"a": 1, "b": 2}'), ("b", "handmade", ""), ("c", "with_ctx", ""))
    result = ToolCallingManager().execute_tool_calls(
        [UserMessage("hi")], msg, tools=[add, Handmade(), with_ctx], state={"k": 1}
    )
    assert [m.content for m in result.tool_responses] == ["3", "h", "w"]
    assert seen == {"handmade": ("b", 2, 1), "with_ctx": ("c", 2, 1)}
    assert result.state_updates == [{"k": 2}]
    assert [type(m).__name__ for m in result.conversation_history] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "ToolResponseMessage",
        "ToolResponseMessage",
    ]


def test_a_context_function_is_called_only_when_something_can_see_the_context() -> None:
    """``context=`` takes a function that makes the ToolContext: tools that take no context
    never cause it to be called; a tool that takes one gets what it made, for its call."""
    made: list[int] = []

    def make() -> ToolContext:
        made.append(1)
        return ToolContext(state={"k": len(made)})

    manager = ToolCallingManager()
    msg = ask(("a", "add", '{"a": 1, "b": 2}'))
    assert (
        manager.execute_tool_calls([], msg, tools=[add], context=make).tool_responses[0].content
        == "3"
    )
    assert made == []

    @tool
    def reads(ctx: ToolContext) -> str:
        """Reads its context."""
        return f"{ctx.tool_call_id}:{ctx.state['k']}"

    both = ask(("a", "add", '{"a": 1, "b": 2}'), ("b", "reads", ""))
    result = manager.execute_tool_calls([], both, tools=[add, reads], context=make)
    assert [m.content for m in result.tool_responses] == ["3", "b:1"]
    assert made == [1]


async def test_a_context_function_works_async_and_a_wrong_context_is_named() -> None:
    """aexecute_tool_calls takes the same context function; anything that is neither a
    ToolContext nor a function is refused with a message naming what was given."""

    @tool
    async def reads(ctx: ToolContext) -> str:
        """Reads its context."""
        return str(ctx.state["k"])

    manager = ToolCallingManager()
    msg = ask(("b", "reads", ""))
    result = await manager.aexecute_tool_calls(
        [], msg, tools=[reads], context=lambda: ToolContext(state={"k": "lazy"})
    )
    assert result.tool_responses[0].content == "lazy"
    with pytest.raises(UserError, match=r"context takes a ToolContext or a function.*got dict"):
        manager.execute_tool_calls([], msg, tools=[reads], context={"k": 1})  # type: ignore[arg-type]
