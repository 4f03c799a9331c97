"""The ``ChatModel`` protocol and the base of the HTTP chat models."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from graphagent._internal import observe
from graphagent._internal.ids import new_message_id
from graphagent._internal.streaming import message_sink
from graphagent.errors import ModelResponseError
from graphagent.messages import AssistantMessage, Message
from graphagent.models._http import ModelHTTP
from graphagent.models._sse import EventDecoder, ServerSentEvent, iter_events
from graphagent.models._types import (
    AssistantChunk,
    ChatOptions,
    ChunkAccumulator,
    ToolSpec,
    chunks_of,
    messages_list,
    tool_specs,
)

__all__ = [
    "ChatModel",
    "HTTPChatModel",
    "OptionsLike",
    "StreamParser",
    "astreamed_to",
    "streamed_to",
]

# what parsing a provider payload of an unexpected shape raises (a list where a dict was
# expected raises AttributeError; found by fuzzing): all become ModelResponseError
_UNREADABLE = (AttributeError, KeyError, IndexError, TypeError, ValueError)

_log = logging.getLogger("graphagent.models")

OptionsLike = ChatOptions | Mapping[str, Any] | None


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: messages (and tools) in, an assistant message out.

    ``stream`` yields :class:`AssistantChunk` s that add up to what ``generate`` returns.
    Every method has an async twin.
    """

    def generate(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AssistantMessage:
        """The model's answer."""
        ...

    async def agenerate(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AssistantMessage:
        """Async :meth:`generate`."""
        ...

    def stream(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> Iterator[AssistantChunk]:
        """The model's answer, piece by piece."""
        ...

    def astream(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AsyncIterator[AssistantChunk]:
        """Async :meth:`stream`."""
        ...


def streamed_to(sink: Callable[[Any], None], chunks: Iterator[AssistantChunk]) -> AssistantMessage:
    """Hand ``chunks`` to a run's ``"messages"`` sink as they come; the message they make."""
    acc = ChunkAccumulator()
    for chunk in chunks:
        acc.add(chunk)
        sink(chunk)
    return acc.message()


async def astreamed_to(
    sink: Callable[[Any], None], chunks: AsyncIterator[AssistantChunk]
) -> AssistantMessage:
    """Async :func:`streamed_to`."""
    acc = ChunkAccumulator()
    async for chunk in chunks:
        acc.add(chunk)
        sink(chunk)
    return acc.message()


class StreamParser(Protocol):
    """Turns a provider's stream events into chunks (one per request)."""

    def feed(self, event: ServerSentEvent) -> list[AssistantChunk]:
        """Chunks for one event (possibly none)."""
        ...

    def finish(self) -> None:
        """Called at the end of the stream; raises if it ended wrongly."""
        ...


class _Feed:
    """One stream's events -> chunks: parse errors mapped and redacted, ids made ours.

    Every chunk of one answer carries one fresh message id; the provider's id (which
    some servers reuse, e.g. Ollama's ``chatcmpl-%d``) goes to ``metadata["provider_id"]``.
    """

    def __init__(self, model: HTTPChatModel) -> None:
        self.model = model
        self.parser = model.stream_parser()
        self.id = new_message_id()
        self.provider_id: str | None = None
        self.events = 0

    def __call__(self, event: ServerSentEvent) -> list[AssistantChunk]:
        self.events += 1
        http = self.model.http
        try:
            chunks = self.parser.feed(event)
        except ModelResponseError as exc:
            http.scrub(exc)
            raise
        except _UNREADABLE as exc:
            raise ModelResponseError(
                http.redact(
                    f"{http.where} sent a stream event this client cannot read "
                    f"({type(exc).__name__}: {exc}): {event.data[:200]!r}"
                )
            ) from None
        return [self._ours(c) for c in chunks]

    def _ours(self, chunk: AssistantChunk) -> AssistantChunk:
        update: dict[str, Any] = {"id": self.id}
        if chunk.id and self.provider_id is None:
            self.provider_id = chunk.id
            update["metadata"] = {**chunk.metadata, "provider_id": chunk.id}
        return chunk.model_copy(update=update)

    def finish(self) -> None:
        try:
            self.parser.finish()
        except ModelResponseError as exc:
            self.model.http.scrub(exc)
            raise


class HTTPChatModel:
    """A chat model spoken to over HTTP: subclasses build bodies and parse answers.

    Subclasses set ``path`` and implement ``build_body``, ``parse_response`` and
    ``stream_parser``; everything else (sync/async, streaming, retries) is here.
    """

    path = ""
    supports_response_format = False
    provider = ""
    """The provider's name in logs and traces (``gen_ai.provider.name``)."""

    def __init__(self, model: str, http: ModelHTTP, options: ChatOptions) -> None:
        self.model = model
        self.http = http
        self.default_options = options

    def build_body(
        self, messages: list[Message], tools: list[ToolSpec], options: ChatOptions, stream: bool
    ) -> dict[str, Any]:
        """The request body."""
        raise NotImplementedError

    def parse_response(self, body: dict[str, Any]) -> AssistantMessage:
        """The message in a response body."""
        raise NotImplementedError

    def stream_parser(self) -> StreamParser:
        """A parser for one streamed answer."""
        raise NotImplementedError

    def _body(
        self, messages: Sequence[Message], tools: list[Any], options: ChatOptions, stream: bool
    ) -> dict[str, Any]:
        return self.build_body(messages_list(messages), tool_specs(tools), options, stream)

    def _observe(
        self, messages: Sequence[Message], tools: list[Any], options: ChatOptions, stream: bool
    ) -> observe.Watch:
        where = self.http.where
        return observe.chat(
            self.provider, self.model, messages, tools, options, stream=stream, server=where
        )

    def _parse(self, body: dict[str, Any]) -> AssistantMessage:
        try:
            return self.parse_response(body)
        except ModelResponseError as exc:
            self.http.scrub(exc)
            raise
        except _UNREADABLE as exc:
            raise ModelResponseError(
                self.http.redact(
                    f"{self.http.where} answered with a body this client cannot read "
                    f"({type(exc).__name__}: {exc}): {str(body)[:200]}"
                )
            ) from None  # the cause's text could hold the body, and with it an echoed key

    def generate(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AssistantMessage:
        """The model's answer (see :class:`ChatModel`).

        Called in a graph node while the run streams ``"messages"``, it streams the answer
        and hands the run each chunk (the answer is the same).
        """
        sink = message_sink()
        if sink is not None:
            return streamed_to(sink, self.stream(messages, tools=tools, options=options))
        tools, merged = list(tools), self.default_options.merged(ChatOptions.of(options))
        with self._observe(messages, tools, merged, stream=False) as watch:
            body = self._body(messages, tools, merged, stream=False)
            answer = self._parse(self.http.post_json(self.path, body))
            watch.record(answer)
        return answer

    async def agenerate(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AssistantMessage:
        """Async :meth:`generate`."""
        sink = message_sink()
        if sink is not None:
            chunks = self.astream(messages, tools=tools, options=options)
            return await astreamed_to(sink, chunks)
        tools, merged = list(tools), self.default_options.merged(ChatOptions.of(options))
        with self._observe(messages, tools, merged, stream=False) as watch:
            body = self._body(messages, tools, merged, stream=False)
            answer = self._parse(await self.http.apost_json(self.path, body))
            watch.record(answer)
        return answer

    def stream(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> Iterator[AssistantChunk]:
        """The answer piece by piece, as the server sends it.

        A server that answers with an empty event stream (llama-cpp-python does when
        tools are given) is asked once more without streaming: nothing was received, so
        nothing is repeated, and the answer arrives as chunks all the same.
        """
        tools, merged = list(tools), self.default_options.merged(ChatOptions.of(options))
        with self._observe(messages, tools, merged, stream=True) as watch:
            body = self._body(messages, tools, merged, stream=True)
            feed = _Feed(self)
            seen = ChunkAccumulator() if watch is not observe.IDLE else None
            for event in iter_events(self.http.stream_lines(self.path, body)):
                for chunk in feed(event):
                    if seen is not None:
                        seen.add(chunk)
                    yield chunk
            if feed.events == 0:
                _log.info("%s sent an empty stream; asking without streaming", self.http.where)
                answer = self.generate(messages, tools=tools, options=options)
                watch.record(answer)
                yield from chunks_of(answer, 1 << 20)
                return
            feed.finish()
            if seen is not None:
                watch.record(seen.message())

    async def astream(
        self, messages: Sequence[Message], *, tools: Iterable[Any] = (), options: OptionsLike = None
    ) -> AsyncIterator[AssistantChunk]:
        """Async :meth:`stream`."""
        tools, merged = list(tools), self.default_options.merged(ChatOptions.of(options))
        with self._observe(messages, tools, merged, stream=True) as watch:
            body = self._body(messages, tools, merged, stream=True)
            feed = _Feed(self)
            seen = ChunkAccumulator() if watch is not observe.IDLE else None
            decoder = EventDecoder()
            async for line in self.http.astream_lines(self.path, body):
                event = decoder.feed(line)
                if event is not None:
                    for chunk in feed(event):
                        if seen is not None:
                            seen.add(chunk)
                        yield chunk
            last = decoder.flush()
            if last is not None:
                for chunk in feed(last):
                    if seen is not None:
                        seen.add(chunk)
                    yield chunk
            if feed.events == 0:
                _log.info("%s sent an empty stream; asking without streaming", self.http.where)
                answer = await self.agenerate(messages, tools=tools, options=options)
                watch.record(answer)
                for chunk in chunks_of(answer, 1 << 20):
                    yield chunk
                return
            feed.finish()
            if seen is not None:
                watch.record(seen.message())

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()

    async def aclose(self) -> None:
        """Close the async HTTP connections."""
        await self.http.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model!r} at {self.http.where}>"
