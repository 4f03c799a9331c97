"""OpenTelemetry spans for graph runs, nodes, model requests and tool calls.

Names and attributes follow the OpenTelemetry semantic conventions for generative AI
(``gen_ai.*``): ``invoke_agent {agent}``, ``chat {model}``, ``execute_tool {tool}``.
Graph runs that are not agents are ``graph {name}``, nodes ``node {name}``, with
``graphagent.*`` attributes. Importing this module needs ``opentelemetry-api``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from graphagent._internal.listen import GraphLifecycleListener
from graphagent._internal.observe import ChatInfo, NodeInfo, RunInfo, ToolInfo, content_captured
from graphagent.errors import GraphBubbleUp
from graphagent.observability._logs import error_name, usage_of
from graphagent.observability._redact import exception_attributes

__all__ = ["Tracing"]

_VERSION = "0.1.0"
Attributes = dict[str, Any]


def _clean(attributes: Mapping[str, Any]) -> Attributes:
    """OpenTelemetry takes no ``None`` values: leave those keys out."""
    return {k: v for k, v in attributes.items() if v is not None}


class _Span:
    """One span; made current while its work runs in this context.

    ``current=True``: current from start to finish (work that never yields in between).
    Otherwise current only between ``enter`` and ``exit`` (a run whose events are
    streamed: the caller's code between two events is not inside the run's span).
    """

    def __init__(
        self,
        tracer: trace.Tracer,
        name: str,
        kind: SpanKind,
        attributes: Attributes,
        *,
        current: bool,
    ) -> None:
        self.tracer = tracer
        self.name = name
        self.kind = kind
        self.attributes = attributes
        self.current = current
        self.span: trace.Span = trace.INVALID_SPAN
        self.tokens: list[object] = []

    def start(self) -> None:
        self.span = self.tracer.start_span(self.name, kind=self.kind, attributes=self.attributes)
        if self.current:
            self.enter()

    def enter(self) -> None:
        self.tokens.append(otel_context.attach(trace.set_span_in_context(self.span)))

    def exit(self) -> None:
        otel_context.detach(self.tokens.pop())  # type: ignore[arg-type]

    def interrupted(self) -> None:
        self.span.set_attribute("graphagent.interrupted", True)

    def record(self, result: Any) -> None:
        """What the operation produced (a model's answer, a tool's text)."""

    def failed(self, error: BaseException | str) -> None:
        name = error_name(error)
        self.span.set_attribute("error.type", name)
        self.span.set_status(Status(StatusCode.ERROR, name))

    def finish(self, error: BaseException | None) -> None:
        if isinstance(error, GraphBubbleUp):
            self.interrupted()
        elif error is not None and not isinstance(error, GeneratorExit):
            # not record_exception: its event carries the exception's text, which is data
            self.span.add_event("exception", exception_attributes(error))
            self.failed(error)
        if self.current and self.tokens:
            self.exit()
        self.span.end()


def _parts(message: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    text = getattr(message, "text", None)
    if text:
        parts.append({"type": "text", "content": text})
    for call in getattr(message, "tool_calls", ()) or ():
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        )
    call_id = getattr(message, "tool_call_id", None)
    if call_id is not None:
        parts = [{"type": "tool_call_response", "id": call_id, "response": text or ""}]
    return parts


def _messages_json(messages: Sequence[Any]) -> str:
    out = [{"role": getattr(m, "role", "user"), "parts": _parts(m)} for m in messages]
    return json.dumps(out, ensure_ascii=False, default=str)


class _Chat(_Span):
    def record(self, result: Any) -> None:
        reason, tokens_in, tokens_out = usage_of(result)
        metadata = getattr(result, "metadata", None) or {}
        attributes = _clean(
            {
                "gen_ai.response.id": metadata.get("provider_id"),
                "gen_ai.response.model": metadata.get("model"),
                "gen_ai.response.finish_reasons": [reason] if reason else None,
                "gen_ai.usage.input_tokens": tokens_in,
                "gen_ai.usage.output_tokens": tokens_out,
            }
        )
        if content_captured():
            output = [{"role": "assistant", "parts": _parts(result), "finish_reason": reason}]
            attributes["gen_ai.output.messages"] = json.dumps(output, ensure_ascii=False)
        self.span.set_attributes(attributes)


class _Tool(_Span):
    def record(self, result: Any) -> None:
        if content_captured():
            self.span.set_attribute("gen_ai.tool.call.result", str(result))


_OPTION_ATTRIBUTES = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "stop": "gen_ai.request.stop_sequences",
    "seed": "gen_ai.request.seed",
}


def _server(url: str | None) -> Attributes:
    if not url:
        return {}
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return {"server.address": parts.hostname, "server.port": parts.port or default}


def _agent_model(agent: Any) -> Attributes:
    model = getattr(agent, "model", None)
    if model is None:
        return {}
    name = getattr(model, "model", None)
    return _clean(
        {
            "gen_ai.provider.name": getattr(model, "provider", None) or None,
            "gen_ai.request.model": name if isinstance(name, str) else None,
        }
    )


class Tracing(GraphLifecycleListener):
    """Turns the library's operations into OpenTelemetry spans: a lifecycle listener,
    keeping each operation's span under the operation's info object."""

    def __init__(self, tracer_provider: Any = None) -> None:
        self.tracer = trace.get_tracer("graphagent", _VERSION, tracer_provider=tracer_provider)
        self.spans: dict[object, _Span] = {}

    def _start(self, key: object, span: _Span) -> None:
        self.spans[key] = span
        span.start()

    def _end(self, key: object, error: BaseException | None) -> None:
        span = self.spans.pop(key, None)
        if span is not None:
            span.finish(error)

    # -- runs ----------------------------------------------------------------------------

    def on_run_start(self, run: RunInfo) -> None:
        """Open the run's span."""
        self._start(run, self.run_span(run))

    def on_run_enter(self, run: RunInfo) -> None:
        """The run's span is current while its work runs here."""
        self.spans[run].enter()

    def on_run_exit(self, run: RunInfo) -> None:
        """Not while the caller handles an event."""
        self.spans[run].exit()

    def on_run_end(self, run: RunInfo, values: Any, error: BaseException | None) -> None:
        """Close it (an exception event and the error status if it raised)."""
        self._end(run, error)

    # -- nodes ---------------------------------------------------------------------------

    def on_node_start(self, node: NodeInfo) -> None:
        """Open the node's span, current while the node runs."""
        self._start(node, self.node_span(node))

    def on_interrupt(self, node: NodeInfo) -> None:
        """Mark the span paused."""
        self.spans[node].interrupted()

    def on_node_error(self, node: NodeInfo, error: BaseException) -> None:
        """The error's type and status (its event is on the run's span, which it ends)."""
        self.spans[node].failed(error)

    def on_node_end(self, node: NodeInfo, update: Any, error: BaseException | None) -> None:
        """Close the node's span."""
        self._end(node, error)

    # -- model and tool calls ------------------------------------------------------------

    def on_model_start(self, call: ChatInfo) -> None:
        """Open the request's span."""
        self._start(call, self.chat_span(call))

    def on_model_end(self, call: ChatInfo, answer: Any, error: BaseException | None) -> None:
        """The answer's attributes, then close."""
        if answer is not None:
            self.spans[call].record(answer)
        self._end(call, error)

    def on_tool_start(self, call: ToolInfo) -> None:
        """Open the call's span, current while the tool runs."""
        self._start(call, self.tool_span(call))

    def on_tool_error(self, call: ToolInfo, error: BaseException) -> None:
        """The failure handed to the model: the error's type and status."""
        self.spans[call].failed(error)

    def on_tool_end(self, call: ToolInfo, result: Any, error: BaseException | None) -> None:
        """The result (with content capture), then close."""
        if result is not None:
            self.spans[call].record(result)
        self._end(call, error)

    # -- the spans -----------------------------------------------------------------------

    def run_span(self, info: RunInfo) -> _Span:
        """``invoke_agent {name}`` for an agent's graph, else ``graph {name}``."""
        attributes: Attributes = {
            "graphagent.graph.name": info.graph,
            "graphagent.graph.nested": info.nested,
        }
        agent = info.agent
        if agent is None:
            if info.thread_id is not None:
                attributes["graphagent.thread.id"] = info.thread_id
            return _Span(
                self.tracer, f"graph {info.graph}", SpanKind.INTERNAL, attributes, current=False
            )
        name = getattr(agent, "name", info.graph)
        attributes.update(
            _clean(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": name,
                    "gen_ai.agent.description": getattr(agent, "description", None) or None,
                    "gen_ai.conversation.id": info.thread_id,
                }
            )
        )
        attributes.update(_agent_model(agent))
        return _Span(
            self.tracer, f"invoke_agent {name}", SpanKind.INTERNAL, attributes, current=False
        )

    def node_span(self, info: NodeInfo) -> _Span:
        """``node {name}``, current while the node runs (its model and tool spans nest)."""
        attributes: dict[str, Any] = {
            "graphagent.node.name": info.name,
            "graphagent.node.kind": info.kind,
            "graphagent.node.path": "/".join(info.path),
        }
        if info.attempt > 1:  # a retry under the node's RetryPolicy
            attributes["graphagent.node.attempt"] = info.attempt
        return _Span(self.tracer, f"node {info.name}", SpanKind.INTERNAL, attributes, current=True)

    def chat_span(self, info: ChatInfo) -> _Span:
        """``chat {model}``, a client span with the request's ``gen_ai.*`` attributes."""
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": info.provider,
            "gen_ai.request.model": info.model,
            **_server(info.server),
        }
        for option, key in _OPTION_ATTRIBUTES.items():
            value = getattr(info.options, option, None)
            if value is not None:
                attributes[key] = value
        if content_captured():
            attributes["gen_ai.input.messages"] = _messages_json(info.messages)
        # a streamed answer is not current: the caller's code runs between its chunks
        return _Chat(
            self.tracer,
            f"chat {info.model}",
            SpanKind.CLIENT,
            _clean(attributes),
            current=not info.stream,
        )

    def tool_span(self, info: ToolInfo) -> _Span:
        """``execute_tool {name}``, current while the tool runs."""
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": info.name,
            "gen_ai.tool.call.id": info.call_id,
            "gen_ai.tool.type": "function",
        }
        if content_captured():
            attributes["gen_ai.tool.call.arguments"] = info.arguments
        return _Tool(
            self.tracer, f"execute_tool {info.name}", SpanKind.INTERNAL, attributes, current=True
        )
