"""Executing the tool calls of an assistant message: ``ToolCallingManager``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from graphagent._executor import call_with_timeout, run_all
from graphagent._internal import observe
from graphagent._internal.calls import arguments_of, clip_name, unique_call_ids
from graphagent._internal.results import split_output
from graphagent._internal.waiting import within
from graphagent.config import ConfigLike
from graphagent.errors import GraphBubbleUp, ToolArgumentsError, ToolExecutionError, UserError
from graphagent.messages import AssistantMessage, Message, ToolCall, ToolResponseMessage
from graphagent.tools._context import ToolContext
from graphagent.tools._definition import (
    ToolCallback,
    ToolDefinition,
    ToolMetadata,
    acall_tool,
    call_tool,
)
from graphagent.tools._function import FunctionToolCallback
from graphagent.tools._resolve import ResolverLike, ToolsLike, collect_tools, resolve_with

__all__ = [
    "DefaultToolExecutionExceptionProcessor",
    "ToolCallingManager",
    "ToolExecutionExceptionProcessor",
    "ToolExecutionResult",
]

# an invoker returns what a tool returns (text, parts), or the tool message itself
ToolInvoker = Callable[[ToolCall, ToolCallback, ToolContext], Any]
AsyncToolInvoker = Callable[[ToolCall, ToolCallback, ToolContext], Awaitable[Any]]

# Ctrl-C, interpreter exit and task cancellation stop the caller; they are never
# turned into a message for the model.
# never turned into a tool failure: the run is stopping, or pausing for a human
_STOP = (KeyboardInterrupt, SystemExit, asyncio.CancelledError, GraphBubbleUp)


class ToolExecutionExceptionProcessor(Protocol):
    """Decides what a tool failure becomes: text for the model, or an exception."""

    def process(self, error: ToolExecutionError) -> str:
        """Return the text the model reads, or raise."""
        ...


class DefaultToolExecutionExceptionProcessor:
    """Tell the model what went wrong (default), or raise.

    Args:
        always_throw: raise every failure as :class:`ToolExecutionError`.
        rethrow: exception types raised as themselves, not as a wrapper (e.g. your
            ``AuthError``); subclasses count. Checked before ``always_throw``.
    """

    def __init__(
        self, always_throw: bool = False, rethrow: tuple[type[BaseException], ...] = ()
    ) -> None:
        self.always_throw = always_throw
        self.rethrow = rethrow

    def process(self, error: ToolExecutionError) -> str:
        """The error's message, for the model; raises when configured to.

        Raises:
            BaseException: the tool's own exception, when its type is in ``rethrow``.
            ToolExecutionError: ``error``, when ``always_throw`` is set.
        """
        cause = error.__cause__
        if cause is not None and self.rethrow and isinstance(cause, self.rethrow):
            raise cause
        if self.always_throw:
            raise error
        return str(error)


@dataclass(frozen=True)
class ToolExecutionResult:
    """What executing one assistant message's tool calls produced.

    Attributes:
        conversation_history: the messages given, the assistant message, then one
            ``ToolResponseMessage`` per call, in call order: send it to the model next.
        return_direct: every called tool is ``return_direct``: the results are the answer.
        tool_responses: the tool messages alone, in call order.
        state_updates: what tools asked through ``ToolContext.update_state``, in call order.
    """

    conversation_history: list[Message]
    return_direct: bool
    tool_responses: list[ToolResponseMessage] = field(default_factory=list)
    state_updates: list[dict[str, Any]] = field(default_factory=list)


class _Executed(NamedTuple):
    """What running the calls gave, before it is dressed as a ToolExecutionResult."""

    tool_responses: list[ToolResponseMessage]
    return_direct: bool
    state_updates: list[dict[str, Any]]


@dataclass
class _Planned:
    call: ToolCall
    tool: ToolCallback | None
    context: ToolContext | None  # None: nothing that runs the call can see one
    failure: BaseException | None = None  # what went wrong, when a failure became text

    def observed(self, message: ToolResponseMessage, watch: observe.Watch) -> ToolResponseMessage:
        """Tell the watch how the call ended; returns ``message``."""
        if self.failure is not None:
            watch.failed(self.failure)
        else:
            watch.record(message.content)
        return message

    def answer(self, value: Any) -> ToolResponseMessage:
        """The call's one tool message for what ran it returned: streamed and stored as
        it is, so both carry the same id."""
        call = self.call
        if type(value) is str:
            return ToolResponseMessage(value, tool_call_id=call.id, name=call.name)
        if isinstance(value, ToolResponseMessage):  # an interceptor's: its text, parts, metadata
            return ToolResponseMessage(
                value.content,
                tool_call_id=call.id,
                name=call.name,
                parts=value.parts,
                metadata=value.metadata,
            )
        text, parts = split_output(value)
        return ToolResponseMessage(text, tool_call_id=call.id, name=call.name, parts=parts)


class ToolCallingManager:
    """Runs the tool calls a model asked for; usable alone (user-controlled execution).

    Args:
        exception_processor: what failures become (default: a message for the model).
        timeout: seconds each tool call may take (``None``: no limit). An async tool
            past it is cancelled; a sync tool's thread cannot be stopped from outside, so
            its :class:`~graphagent.tools.CancellationToken` (``ctx.cancellation``) is set
            for it to check, and the model is told the call timed out.
        max_workers: the size of the thread pool sync tools share (the calling thread
            also runs calls no worker took, so tools that wait on each other never
            deadlock).
        parallel: run the calls of one message at the same time (``False``: one after
            another, in call order).
        max_parallel: most calls of one message running at once, sync or async
            (``None``: no bound besides the pool). Calls past the bound wait for a
            running one to end.
        resolver: consulted for a called name that is not among the ``tools`` given to
            ``execute_tool_calls`` (a :class:`ToolCallbackResolver` or a function
            ``name -> tool | None``).

    Example:
        >>> from graphagent.tools import tool, ToolCallingManager
        >>> from graphagent.messages import AssistantMessage, ToolCall, UserMessage
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> call = ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')
        >>> asked = AssistantMessage(tool_calls=[call])
        >>> manager = ToolCallingManager()
        >>> result = manager.execute_tool_calls([UserMessage("1+2?")], asked, tools=[add])
        >>> result.tool_responses[0].content
        '3'
    """

    def __init__(
        self,
        *,
        exception_processor: ToolExecutionExceptionProcessor | None = None,
        timeout: float | None = None,
        max_workers: int = 8,
        resolver: ResolverLike | None = None,
        parallel: bool = True,
        max_parallel: int | None = None,
    ) -> None:
        if max_workers < 1:
            raise UserError(f"max_workers must be at least 1, got {max_workers}")
        if max_parallel is not None and max_parallel < 1:
            raise UserError(f"max_parallel must be at least 1, got {max_parallel}")
        self.exception_processor = exception_processor or DefaultToolExecutionExceptionProcessor()
        self.timeout = timeout
        self.max_workers = max_workers
        self.parallel = parallel
        self.max_parallel = max_parallel
        self.resolver = resolver

    @staticmethod
    def resolve_tool_definitions(tools: ToolsLike) -> list[ToolDefinition]:
        """The definitions to send to a model for ``tools``."""
        return [t.definition for t in collect_tools(tools=tools).values()]

    @staticmethod
    def _checked(assistant_message: Any, calls: Sequence[ToolCall] | None) -> AssistantMessage:
        if not isinstance(assistant_message, AssistantMessage):
            raise UserError(
                "execute_tool_calls takes the model's AssistantMessage, got "
                f"{type(assistant_message).__name__}"
            )
        if calls is None and not assistant_message.tool_calls:
            raise UserError(
                "the assistant message has no tool calls, so there is nothing to execute; "
                "check reply.tool_calls before calling execute_tool_calls (no tool calls "
                "means the reply is the model's answer)"
            )
        # every call gets its own answer, even when the server reused an id
        return assistant_message if calls is not None else unique_call_ids(assistant_message)

    def _plan(
        self,
        assistant_message: AssistantMessage,
        tools: ToolsLike | Mapping[str, ToolCallback],
        make_context: Callable[[], ToolContext],
        calls: Sequence[ToolCall] | None,
        invoke: Callable[..., Any] | None,
    ) -> list[_Planned]:
        # a dict first: the Mapping check alone is an ABC instance check
        toolset: Mapping[str, ToolCallback] = (
            tools
            if type(tools) is dict or isinstance(tools, Mapping)
            else collect_tools(tools=tools)
        )
        base: ToolContext | None = None
        plan = []
        for call in assistant_message.tool_calls if calls is None else calls:
            found = toolset.get(call.name)
            if found is None and self.resolver is not None:
                found = resolve_with(self.resolver, call.name)
            arguments = arguments_of(call)
            if arguments is not call.arguments:  # blank: the tool gets "{}"
                call = call.model_copy(update={"arguments": arguments})
            context = None
            if invoke is not None or _reads_context(found):
                if base is None:
                    base = make_context()
                context = base.for_call(call.id)
            plan.append(_Planned(call, found, context))
        return plan

    def _failure(
        self, planned: _Planned, exc: BaseException | None, text: str
    ) -> ToolResponseMessage:
        call = planned.call
        error = ToolExecutionError(text, tool_name=call.name, tool_call_id=call.id)
        if exc is not None:
            error.__cause__ = exc
        planned.failure = exc if exc is not None else error
        return planned.answer(self.exception_processor.process(error))

    def _outcome(self, planned: _Planned, run: Callable[[], Any]) -> ToolResponseMessage:
        call = planned.call
        if planned.tool is None:
            return self._failure(
                planned,
                None,
                f"unknown tool {clip_name(call.name)!r}; call one of the tools you were given",
            )
        try:
            # a hand-written tool may return None or a non-string: answer() makes it text
            return planned.answer(run())
        except ToolArgumentsError as exc:
            return self._failure(planned, exc, f"{exc} Call the tool again with valid arguments.")
        except (TimeoutError, concurrent.futures.TimeoutError) as exc:
            if planned.context is not None:  # the tool's thread may still run: tell it
                planned.context.cancellation.cancel(f"timed out after {self.timeout} s")
            return self._failure(
                planned, exc, f"tool {call.name!r} did not finish within {self.timeout} s"
            )
        except _STOP:
            raise
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc).strip() else type(exc).__name__
            return self._failure(planned, exc, f"tool {call.name!r} failed: {detail}")
        except BaseException as exc:
            raise ToolExecutionError(
                f"tool {call.name!r} raised {type(exc).__name__}: {exc}",
                tool_name=call.name,
                tool_call_id=call.id,
            ) from exc

    @staticmethod
    def _result(plan: list[_Planned], responses: list[ToolResponseMessage]) -> _Executed:
        # a "direct" answer needs every called tool to be return_direct
        direct = bool(plan)
        updates: list[dict[str, Any]] = []
        for p in plan:
            if direct and (p.tool is None or not _metadata(p.tool).return_direct):
                direct = False
            if p.context is not None:
                updates.extend(p.context.updates)
        return _Executed(responses, direct, updates)

    @staticmethod
    def _public(
        messages: Sequence[Message], assistant_message: AssistantMessage, done: _Executed
    ) -> ToolExecutionResult:
        return ToolExecutionResult(
            conversation_history=[*messages, assistant_message, *done.tool_responses],
            return_direct=done.return_direct,
            tool_responses=done.tool_responses,
            state_updates=done.state_updates,
        )

    def execute_tool_calls(
        self,
        messages: Sequence[Message],
        assistant_message: AssistantMessage,
        *,
        tools: ToolsLike | Mapping[str, ToolCallback],
        state: Mapping[str, Any] | None = None,
        config: ConfigLike = None,
        tool_context: Mapping[str, Any] | None = None,
        context: ToolContext | Callable[[], ToolContext] | None = None,
        calls: Sequence[ToolCall] | None = None,
        invoke: ToolInvoker | None = None,
        on_response: Callable[[ToolResponseMessage], None] | None = None,
    ) -> ToolExecutionResult:
        """Run every tool call of ``assistant_message``; several run concurrently.

        Results come back in call order whatever order the tools finish in. Failures
        become tool messages (see ``exception_processor``). A name not among ``tools``
        is looked up in the manager's ``resolver``. Calls that share an id (some servers
        reuse them) each get their own answer: the ids are made distinct in the
        ``assistant_message`` of ``conversation_history``. Empty arguments reach the tool
        as ``"{}"``. Tools get a :class:`ToolContext` whose ``history`` is ``messages``
        plus ``assistant_message``.

        Args:
            messages: the conversation before ``assistant_message``.
            assistant_message: the model's message with tool calls.
            tools: the tools the calls may name.
            state: the overall state, for ``ToolContext.state``.
            config: the run's config, for ``ToolContext.config``.
            tool_context: the caller's mapping, for ``ToolContext.context``.
            context: a ready ``ToolContext`` (instead of state/config/tool_context), or a
                function of no arguments that makes one. The function is called only when
                a tool or ``invoke`` can see the context, so a step whose tools take none
                never builds it (agents pass one).
            calls: run only these calls (default: all of the message's).
            invoke: runs one call instead of ``tool.call(arguments, context)`` (agents
                put their interceptors here).
            on_response: called with each tool message as soon as its tool finishes.

        Raises:
            UserError: ``assistant_message`` is not an assistant message with tool calls.
        """
        assistant_message = self._checked(assistant_message, calls)
        make_context = _context_maker(messages, assistant_message, state, config, tool_context)
        done = self._execute(
            assistant_message,
            tools,
            _context_source(context, make_context),
            calls,
            invoke,
            on_response,
        )
        return self._public(messages, assistant_message, done)

    def _execute(
        self,
        assistant_message: AssistantMessage,
        tools: ToolsLike | Mapping[str, ToolCallback],
        make_context: Callable[[], ToolContext],
        calls: Sequence[ToolCall] | None,
        invoke: ToolInvoker | None,
        on_response: Callable[[ToolResponseMessage], None] | None,
    ) -> _Executed:
        """:meth:`execute_tool_calls` after its checks; ``make_context`` is called only when
        something that runs a call can see its :class:`ToolContext`."""
        plan = self._plan(assistant_message, tools, make_context, calls, invoke)
        if len(plan) <= 1 or not self.parallel or self.max_parallel == 1:
            answers = [self._one(p, invoke, on_response) for p in plan]
        else:
            one = self._one
            if self.max_parallel is not None and len(plan) > self.max_parallel:
                one = _bounded(one, self.max_parallel)
            answers = run_all(
                [functools.partial(one, p, invoke, on_response) for p in plan], self.max_workers
            )
        return self._result(plan, answers)

    def _one(
        self,
        planned: _Planned,
        invoke: ToolInvoker | None,
        on_response: Callable[[ToolResponseMessage], None] | None,
    ) -> ToolResponseMessage:
        """Run one planned call, observed; its message for the model."""
        call = planned.call
        watch = observe.tool(call.name, call.id, call.arguments)
        run = self._runner(planned, invoke)
        if watch is observe.IDLE:  # nobody listens: nothing to enter or tell
            answer = self._outcome(planned, run)
        else:
            with watch:
                answer = planned.observed(self._outcome(planned, run), watch)
        if on_response is not None:
            on_response(answer)
        return answer

    def _runner(self, planned: _Planned, invoke: ToolInvoker | None) -> Callable[[], Any]:
        """What runs the call (its tool, or ``invoke``), under the timeout if any."""
        tool = planned.tool
        if tool is None:
            return _unknown  # the outcome names the unknown tool without running anything
        if invoke is not None:
            assert planned.context is not None  # made for every call when there is an invoke
            target = functools.partial(invoke, planned.call, tool, planned.context)
        elif type(tool) is FunctionToolCallback:  # its call(input, context): no lookup
            target = functools.partial(tool.call, planned.call.arguments, planned.context)
        else:
            target = functools.partial(call_tool, tool, planned.call.arguments, planned.context)
        if self.timeout is None:
            return target
        return functools.partial(call_with_timeout, target, self.timeout)

    async def aexecute_tool_calls(
        self,
        messages: Sequence[Message],
        assistant_message: AssistantMessage,
        *,
        tools: ToolsLike | Mapping[str, ToolCallback],
        state: Mapping[str, Any] | None = None,
        config: ConfigLike = None,
        tool_context: Mapping[str, Any] | None = None,
        context: ToolContext | Callable[[], ToolContext] | None = None,
        calls: Sequence[ToolCall] | None = None,
        invoke: AsyncToolInvoker | None = None,
        on_response: Callable[[ToolResponseMessage], None] | None = None,
    ) -> ToolExecutionResult:
        """Async :meth:`execute_tool_calls`: async tools are gathered, sync ones run in threads."""
        assistant_message = self._checked(assistant_message, calls)
        make_context = _context_maker(messages, assistant_message, state, config, tool_context)
        done = await self._aexecute(
            assistant_message,
            tools,
            _context_source(context, make_context),
            calls,
            invoke,
            on_response,
        )
        return self._public(messages, assistant_message, done)

    async def _aexecute(
        self,
        assistant_message: AssistantMessage,
        tools: ToolsLike | Mapping[str, ToolCallback],
        make_context: Callable[[], ToolContext],
        calls: Sequence[ToolCall] | None,
        invoke: AsyncToolInvoker | None,
        on_response: Callable[[ToolResponseMessage], None] | None,
    ) -> _Executed:
        """Async :meth:`_execute`."""
        plan = self._plan(assistant_message, tools, make_context, calls, invoke)

        async def attempt(p: _Planned) -> ToolResponseMessage:
            if p.tool is None:
                return self._outcome(p, lambda: "")
            try:
                if invoke is not None:
                    assert p.context is not None  # made for every call when there is an invoke
                    pending = invoke(p.call, p.tool, p.context)
                else:
                    pending = acall_tool(p.tool, p.call.arguments, p.context)
                value = await within(pending, self.timeout)  # never loses a cancel
            except _STOP:
                raise
            except BaseException as exc:
                caught = exc

                def reraise() -> Any:
                    raise caught

                return self._outcome(p, reraise)
            return self._outcome(p, lambda: value)

        async def one(p: _Planned) -> ToolResponseMessage:
            with observe.tool(p.call.name, p.call.id, p.call.arguments) as watch:
                answer = p.observed(await attempt(p), watch)
            if on_response is not None:
                on_response(answer)
            return answer

        if not self.parallel or self.max_parallel == 1:
            answers = [await one(p) for p in plan]
        elif self.max_parallel is not None and len(plan) > self.max_parallel:
            slots = asyncio.Semaphore(self.max_parallel)

            async def limited(p: _Planned) -> ToolResponseMessage:
                async with slots:
                    return await one(p)

            answers = list(await asyncio.gather(*(limited(p) for p in plan)))
        else:
            answers = list(await asyncio.gather(*(one(p) for p in plan)))
        return self._result(plan, answers)


def _bounded(
    one: Callable[..., ToolResponseMessage], most: int
) -> Callable[..., ToolResponseMessage]:
    """``one`` holding one of ``most`` slots while it runs (one message's calls)."""
    slots = threading.BoundedSemaphore(most)

    def run(*args: Any) -> ToolResponseMessage:
        with slots:
            return one(*args)

    return run


def _unknown() -> Any:
    raise AssertionError("a call to an unknown tool is never run")


def _context_source(
    given: ToolContext | Callable[[], ToolContext] | None, made: Callable[[], ToolContext]
) -> Callable[[], ToolContext]:
    """What makes the calls' context: the caller's function, its ready context, or ``made``."""
    if given is None:
        return made
    if isinstance(given, ToolContext):
        return lambda: given
    if callable(given):
        return given
    raise UserError(
        f"context takes a ToolContext or a function that makes one, got {type(given).__name__}"
    )


def _context_maker(
    messages: Sequence[Message],
    assistant_message: AssistantMessage,
    state: Mapping[str, Any] | None,
    config: ConfigLike,
    tool_context: Mapping[str, Any] | None,
) -> Callable[[], ToolContext]:
    return functools.partial(
        ToolContext,
        state=state,
        config=config,
        context=tool_context,
        history=[*messages, assistant_message],
    )


def _reads_context(tool: ToolCallback | None) -> bool:
    """Whether running ``tool`` may see its ToolContext (a function tool without a
    ``ToolContext`` parameter never does; an unknown name is not run)."""
    if tool is None:
        return False
    if type(tool) is FunctionToolCallback:
        return tool.schema.context_param is not None
    return True


def _metadata(tool: ToolCallback) -> ToolMetadata:
    return getattr(tool, "metadata", None) or ToolMetadata()
