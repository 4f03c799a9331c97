"""Structured final answers: into a pydantic model (``output_type``) or checked against
a raw JSON schema (``output_schema``, Spring AI Alibaba's ``outputSchema``).

A model that supports a response format is asked for JSON that fits; any other model
gets one more tool, named for the answer's type, to call with the final answer. An
answer that does not fit is sent back once with the problem; a second miss raises
:class:`~graphagent.errors.StructuredOutputError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from graphagent._internal.validation import readable
from graphagent.agent._record import AgentRecord
from graphagent.errors import StructuredOutputError, ToolDefinitionError, UserError
from graphagent.messages import AssistantMessage, Message, ToolResponseMessage, UserMessage
from graphagent.models import ChatOptions
from graphagent.tools import ToolDefinition

__all__ = ["FINAL_ANSWER", "StructuredOutput", "is_output_tool", "schema_problem"]

FINAL_ANSWER = " Call this to give your final answer."
"""How an output tool's description ends (interceptors that filter tools keep it)."""


def is_output_tool(tool: Any) -> bool:
    """Whether ``tool`` is a structured agent's output tool."""
    return str(getattr(tool, "description", "")).endswith(FINAL_ANSWER)


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def schema_problem(value: Any, schema: Mapping[str, Any], where: str = "answer") -> str | None:
    """What in ``value`` does not fit the JSON ``schema`` (types, required fields,
    properties, items, enums), or ``None``. A subset of JSON Schema, checked without a
    dependency; keywords it does not know are not checked.

    Example:
        >>> schema = {"type": "object", "required": ["sql"],
        ...           "properties": {"sql": {"type": "string"}}}
        >>> schema_problem({"sql": 1}, schema)
        'answer.sql: expected string, got int'
        >>> schema_problem({"sql": "SELECT 1"}, schema) is None
        True
    """
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or ())
    if kinds:
        allowed = tuple(t for k in kinds for t in _TYPES.get(k, ()))
        bool_ok = "boolean" in kinds
        if allowed and (
            not isinstance(value, allowed) or (isinstance(value, bool) and not bool_ok)
        ):
            return f"{where}: expected {' or '.join(kinds)}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {value!r} is not one of {schema['enum']!r}"
    if isinstance(value, dict):
        missing = [k for k in schema.get("required", ()) if k not in value]
        if missing:
            return f"{where}: missing required field(s) {', '.join(missing)}"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(schema.get("properties") or {}))
            if extra:
                return f"{where}: unexpected field(s) {', '.join(extra)}"
        for key, sub in (schema.get("properties") or {}).items():
            if key in value and isinstance(sub, Mapping):
                problem = schema_problem(value[key], sub, f"{where}.{key}")
                if problem:
                    return problem
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{where}[{i}]")
            if problem:
                return problem
    return None


class StructuredOutput:
    """The structured answer of one agent: how it is asked for and how it is checked."""

    def __init__(
        self,
        agent: str,
        output_type: type[BaseModel] | None,
        output_schema: Mapping[str, Any] | None,
        native: bool,
        tool_names: set[str],
    ) -> None:
        if output_type is not None and output_schema is not None:
            raise UserError(f"agent {agent!r}: give output_type or output_schema, not both")
        if output_schema is not None and not isinstance(output_schema, Mapping):
            raise UserError(
                f"agent {agent!r}: output_schema takes a JSON schema dict, got {output_schema!r}"
            )
        self.agent = agent
        self.output_type = output_type
        self.schema: dict[str, Any] = (
            output_type.model_json_schema()
            if output_type is not None
            else dict(output_schema or {})
        )
        self.name = (
            output_type.__name__
            if output_type is not None
            else str(self.schema.get("title") or "final_answer")
        )
        self.native = native
        self.tool: ToolDefinition | None = None
        if not native:
            if self.name in tool_names:
                raise ToolDefinitionError(
                    f"output {self.name} clashes with a tool of the same name; rename one"
                )
            doc = (output_type.__doc__ if output_type is not None else None) or self.schema.get(
                "description"
            )
            described = (doc or f"Give the final answer as {self.name}.").strip()
            self.tool = ToolDefinition(self.name, described + FINAL_ANSWER, self.schema)

    def options(self, options: ChatOptions | None) -> ChatOptions | None:
        """``options`` asking a native model for the answer's format."""
        if not self.native:
            return options
        fmt: Any = self.output_type
        if fmt is None:
            fmt = {
                "type": "json_schema",
                "json_schema": {"name": self.name, "schema": self.schema, "strict": False},
            }
        return (options or ChatOptions()).merged(ChatOptions(response_format=fmt))

    def _parse(self, text: str) -> tuple[Any, str | None]:
        """The answer parsed from JSON ``text`` and what is wrong with it, if anything."""
        if self.output_type is not None:
            try:
                return self.output_type.model_validate_json(text), None
            except ValidationError as exc:
                return None, readable(exc, "answer")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return None, f"answer is not JSON ({exc.msg})"
        return value, schema_problem(value, self.schema)

    def check(
        self, record: AgentRecord, response: AssistantMessage
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The update the model's answer makes and the record fields it changes."""
        feedback: list[Message]
        problem: str | None
        if self.tool is not None:
            call = next((c for c in response.tool_calls if c.name == self.name), None)
            if call is None:
                if response.tool_calls:
                    return {}, {}  # ordinary tool calls first
                problem = f"you must answer by calling {self.name}"
                if response.content:  # many models answer with the JSON itself: taken if it fits
                    value, wrong = self._parse(response.content)
                    if wrong is None:
                        return {"structured_response": value}, {"run_finished": True}
                    problem = f"{problem} ({wrong})"
                feedback = [UserMessage(f"Your answer is not valid: {problem}.")]
            else:
                value, problem = self._parse(call.arguments or "{}")
                if problem is None:
                    answered = ToolResponseMessage(
                        "Final answer recorded.", tool_call_id=call.id, name=call.name
                    )
                    others = [
                        ToolResponseMessage(
                            "Not run: the final answer was given.", tool_call_id=c.id, name=c.name
                        )
                        for c in response.tool_calls
                        if c.id != call.id
                    ]
                    return {
                        "messages": [response, answered, *others],
                        "structured_response": value,
                    }, {"run_finished": True}
                feedback = [
                    ToolResponseMessage(
                        f"invalid {self.name}: {problem}. Call it again with valid arguments.",
                        tool_call_id=call.id,
                        name=call.name,
                    )
                ]
        else:
            if response.tool_calls:
                return {}, {}
            value, problem = self._parse(response.content)
            if problem is None:
                return {"structured_response": value}, {"run_finished": True}
            feedback = [
                UserMessage(
                    f"Your answer does not match the required JSON schema: {problem}. "
                    "Answer again with JSON only."
                )
            ]
        if record.structured_retries >= 1:
            raise StructuredOutputError(
                f"agent {self.agent!r}: the model's answer did not fit {self.name} after a "
                f"retry: {problem}"
            )
        return {"messages": [response, *feedback]}, {
            "structured_retries": record.structured_retries + 1
        }
