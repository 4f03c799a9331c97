"""``AgentTool``: an agent as a tool of another agent, on its own sub-thread."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from graphagent._internal.validation import readable
from graphagent.agent._base import BaseAgent
from graphagent.agent._subagent import output_value
from graphagent.config import RunnableConfig
from graphagent.errors import ToolArgumentsError, UserError
from graphagent.tools import ToolContext, ToolDefinition, ToolMetadata

__all__ = ["AgentTool"]

_TASK_SCHEMA = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The task, in full."}},
    "required": ["input"],
    "additionalProperties": False,
}


def _sub_thread(agent: BaseAgent, ctx: ToolContext | None) -> str | None:
    thread = ctx.config.thread_id if ctx is not None else None
    return f"{thread}/{agent.name}" if thread and agent.graph.saver is not None else None


def _sub_config(agent: BaseAgent, ctx: ToolContext | None) -> RunnableConfig:
    """The sub-agent's run config: its own thread, the caller's metadata and tool context.

    Tools inside the sub-agent need the caller's user id and tenant as much as the
    caller's own tools do. The sub-agent's own ``tool_context`` wins over the caller's;
    nothing else of the caller's run (per-request tools, limits) is passed on.
    """
    if ctx is None:
        return RunnableConfig()
    own: Mapping[str, Any] = getattr(agent, "tool_context", None) or {}
    inherited = {**ctx.context, **own}
    return RunnableConfig(
        thread_id=_sub_thread(agent, ctx),
        metadata=dict(ctx.config.metadata),
        configurable={"tool_context": inherited} if inherited else {},
    )


def _add_note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python 3.10: no add_note, but __notes__ is still where tools look
        exc.__notes__ = [*getattr(exc, "__notes__", []), note]  # type: ignore[attr-defined]


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False, default=str)


class AgentTool:
    """An agent as a tool of another agent, on its own sub-thread.

    By default the model calls it with ``{"input": "the task"}``. With ``input_schema``
    (a pydantic model or a JSON schema dict) the model fills those fields instead; they
    are checked (a pydantic model validates them, a JSON schema's required fields must be
    present) and the sub-agent gets them as JSON in its user message (Spring AI
    Alibaba's ``inputType`` / ``inputSchema``). The sub-agent answers on thread
    ``"<caller thread>/<agent name>"`` (so it remembers earlier tasks of that caller's
    conversation when it has a saver); its answer is the tool's result: its text, or
    the structured answer as JSON when the agent has ``output_type``/``output_schema``.
    The sub-agent's tools see the caller's ``config.metadata`` (user id, tenant) and
    ``tool_context``; the sub-agent's own ``tool_context`` wins over the caller's.

    Args:
        agent: the agent to call.
        name: the tool's name (default: the agent's).
        description: the tool's description (default: the agent's).
        input_schema: the arguments the calling model gives: a pydantic model class or
            a JSON schema dict (default: the agent's ``input_schema``, else one string,
            ``input``).
    """

    def __init__(
        self,
        agent: BaseAgent,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: type[BaseModel] | Mapping[str, Any] | None = None,
    ) -> None:
        text = description or agent.description
        if not text:
            raise UserError(
                f"AgentTool({agent.name!r}) needs a description: give the agent description=... "
                "or pass description= here, so the calling model knows when to use it"
            )
        self.agent = agent
        if input_schema is None:
            input_schema = agent.input_schema
        self.input_type: type[BaseModel] | None = None
        schema: dict[str, Any] = dict(_TASK_SCHEMA)
        self._custom: dict[str, Any] | None = None
        if isinstance(input_schema, type) and issubclass(input_schema, BaseModel):
            self.input_type = input_schema
            schema = input_schema.model_json_schema()
        elif isinstance(input_schema, Mapping):
            if input_schema.get("type", "object") != "object":
                raise UserError(
                    f"AgentTool({agent.name!r}): input_schema must describe a JSON object "
                    '({"type": "object", "properties": ...}), got type '
                    f"{input_schema.get('type')!r}"
                )
            schema = self._custom = {"type": "object", **dict(input_schema)}
        elif input_schema is not None:
            raise UserError(
                f"AgentTool({agent.name!r}): input_schema takes a pydantic model class or a "
                f"JSON schema dict, got {input_schema!r}"
            )
        self._definition = ToolDefinition(name or agent.name, text, schema)

    @property
    def definition(self) -> ToolDefinition:
        """The tool's definition."""
        return self._definition

    @property
    def metadata(self) -> ToolMetadata:
        """Not return_direct."""
        return ToolMetadata()

    def _task(self, tool_input: str | Mapping[str, Any]) -> str:
        name = self.definition.name
        try:
            raw = json.loads(tool_input) if isinstance(tool_input, str) else dict(tool_input)
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(f"arguments for {name!r} are not JSON") from exc
        if not isinstance(raw, dict):
            raise ToolArgumentsError(f"arguments for {name!r} must be a JSON object")
        if self.input_type is not None:
            try:
                return self.input_type.model_validate(raw).model_dump_json()
            except ValidationError as exc:
                raise ToolArgumentsError(
                    f"invalid arguments for {name!r}: {readable(exc, 'arguments')}"
                ) from None
        if self._custom is not None:
            missing = [k for k in self._custom.get("required", ()) if k not in raw]
            if missing:
                raise ToolArgumentsError(
                    f"arguments for {name!r} miss required field(s) {', '.join(missing)}"
                )
            return json.dumps(raw, ensure_ascii=False)
        if not isinstance(raw.get("input"), str):
            raise ToolArgumentsError(f'tool {name!r} takes {{"input": "the task"}}')
        return str(raw["input"])

    def _annotate(self, exc: Exception, task: str, context: ToolContext | None) -> None:
        # the sub-agent's own error keeps its type; the note says which call it was
        thread = context.config.thread_id if context is not None else None
        _add_note(
            exc,
            f"(in agent tool {self.definition.name!r}: sub-agent {self.agent.name!r}, "
            f"caller thread {thread!r}, task {_clip(task)!r})",
        )

    def call(self, tool_input: str | Mapping[str, Any], context: ToolContext | None = None) -> str:
        """Run the sub-agent on the task; its answer's text.

        The sub-agent sees the caller's ``config.metadata`` and ``tool_context`` (its own
        ``tool_context`` wins). A failure is raised as the sub-agent raised it, with a
        note naming the sub-agent, the caller's thread and the task.
        """
        task = self._task(tool_input)
        try:
            values = self.agent.invoke(task, config=_sub_config(self.agent, context))
        except Exception as exc:
            self._annotate(exc, task, context)
            raise
        return _as_text(output_value(self.agent, values))

    async def acall(
        self, tool_input: str | Mapping[str, Any], context: ToolContext | None = None
    ) -> str:
        """Async :meth:`call`."""
        task = self._task(tool_input)
        try:
            values = await self.agent.ainvoke(task, config=_sub_config(self.agent, context))
        except Exception as exc:
            self._annotate(exc, task, context)
            raise
        return _as_text(output_value(self.agent, values))
