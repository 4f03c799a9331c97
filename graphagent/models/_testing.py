"""Test doubles that ship with the library, so users test their agents offline."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from graphagent._internal import observe
from graphagent._internal.streaming import message_sink
from graphagent.errors import ModelResponseError
from graphagent.messages import AssistantMessage, Message
from graphagent.models._base import OptionsLike, streamed_to
from graphagent.models._types import (
    AssistantChunk,
    ChatOptions,
    ToolSpec,
    chunks_of,
    messages_list,
    tool_specs,
)

__all__ = ["FakeChatModel", "FunctionChatModel", "ModelCall"]


@dataclass(frozen=True)
class ModelCall:
    """One request a test double received: what an assertion usually needs."""

    messages: list[Message]
    tools: list[ToolSpec]
    options: ChatOptions | None


def _as_message(value: AssistantMessage | str) -> AssistantMessage:
    return value if isinstance(value, AssistantMessage) else AssistantMessage(str(value))


class _Double:
    supports_response_format = False
    provider = "fake"
    """The provider's name in logs and traces."""

    def __init__(self, chunk_size: int, keep_calls: bool) -> None:
        self.chunk_size = chunk_size
        self.keep_calls = keep_calls
        self.calls: list[ModelCall] = []

    def _answer(self, call: ModelCall) -> AssistantMessage:
        raise NotImplementedError

    def _record(
        self, messages: Sequence[Message], tools: Iterable[Any], options: OptionsLike, stream: bool
    ) -> AssistantMessage:
        call = ModelCall(messages_list(messages), tool_specs(tools), ChatOptions.of(options))
        if self.keep_calls:
            self.calls.append(call)
        watch = observe.chat(
            self.provider,
            type(self).__name__,
            call.messages,
            call.tools,
            call.options,
            stream=stream,
        )
        if watch is observe.IDLE:  # nobody listens: nothing to enter or tell
            return self._answer(call)
        with watch:
            answer = self._answer(call)
            watch.record(answer)
        return answer

    def generate(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AssistantMessage:
        """The next scripted answer (streamed to a graph run's ``"messages"`` stream
        when it is called in a node of a run that streams them)."""
        sink = message_sink()
        if sink is not None:
            return streamed_to(sink, self.stream(messages, tools=tools, options=options))
        return self._record(messages, tools, options, False)

    async def agenerate(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AssistantMessage:
        """Async :meth:`generate`."""
        sink = message_sink()
        if sink is not None:
            return streamed_to(sink, self.stream(messages, tools=tools, options=options))
        return self._record(messages, tools, options, False)

    def stream(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> Iterator[AssistantChunk]:
        """The next answer in chunks of ``chunk_size`` characters (they add up to it)."""
        yield from chunks_of(self._record(messages, tools, options, True), self.chunk_size)

    async def astream(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AsyncIterator[AssistantChunk]:
        """Async :meth:`stream`."""
        for chunk in chunks_of(self._record(messages, tools, options, True), self.chunk_size):
            yield chunk


class FakeChatModel(_Double):
    """Replays scripted answers in order; records every request in ``calls``.

    Args:
        responses: assistant messages (or strings) to answer with, one per request.
        chunk_size: characters per chunk when streamed.
        keep_calls: record every request in ``calls``; ``False`` for long runs (soak
            tests, benchmarks), where the log would hold every conversation in memory.

    Example:
        >>> from graphagent.messages import UserMessage
        >>> model = FakeChatModel(["Hello!", "Bye."])
        >>> model.generate([UserMessage("hi")]).text
        'Hello!'
        >>> [c.text for c in model.stream([UserMessage("bye")]) if c.text]
        ['Bye.']
        >>> model.calls[0].messages[0].text
        'hi'
    """

    def __init__(
        self,
        responses: Sequence[AssistantMessage | str],
        *,
        chunk_size: int = 4,
        keep_calls: bool = True,
    ) -> None:
        super().__init__(chunk_size, keep_calls)
        self.responses = [_as_message(r) for r in responses]
        self._next = 0

    def _answer(self, call: ModelCall) -> AssistantMessage:
        if self._next >= len(self.responses):
            raise ModelResponseError(
                f"FakeChatModel ran out of responses: it was given {len(self.responses)} and "
                f"this is request {self._next + 1}; add more responses"
            )
        answer = self.responses[self._next]
        self._next += 1
        return answer


class FunctionChatModel(_Double):
    """Answers with ``fn(messages, tools)`` (or ``fn(messages, tools, options)``).

    Records every request in ``calls``, like :class:`FakeChatModel`.

    Args:
        fn: the answer for a request, as a message or a string.
        chunk_size: characters per chunk when streamed.
        keep_calls: record every request in ``calls``; ``False`` for long runs (soak
            tests, benchmarks), where the log would hold every conversation in memory.

    Example:
        >>> from graphagent.messages import UserMessage
        >>> echo = FunctionChatModel(lambda messages, tools: f"you said {messages[-1].text}")
        >>> echo.generate([UserMessage("hi")]).text
        'you said hi'
    """

    def __init__(
        self,
        fn: Callable[..., AssistantMessage | str],
        *,
        chunk_size: int = 4,
        keep_calls: bool = True,
    ) -> None:
        super().__init__(chunk_size, keep_calls)
        self.fn = fn
        self._with_options = len(inspect.signature(fn).parameters) >= 3

    def _answer(self, call: ModelCall) -> AssistantMessage:
        if self._with_options:
            return _as_message(self.fn(call.messages, call.tools, call.options))
        return _as_message(self.fn(call.messages, call.tools))
