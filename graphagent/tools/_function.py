"""Tools from Python functions and methods: ``@tool``, ``FunctionToolCallback``, methods."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any, overload

import pydantic_core
from pydantic import BaseModel, ValidationError

from graphagent._executor import in_thread
from graphagent._internal.callables import is_async_callable
from graphagent._internal.handoff import hand_off
from graphagent._internal.results import (
    ResultConverter,
    ToolOutput,
    default_result_converter,
    has_parts,
    media_output,
)
from graphagent._internal.validation import readable
from graphagent.errors import ToolArgumentsError, ToolDefinitionError, UserError
from graphagent.tools._context import ToolContext
from graphagent.tools._definition import ToolDefinition, ToolMetadata
from graphagent.tools._schema import (
    FunctionSchema,
    function_schema,
    parse_docstring,
    schema_from_mapping,
)

__all__ = ["FunctionToolCallback", "method_tools", "tool"]


def _loads(text: str) -> Any:
    """``json.loads``, through pydantic's parser first: several times faster for a call's
    few bytes; what that one refuses (bad JSON, lone surrogates) json reads, or explains
    as it always did."""
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return json.loads(text)


def description_from_name(name: str) -> str:
    """A description made from a tool's name: ``get_current_weather`` -> "get current weather"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return re.sub(r"[\s_\-.]+", " ", words).strip().lower()


def _is_method(fn: Callable[..., Any]) -> bool:
    params = list(inspect.signature(fn).parameters)
    return bool(params) and params[0] in ("self", "cls") and "." in fn.__qualname__


class FunctionToolCallback:
    """A tool made from a Python function (sync or async).

    Args:
        name: the name the model calls it by.
        fn: the function. Its parameters become the schema, unless ``input_type`` or
            ``input_schema`` is given. A parameter annotated ``ToolContext`` is injected.
        description: what the tool does (default: the docstring's description).
        input_type: a pydantic model: ``fn`` takes one argument, an instance of it.
        input_schema: a JSON schema dict: ``fn`` takes one argument, the parsed dict.
        return_direct: the result is the final answer (see :class:`ToolMetadata`).
        result_converter: turns the return value into text (default: JSON for non-strings).
            A function that returns an ``ImagePart`` or ``FilePart`` (or a list holding
            some) keeps them: they reach the model beside the text of the other items.

    Example:
        >>> def add(a: int, b: int) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> t = FunctionToolCallback("add", add)
        >>> t.call('{"a": 2, "b": 3}')
        '5'
    """

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        description: str | None = None,
        input_type: type[BaseModel] | None = None,
        input_schema: Mapping[str, Any] | None = None,
        return_direct: bool = False,
        result_converter: ResultConverter | None = None,
        _method: bool | None = None,
        _schema: FunctionSchema | None = None,
    ) -> None:
        if not name or not isinstance(name, str):
            raise ToolDefinitionError(f"a tool needs a non-empty name, got {name!r}")
        if input_type is not None and input_schema is not None:
            raise ToolDefinitionError(f"tool {name!r}: give input_type or input_schema, not both")
        # @tool over @staticmethod / @classmethod: the function inside is the tool
        self.binds_class = isinstance(fn, classmethod)
        if isinstance(fn, (staticmethod, classmethod)):
            if _method is None:
                _method = self.binds_class
            fn = fn.__func__
        self.fn = fn
        self.method = _is_method(fn) if _method is None else _method
        self.is_async = is_async_callable(fn)
        self.result_converter = result_converter or default_result_converter
        self._input_schema = dict(input_schema) if input_schema is not None else None
        self._return_direct = return_direct
        if _schema is not None:
            self.schema = _schema
        elif input_schema is not None:
            self.schema = self._dict_schema(name, fn, input_schema)
        else:
            self.schema = function_schema(
                fn, name=name, skip_first=self.method, input_type=input_type
            )
        text = description if description is not None else self.schema.description
        if not text:
            # Spring AI does the same (and logs a warning): the tool still works, but a
            # model picks tools by their descriptions
            text = description_from_name(name) or name
            warnings.warn(
                f"tool {name!r} has no description, so the model is told {text!r}; "
                "give it a docstring or description=...",
                UserWarning,
                stacklevel=_caller_level(),
            )
        self._definition = ToolDefinition(name, text, self.schema.json_schema)
        self._metadata = ToolMetadata(return_direct=return_direct)

    def _dict_schema(
        self, name: str, fn: Callable[..., Any], schema: Mapping[str, Any]
    ) -> FunctionSchema:
        checked = schema_from_mapping(schema)
        params = list(inspect.signature(fn).parameters.values())[1 if self.method else 0 :]
        hints = getattr(fn, "__annotations__", {})
        context = [p.name for p in params if hints.get(p.name) in (ToolContext, "ToolContext")]
        inputs = [p.name for p in params if p.name not in context]
        if len(inputs) != 1 or len(context) > 1:
            raise ToolDefinitionError(
                f"tool {name!r}: with input_schema=..., the function takes one argument (the "
                f"parsed arguments dict) and optionally a ToolContext; it takes {inputs}"
            )
        description = parse_docstring(inspect.getdoc(fn))[0]
        return FunctionSchema(
            _AnyDict, checked, description, context[0] if context else None, inputs[0]
        )

    @property
    def definition(self) -> ToolDefinition:
        """What a model is told about the tool."""
        return self._definition

    @property
    def metadata(self) -> ToolMetadata:
        """How the result is used."""
        return self._metadata

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._definition.name

    # -- binding methods --------------------------------------------------------------

    def __get__(self, obj: Any, objtype: Any = None) -> FunctionToolCallback:
        if self.method and self.binds_class and objtype is not None:
            return self.bind(objtype)
        if obj is None or not self.method:
            return self
        return self.bind(obj)

    def bind(self, obj: Any) -> FunctionToolCallback:
        """This method tool bound to the instance ``obj`` (a classmethod: to its class)."""
        if not self.method:
            return self
        if self.binds_class and not isinstance(obj, type):
            obj = type(obj)
        return FunctionToolCallback(
            self.name,
            types.MethodType(self.fn, obj),
            description=self._definition.description,
            return_direct=self._return_direct,
            result_converter=self.result_converter,
            _method=False,
            _schema=self.schema,
        )

    # -- calling -------------------------------------------------------------------------

    def _arguments(
        self, tool_input: str | Mapping[str, Any], context: ToolContext | None
    ) -> dict[str, Any]:
        if self.method:
            raise UserError(
                f"tool {self.name!r} is a method: use it from an instance (obj.{self.name}) "
                "or through method_tools(obj)"
            )
        # a str first: the Mapping check alone is an ABC instance check
        if type(tool_input) is not str and isinstance(tool_input, Mapping):
            raw: Any = dict(tool_input)
        elif not tool_input or not tool_input.strip():
            raw = {}
        else:
            try:
                raw = _loads(tool_input)
            except json.JSONDecodeError as exc:
                raise ToolArgumentsError(
                    f"the arguments for tool {self.name!r} are not valid JSON ({exc.msg} at "
                    f"position {exc.pos}); send a JSON object that matches the tool's schema"
                ) from None
        if not isinstance(raw, dict):
            raise ToolArgumentsError(
                f"the arguments for tool {self.name!r} must be a JSON object, "
                f"got {type(raw).__name__}"
            )
        if self._input_schema is not None:
            missing = [k for k in self._input_schema.get("required", ()) if k not in raw]
            if missing:
                raise ToolArgumentsError(
                    f"invalid arguments for tool {self.name!r}: missing {', '.join(missing)}"
                )
            kwargs: dict[str, Any] = {self.schema.single_input or "input": raw}
        else:
            try:
                validated = self.schema.validate(raw)
            except ValidationError as exc:
                raise ToolArgumentsError(
                    f"invalid arguments for tool {self.name!r}: {readable(exc)}"
                ) from None
            kwargs = self.schema.kwargs(validated)
        if self.schema.context_param is not None:
            kwargs[self.schema.context_param] = context or ToolContext()
        return kwargs

    def call(
        self, tool_input: str | Mapping[str, Any], context: ToolContext | None = None
    ) -> ToolOutput:
        """Validate the model's JSON arguments, run the function, convert the result.

        The result is text, unless the function returned an image or file part (or a
        list holding some): then the parts are kept and the rest converted to text.

        Raises:
            ToolArgumentsError: the arguments are not valid JSON or do not fit the schema.
        """
        kwargs = self._arguments(tool_input, context)
        result = self.fn(**kwargs)
        if self.is_async:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                result = asyncio.run(result)
            else:
                result.close()
                raise UserError(
                    f"tool {self.name!r} is async and an event loop is running; use acall()"
                )
        hand_off(result)  # Command(graph=Command.PARENT): a handoff, raised to the graph
        return self._converted(result)

    async def acall(
        self, tool_input: str | Mapping[str, Any], context: ToolContext | None = None
    ) -> ToolOutput:
        """Async :meth:`call`; a sync function runs in a worker thread."""
        kwargs = self._arguments(tool_input, context)
        if self.is_async:
            result = await self.fn(**kwargs)
        else:
            result = await in_thread(functools.partial(self.fn, **kwargs))
        hand_off(result)
        return self._converted(result)

    def _converted(self, result: Any) -> ToolOutput:
        # images and files are not text: they travel beside it to the model
        if type(result) is not str and has_parts(result):
            return media_output(result, self.result_converter)
        return self.result_converter(result)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (handy in tests)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.name!r}{' (method)' if self.method else ''}>"


class _AnyDict(BaseModel):
    """Placeholder model for ``input_schema`` tools (the dict is passed as is)."""


@overload
def tool(fn: Callable[..., Any], /) -> FunctionToolCallback: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    result_converter: ResultConverter | None = None,
) -> Callable[[Callable[..., Any]], FunctionToolCallback]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    result_converter: ResultConverter | None = None,
) -> FunctionToolCallback | Callable[[Callable[..., Any]], FunctionToolCallback]:
    """Make a tool of a function or method; its signature and docstring become the schema.

    Example:
        >>> from typing import Literal
        >>> @tool
        ... def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
        ...     '''Get the current weather for a city.
        ...
        ...     Args:
        ...         city: City name, e.g. "Paris".
        ...     '''
        ...     return f"21 {unit} in {city}"
        >>> get_weather.definition.input_schema["required"]
        ['city']
        >>> get_weather.call('{"city": "Paris"}')
        '21 C in Paris'
    """

    def make(f: Callable[..., Any]) -> FunctionToolCallback:
        return FunctionToolCallback(
            name or f.__name__,
            f,
            description=description,
            return_direct=return_direct,
            result_converter=result_converter,
        )

    return make(fn) if fn is not None else make


def method_tools(obj: Any) -> list[FunctionToolCallback]:
    """The ``@tool`` methods of an instance, bound to it, in definition order.

    Example:
        >>> class Orders:
        ...     def __init__(self) -> None:
        ...         self._db = {"A1": "shipped"}
        ...     @tool
        ...     def order_status(self, order_id: str) -> str:
        ...         '''Look up an order's status.'''
        ...         return self._db.get(order_id, "unknown")
        >>> [t.name for t in method_tools(Orders())]
        ['order_status']
    """
    found: list[FunctionToolCallback] = []
    seen: set[str] = set()
    for klass in type(obj).__mro__:
        for attr_name, attr in vars(klass).items():
            if isinstance(attr, staticmethod) and isinstance(attr.__func__, FunctionToolCallback):
                attr = attr.__func__  # @staticmethod over @tool
            elif isinstance(attr, classmethod) and isinstance(attr.__func__, FunctionToolCallback):
                attr = attr.__func__.bind(klass)  # @classmethod over @tool
            if isinstance(attr, FunctionToolCallback) and attr_name not in seen:
                seen.add(attr_name)
                found.append(attr.bind(obj))
    if not found:
        raise ToolDefinitionError(
            f"{type(obj).__name__} has no @tool methods; decorate the methods to expose with @tool"
        )
    return found


def _caller_level() -> int:
    """The stack level of the first frame outside graphagent.tools (for warnings)."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(
        "graphagent.tools"
    ):
        frame, level = frame.f_back, level + 1
    return max(level - 1, 1)
