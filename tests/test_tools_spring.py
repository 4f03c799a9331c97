"""Spring AI's tool-calling behaviour, ported (issue 14 items 11 and 12).

Each test names the Spring AI test it comes from (spring-projects/spring-ai,
spring-ai-model/src/test/java/org/springframework/ai/...); the rest are the hostile
model servers of issue 14.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graphagent.agent import ReactAgent, ToolInterceptor
from graphagent.agent._interceptors import ToolHandler, ToolRequest
from graphagent.errors import ToolExecutionError, UserError
from graphagent.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import FakeChatModel
from graphagent.tools import (
    DefaultToolExecutionExceptionProcessor,
    ToolCallback,
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


class Recording(ToolCallback):
    """A minimal hand-written tool: a definition and call(tool_input); nothing else."""

    definition = ToolDefinition("testTool", "A test tool", {"type": "object", "properties": {}})

    def __init__(self, answer: Any = '{"result": "success"}') -> None:
        self.inputs: list[str] = []
        self.answer = answer

    def call(self, tool_input: str) -> Any:  # type: ignore[override]
        self.inputs.append(tool_input)
        return self.answer


def _error(cause: BaseException) -> ToolExecutionError:
    error = ToolExecutionError(str(cause), tool_name="toolName", tool_call_id="c1")
    error.__cause__ = cause
    return error


# -- the exception processor ------------------------------------------------------------


# origin: tool/execution/DefaultToolExecutionExceptionProcessorTests::processRethrows and
# ::processRethrowsExceptionSubclasses
def test_rethrow_raises_the_original_exception_and_subclasses() -> None:
    inner = LookupError("Inner exception")
    with pytest.raises(LookupError) as info:
        DefaultToolExecutionExceptionProcessor(rethrow=(LookupError,)).process(_error(inner))
    assert info.value is inner
    sub = KeyError("missing")  # a LookupError subclass
    with pytest.raises(KeyError) as info2:
        DefaultToolExecutionExceptionProcessor(rethrow=(LookupError,)).process(_error(sub))
    assert info2.value is sub


# origin: DefaultToolExecutionExceptionProcessorTests::processRethrowsOnlySelectExceptions
# and ::processAlwaysThrows
def test_rethrow_only_listed_types_and_always_throw_wraps() -> None:
    other = RuntimeError("This exception was not rethrown")
    processor = DefaultToolExecutionExceptionProcessor(rethrow=(LookupError,))
    assert processor.process(_error(other)) == "This exception was not rethrown"
    error = _error(other)
    with pytest.raises(ToolExecutionError) as info:
        DefaultToolExecutionExceptionProcessor(always_throw=True).process(error)
    assert info.value is error and info.value.__cause__ is other
    # rethrow wins over always_throw: the listed type comes out as itself
    both = DefaultToolExecutionExceptionProcessor(always_throw=True, rethrow=(RuntimeError,))
    with pytest.raises(RuntimeError) as info3:
        both.process(_error(other))
    assert info3.value is other


def test_manager_rethrows_the_tools_own_exception_sync_and_async() -> None:
    class AuthError(Exception):
        pass

    @tool
    def guarded() -> str:
        """Needs auth."""
        raise AuthError("expired")

    @tool
    async def aguarded() -> str:
        """Needs auth, async."""
        raise AuthError("expired too")

    manager = ToolCallingManager(
        exception_processor=DefaultToolExecutionExceptionProcessor(rethrow=(AuthError,))
    )
    with pytest.raises(AuthError, match="expired"):
        manager.execute_tool_calls([], ask(("1", "guarded", "{}")), tools=[guarded])
    with pytest.raises(AuthError, match="expired too"):
        asyncio.run(manager.aexecute_tool_calls([], ask(("1", "aguarded", "{}")), tools=[aguarded]))


# origin: DefaultToolExecutionExceptionProcessorTests::processReturnsFallbackMessageWhenBlank
def test_blank_exception_message_still_names_the_type() -> None:

    @tool
    def silent() -> str:
        """Fails without a message."""
        raise RuntimeError

    text = ToolCallingManager().execute_tool_calls([], ask(("1", "silent", "{}")), tools=[silent])
    assert text.tool_responses[0].content == "tool 'silent' failed: RuntimeError"


# -- the standalone manager ------------------------------------------------------------


# origin: model/tool/DefaultToolCallingManagerTest::shouldHandleEmptyArgumentsInStreamMode
# and ::shouldHandleNullArgumentsInStreamMode
@pytest.mark.parametrize("arguments", ["", "   "])
def test_empty_streamed_arguments_reach_a_hand_written_tool_as_empty_object(
    arguments: str,
) -> None:
    tool_ = Recording()
    manager = ToolCallingManager()
    result = manager.execute_tool_calls([], ask(("1", "testTool", arguments)), tools=[tool_])
    asyncio.run(manager.aexecute_tool_calls([], ask(("2", "testTool", arguments)), tools=[tool_]))
    assert tool_.inputs == ["{}", "{}"]
    assert result.tool_responses[0].content == '{"result": "success"}'


# origin: DefaultToolCallingManagerTest::shouldHandleToolCallReturningNull
def test_hand_written_tool_returning_none_or_objects() -> None:
    manager = ToolCallingManager()
    none = manager.execute_tool_calls([], ask(("1", "testTool", "{}")), tools=[Recording(None)])
    assert none.tool_responses[0].content == ""
    rows = manager.execute_tool_calls([], ask(("1", "testTool", "{}")), tools=[Recording([1, 2])])
    assert rows.tool_responses[0].content == "[1,2]"


# origin: DefaultToolCallingManagerTests::whenNoToolCallInChatResponseThenThrow
def test_execute_without_tool_calls_is_a_clear_error() -> None:
    manager = ToolCallingManager()
    with pytest.raises(UserError, match=r"no tool calls.*reply\.tool_calls"):
        manager.execute_tool_calls([], AssistantMessage("just text"), tools=[add])
    with pytest.raises(UserError, match="no tool calls"):
        asyncio.run(manager.aexecute_tool_calls([], AssistantMessage("text"), tools=[add]))
    with pytest.raises(UserError, match="AssistantMessage, got UserMessage"):
        manager.execute_tool_calls([], UserMessage("hi"), tools=[add])  # type: ignore[arg-type]


def test_standalone_manager_gives_tools_the_conversation_so_far() -> None:
    """Spring AI's ToolContext TOOL_CALL_HISTORY: the messages, then the assistant message."""
    seen: list[tuple[Message, ...]] = []

    @tool
    def recall(ctx: ToolContext) -> str:
        """What was said."""
        seen.append(ctx.history)
        return str(len(ctx.history))

    history: list[Message] = [UserMessage("first"), AssistantMessage("ok"), UserMessage("again")]
    asked = ask(("c1", "recall", "{}"))
    manager = ToolCallingManager()
    result = manager.execute_tool_calls(history, asked, tools=[recall])
    assert list(seen[0]) == [*history, asked]
    assert result.tool_responses[0].content == "4"
    asyncio.run(manager.aexecute_tool_calls(history, asked, tools=[recall]))
    assert list(seen[1]) == [*history, asked]


def test_agent_tools_see_the_thread_as_history() -> None:
    seen: list[tuple[Message, ...]] = []

    @tool
    def recall(ctx: ToolContext) -> str:
        """What was said."""
        seen.append(ctx.history)
        return "ok"

    model = FakeChatModel([ask(("c1", "recall", "{}")), "done"])
    ReactAgent(name="a", model=model, tools=[recall]).call("hello")
    assert [m.text for m in seen[0]][:1] == ["hello"]
    assert isinstance(seen[0][-1], AssistantMessage) and seen[0][-1].tool_calls


# -- hostile models -------------------------------------------------------------------


def test_two_calls_sharing_an_id_both_get_an_answer_standalone() -> None:
    asked = ask(("call_0", "add", '{"a": 1, "b": 2}'), ("call_0", "add", '{"a": 3, "b": 4}'))
    for result in (
        ToolCallingManager().execute_tool_calls([], asked, tools=[add]),
        asyncio.run(ToolCallingManager().aexecute_tool_calls([], asked, tools=[add])),
    ):
        assert [m.content for m in result.tool_responses] == ["3", "7"]
        sent = result.conversation_history[0]
        assert isinstance(sent, AssistantMessage)
        ids = [c.id for c in sent.tool_calls]
        assert len(set(ids)) == 2 and ids[0] == "call_0"
        assert [m.tool_call_id for m in result.tool_responses] == ids


@pytest.mark.parametrize("stream", [False, True])
def test_two_calls_sharing_an_id_both_get_an_answer_in_an_agent(stream: bool) -> None:
    """Ollama-style reused ids: the model's next request holds both answers, matched."""
    asked = AssistantMessage(
        tool_calls=[
            ToolCall(id="call_0", name="add", arguments='{"a": 1, "b": 2}'),
            ToolCall(id="call_0", name="add", arguments='{"a": 3, "b": 4}'),
            ToolCall(id="", name="add", arguments='{"a": 5, "b": 5}'),
        ]
    )
    model = FakeChatModel([asked, "3, 7 and 10"])
    agent = ReactAgent(name="a", model=model, tools=[add])
    if stream:
        list(agent.stream("sums", mode="messages"))
    else:
        agent.call("sums")
    second = model.calls[1].messages
    assistant = next(m for m in second if isinstance(m, AssistantMessage))
    answers = {m.tool_call_id: m.content for m in second if isinstance(m, ToolResponseMessage)}
    ids = [c.id for c in assistant.tool_calls]
    assert len(set(ids)) == 3 and all(ids)
    assert [answers[i] for i in ids] == ["3", "7", "10"]


def test_invented_tool_name_is_clipped_in_the_reply() -> None:
    invented = "get_" + "x" * 20_000
    result = ToolCallingManager().execute_tool_calls([], ask(("1", invented, "{}")), tools=[add])
    text = result.tool_responses[0].content
    assert text.startswith("unknown tool 'get_xxx") and len(text) < 200
    model = FakeChatModel([ask(("1", invented, "{}")), "sorry"])
    ReactAgent(name="a", model=model, tools=[add]).call("go")
    reply = model.calls[1].messages[-1]
    assert isinstance(reply, ToolResponseMessage) and len(reply.content) < 200


def test_empty_arguments_reach_a_hand_written_tool_through_agent_interceptors() -> None:
    """The agent's own path (interceptors in the way) also sends "{}"."""
    tool_ = Recording()
    seen: list[str] = []

    class Spy(ToolInterceptor):
        def intercept_tool_call(
            self, request: ToolRequest, handler: ToolHandler
        ) -> ToolResponseMessage:
            seen.append(request.tool_call.arguments)
            return handler(request)

    spy = Spy()

    model = FakeChatModel([ask(("1", "testTool", "")), "done"])
    ReactAgent(name="a", model=model, tools=[tool_], interceptors=[spy]).call("go")
    asyncio.run(
        ReactAgent(
            name="b",
            model=FakeChatModel([ask(("1", "testTool", "")), "done"]),
            tools=[tool_],
            interceptors=[spy],
        ).acall("go")
    )
    assert tool_.inputs == ["{}", "{}"] and seen == ["{}", "{}"]
