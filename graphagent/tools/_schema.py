"""Tool schemas from Python signatures and Google-style docstrings (public pydantic only)."""

from __future__ import annotations

import inspect
import re
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError
from pydantic.fields import FieldInfo

from graphagent.errors import ToolDefinitionError
from graphagent.tools._context import ToolContext
from graphagent.tools._definition import ToolParam

__all__ = ["FunctionSchema", "clean_schema", "function_schema", "parse_docstring"]

_SECTIONS = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|"
    r"Attributes|See Also|Warnings?)\s*:\s*$"
)
_ARG = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    arg_indent: int | None = None
    current: str | None = None
    for line in lines:
        header = _SECTIONS.match(line)
        if header:
            section = header.group(1).lower()
            arg_indent, current = None, None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in ("args", "arguments", "parameters", "params") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if arg_indent is None:
            arg_indent = indent
        match = _ARG.match(line.strip())
        if indent == arg_indent and match:
            current = match.group(1).lstrip("*")
            args[current] = match.group(3).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), args


def clean_schema(schema: Any, *, in_map: bool = False) -> Any:
    """Drop pydantic's ``title`` keywords (noise for models), never a property named title."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and not in_map and isinstance(value, str):
                continue
            out[key] = clean_schema(value, in_map=key in ("properties", "$defs"))
        return out
    if isinstance(schema, list):
        return [clean_schema(v) for v in schema]
    return schema


def close_objects(schema: Any) -> Any:
    """Add ``additionalProperties: false`` to every object with properties that lacks it.

    pydantic writes it only for models that forbid extras (the tool's own arguments);
    nested models and dataclasses get it too, so the model is told the same everywhere.
    A model that allows extras keeps its ``additionalProperties: true``.
    """
    if isinstance(schema, dict):
        out = {k: close_objects(v) for k, v in schema.items()}
        if "properties" in out and out.get("type") == "object":
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [close_objects(v) for v in schema]
    return schema


def _all_closed(schema: Any) -> bool:
    """No object with properties allows extras (then validation may forbid them too)."""
    if isinstance(schema, dict):
        if "properties" in schema and schema.get("additionalProperties", False) is not False:
            return False
        return all(_all_closed(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_all_closed(v) for v in schema)
    return True


def _defining_scope() -> dict[str, Any]:
    """Locals of the code that defined the tool, for annotations naming local classes.

    String annotations (``from __future__ import annotations``) of a function defined
    inside another function can name that function's local classes; pydantic resolves
    forward references the same way.
    """
    frame = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(
        "graphagent.tools"
    ):
        frame = frame.f_back  # type: ignore[assignment]
    return dict(frame.f_locals) if frame is not None else {}


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    return ToolContext in typing.get_args(annotation) and type(None) in typing.get_args(annotation)


@dataclass(frozen=True)
class FunctionSchema:
    """A function's arguments as a pydantic model and a JSON schema.

    Attributes:
        model: validates the model's arguments.
        json_schema: what the model is shown.
        description: from the docstring, before its sections.
        context_param: the name of the ``ToolContext`` parameter, if any.
        single_input: the name of the one structured parameter (``input_type`` tools).
        forbid_extra: nested objects refuse unknown keys when validated, as the schema
            says (when no model in it allows extras, and pydantic can).
    """

    model: type[BaseModel]
    json_schema: dict[str, Any]
    description: str
    context_param: str | None
    single_input: str | None = None
    forbid_extra: bool = False

    def validate(self, raw: dict[str, Any]) -> BaseModel:
        """The model's arguments validated (raises pydantic's ``ValidationError``)."""
        # model_validate's own work, without its keyword handling (once per tool call)
        validator = self.model.__pydantic_validator__
        if self.forbid_extra:
            return validator.validate_python(raw, extra="forbid")  # type: ignore[call-arg,no-any-return,unused-ignore]
        return validator.validate_python(raw)  # type: ignore[no-any-return]

    def kwargs(self, validated: BaseModel) -> dict[str, Any]:
        """The call's keyword arguments from validated input."""
        if self.single_input is not None:
            return {self.single_input: validated}
        # a model's __dict__ holds exactly its fields, in order (extras live elsewhere)
        return dict(validated.__dict__)


def function_schema(
    fn: Callable[..., Any],
    *,
    name: str,
    skip_first: bool = False,
    input_type: type[BaseModel] | None = None,
) -> FunctionSchema:
    """Build the schema of ``fn``'s parameters.

    Every problem in the signature is collected and raised at once.

    Raises:
        ToolDefinitionError: naming each parameter that cannot be described, and why.
    """
    problems: list[str] = []
    description, arg_docs = parse_docstring(inspect.getdoc(fn))
    try:
        hints = typing.get_type_hints(fn, localns=_defining_scope(), include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: cannot read the annotations of {fn.__qualname__}: {exc}"
        ) from exc
    params = list(inspect.signature(fn).parameters.values())
    if skip_first and params:
        params = params[1:]

    context_param: str | None = None
    fields: dict[str, Any] = {}
    structured: list[str] = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            problems.append(
                f"parameter {p.name!r}: *args and **kwargs cannot be described to a model; "
                "name each argument"
            )
            continue
        if input_type is not None:
            # the input's type is input_type, so fn may be a bare lambda (Spring AI's
            # Function/BiFunction): (input) or (input, context)
            hint = hints.get(p.name)
            if (hint is not None and _is_context(hint)) or (hint is None and structured):
                if context_param is not None:
                    problems.append(f"parameter {p.name!r}: only one ToolContext is allowed")
                context_param = p.name
            else:
                structured.append(p.name)
            continue
        if p.name not in hints:
            problems.append(
                f"parameter {p.name!r} has no type annotation; annotate it (e.g. {p.name}: str)"
            )
            continue
        annotation = hints[p.name]
        if _is_context(annotation):
            if context_param is not None:
                problems.append(f"parameter {p.name!r}: only one ToolContext parameter is allowed")
            context_param = p.name
            continue
        structured.append(p.name)
        base: Any = annotation
        extras: tuple[Any, ...] = ()
        if typing.get_origin(annotation) is typing.Annotated:
            base, *rest = typing.get_args(annotation)
            extras = tuple(rest)
        param_info = next((e for e in extras if isinstance(e, ToolParam)), None)
        field_info = next((e for e in extras if isinstance(e, FieldInfo)), None)
        doc = (
            (param_info.description if param_info else None)
            or (field_info.description if field_info else None)
            or arg_docs.get(p.name)
        )
        default: Any = p.default if p.default is not p.empty else ...
        if default is ... and param_info is not None and not param_info.required:
            default = None
            base = base | None
        if field_info is not None:
            annotated: Any = typing.Annotated[base, field_info]
            fields[p.name] = (annotated, Field(default=default, description=doc))
        else:
            fields[p.name] = (base, Field(default=default, description=doc))

    known = {p.name for p in params}
    for documented in arg_docs:
        if documented not in known:
            problems.append(
                f"the docstring documents {documented!r}, which is not a parameter; "
                "fix the Args: section"
            )

    single: str | None = None
    if input_type is not None:
        if len(structured) != 1:
            problems.append(
                "with input_type=..., the function takes exactly one argument (the model "
                f"instance) besides an optional ToolContext; it takes {structured}"
            )
        else:
            single = structured[0]
    if problems:
        raise ToolDefinitionError(
            f"tool {name!r} ({fn.__qualname__}) cannot be described to a model:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )

    model: type[BaseModel]
    if input_type is not None:
        model = input_type
    else:
        try:
            model = create_model(
                f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
            )
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            raise ToolDefinitionError(
                f"tool {name!r} ({fn.__qualname__}) cannot be described to a model: {exc}"
            ) from exc
    try:
        schema = close_objects(clean_schema(model.model_json_schema()))
    except (PydanticSchemaGenerationError, PydanticUserError) as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: no JSON schema for its arguments: {exc}"
        ) from exc
    forbid = _CAN_FORBID and _all_closed(schema)
    return FunctionSchema(model, schema, description, context_param, single, forbid)


# pydantic >= 2.12 can forbid extras for one validation, nested models included
_CAN_FORBID = "extra" in inspect.signature(BaseModel.model_validate).parameters


def schema_from_mapping(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Check a hand-written JSON schema is an object schema and return a copy."""
    if schema.get("type") != "object":
        raise ToolDefinitionError(
            f'input_schema must be a JSON schema with "type": "object", got {dict(schema)!r:.80}'
        )
    return dict(schema)
