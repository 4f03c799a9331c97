"""Defining tools: schemas from signatures and docstrings, ToolContext, errors, resolution."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from graphagent.errors import ToolArgumentsError, ToolDefinitionError, UserError
from graphagent.tools import (
    DelegatingToolCallbackResolver,
    FunctionToolCallback,
    StaticToolCallbackProvider,
    StaticToolCallbackResolver,
    ToolCallback,
    ToolContext,
    ToolParam,
    collect_tools,
    method_tools,
    tool,
)


class Unit(enum.Enum):
    C = "C"
    F = "F"


class Address(BaseModel):
    street: str
    city: str = "Paris"


@dataclasses.dataclass
class Window:
    start: dt.date
    days: int = 1


@tool
def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
    """Get the current weather for a city.

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit.
    """
    return f"21 {unit} in {city}"


def test_schema_primitives_literal_defaults_and_docstring() -> None:
    """Required unless defaulted; Literal becomes an enum; Args: gives descriptions."""
    d = get_weather.definition
    assert d.name == "get_weather"
    assert d.description == "Get the current weather for a city."
    assert d.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": 'City name, e.g. "Paris".'},
            "unit": {
                "type": "string",
                "enum": ["C", "F"],
                "default": "C",
                "description": "Temperature unit.",
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_schema_nested_models_dataclasses_enums_lists_optional() -> None:
    """Nested pydantic models and dataclasses go to $defs; Optional allows null."""

    @tool
    def ship(
        to: Address,
        windows: list[Window],
        unit: Unit,
        tags: dict[str, int],
        note: str | None = None,
        title: Annotated[str, Field(description="Shown on the label")] = "",
    ) -> str:
        """Ship a parcel."""
        return "ok"

    s = ship.definition.input_schema
    assert s["required"] == ["to", "windows", "unit", "tags"]
    assert s["properties"]["to"] == {"$ref": "#/$defs/Address"}
    assert s["properties"]["windows"] == {"type": "array", "items": {"$ref": "#/$defs/Window"}}
    assert s["properties"]["tags"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert s["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert s["properties"]["title"]["description"] == "Shown on the label"
    assert set(s["$defs"]) == {"Address", "Window", "Unit"}
    assert s["$defs"]["Window"]["properties"]["start"] == {"type": "string", "format": "date"}
    assert "title" in s["properties"]  # a parameter named title survives title-stripping
    out = ship.call(
        '{"to": {"street": "1 rue"}, "windows": [{"start": "2026-01-02"}], "unit": "F", "tags": {}}'
    )
    assert out == "ok"


def test_toolparam_optional_without_default() -> None:
    """ToolParam(required=False) makes a parameter optional (None when left out)."""

    @tool
    def search(query: str, lang: Annotated[str, ToolParam("ISO code", required=False)]) -> str:
        """Search."""
        return f"{query}/{lang}"

    s = search.definition.input_schema
    assert s["required"] == ["query"]
    assert s["properties"]["lang"]["description"] == "ISO code"
    assert search.call('{"query": "x"}') == "x/None"


def test_tool_context_injected_not_in_schema() -> None:
    """A ToolContext parameter is filled at call time and never appears in the schema."""
    seen: dict[str, Any] = {}

    @tool(name="account", return_direct=True)
    def account_info(query: str, ctx: ToolContext) -> str:
        """Account details."""
        seen.update(
            user=ctx.config.metadata["user_id"],
            meta=ctx.metadata["user_id"],
            n=len(ctx.state["messages"]),
            call=ctx.tool_call_id,
            extra=ctx.context["tenant"],
            thread=ctx.config.thread_id,
        )
        ctx.update_state({"last_user": ctx.metadata["user_id"]})
        return "ok"

    assert set(account_info.definition.input_schema["properties"]) == {"query"}
    assert "ctx" not in str(account_info.definition)
    assert account_info.metadata.return_direct is True
    ctx = ToolContext(
        state={"messages": [1, 2, 3]},
        config={"thread_id": "t9", "metadata": {"user_id": "u7"}},
        tool_call_id="call-1",
        context={"tenant": "acme"},
    )
    assert account_info.call('{"query": "q"}', ctx) == "ok"
    assert seen == {
        "user": "u7",
        "meta": "u7",
        "n": 3,
        "call": "call-1",
        "extra": "acme",
        "thread": "t9",
    }
    assert ctx.updates == [{"last_user": "u7"}]
    with pytest.raises(TypeError):
        ctx.state["messages"] = []  # type: ignore[index]


def test_signature_problems_collected_in_one_error() -> None:
    """Every problem of a signature is named at definition time, together."""

    def bad(a, *args: int, ctx1: ToolContext, ctx2: ToolContext, **kw: int) -> None:  # type: ignore[no-untyped-def]
        """Bad tool.

        Args:
            ghost: not a parameter.
        """

    with pytest.raises(ToolDefinitionError) as info:
        tool(bad)
    msg = str(info.value)
    assert "'a' has no type annotation" in msg
    assert "'args': *args and **kwargs" in msg and "'kw'" in msg
    assert "only one ToolContext" in msg
    assert "documents 'ghost'" in msg


def test_missing_description_and_unsupported_types() -> None:
    """No docstring: a description from the name, with a warning; no schema: refused."""

    def nodoc(x: int) -> int:
        return x

    with pytest.warns(UserWarning, match="'nodoc' has no description") as caught:
        made = tool(nodoc)
    assert made.definition.description == "nodoc"
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert tool(description="Echo.")(nodoc).call('{"x": 1}') == "1"

    class Opaque:
        pass

    def takes_opaque(x: Opaque) -> None:
        """Takes something odd."""

    with pytest.raises(ToolDefinitionError, match="takes_opaque"):
        tool(takes_opaque)


def test_bad_arguments_are_readable_and_do_not_echo_input() -> None:
    """Invalid JSON and schema failures raise ToolArgumentsError without the input values."""
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        get_weather.call('{"city": ')
    with pytest.raises(ToolArgumentsError, match="must be a JSON object"):
        get_weather.call("[1]")
    with pytest.raises(ToolArgumentsError) as info:
        get_weather.call('{"city": "x", "unit": "K", "password": "hunter2"}')
    text = str(info.value)
    assert "unit: Input should be 'C' or 'F'" in text and "password: Extra inputs" in text
    assert "hunter2" not in text


def test_input_type_and_input_schema() -> None:
    """FunctionToolCallback takes one structured input from a model or a JSON schema."""

    class Query(BaseModel):
        """A product query."""

        sku: str
        qty: int = 1

    def lookup(q: Query) -> dict[str, Any]:
        return {"sku": q.sku, "qty": q.qty}

    t = FunctionToolCallback("lookup", lookup, description="Look up stock", input_type=Query)
    assert t.definition.input_schema["required"] == ["sku"]
    assert t.call('{"sku": "A"}') == '{"sku":"A","qty":1}'

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    raw = FunctionToolCallback(
        "raw", lambda args: args["q"].upper(), description="Raw", input_schema=schema
    )
    assert raw.definition.input_schema == schema
    assert raw.call('{"q": "hi"}') == "HI"
    with pytest.raises(ToolArgumentsError, match="missing q"):
        raw.call("{}")
    with pytest.raises(ToolDefinitionError, match='"type": "object"'):
        FunctionToolCallback("x", lambda a: a, description="x", input_schema={"type": "string"})


def test_method_tools_bind_instances_with_private_state() -> None:
    """@tool methods become tools bound to the instance; self is not in the schema."""

    class Orders:
        def __init__(self, db: dict[str, str]) -> None:
            self._db = db

        @tool
        def order_status(self, order_id: str) -> str:
            """Look up an order."""
            return self._db.get(order_id, "unknown")

        @tool(return_direct=True)
        def cancel(self, order_id: str) -> str:
            """Cancel an order."""
            self._db[order_id] = "cancelled"
            return "done"

    shop = Orders({"A1": "shipped"})
    tools = method_tools(shop)
    assert [t.name for t in tools] == ["order_status", "cancel"]
    assert "self" not in tools[0].definition.input_schema["properties"]
    assert tools[0].call('{"order_id": "A1"}') == "shipped"
    assert shop.order_status.call('{"order_id": "A1"}') == "shipped"
    with pytest.raises(UserError, match="is a method"):
        Orders.order_status.call('{"order_id": "A1"}')
    with pytest.raises(ToolDefinitionError, match="no @tool methods"):
        method_tools(object())


def test_resolution_and_duplicates() -> None:
    """Resolvers find tools by name; duplicates name both sources; names need a resolver."""

    @tool
    def a() -> str:
        """A."""
        return "a"

    static = StaticToolCallbackResolver([a, get_weather])
    assert static.resolve("a") is a and static.resolve("nope") is None
    chain = DelegatingToolCallbackResolver([StaticToolCallbackResolver([]), static])
    assert chain.resolve("get_weather") is get_weather
    found = collect_tools(
        tools=[a], providers=[StaticToolCallbackProvider(get_weather)], names=[], resolver=None
    )
    assert list(found) == ["a", "get_weather"]
    with pytest.raises(ToolDefinitionError, match="need a resolver"):
        collect_tools(names=["a"])
    with pytest.raises(ToolDefinitionError, match="does not know a tool named 'zzz'"):
        collect_tools(names=["zzz"], resolver=static)

    @tool(name="a")
    def other_a() -> str:
        """Another A."""
        return "other"

    with pytest.raises(ToolDefinitionError) as info:
        collect_tools(tools=[a], providers=[StaticToolCallbackProvider(other_a)])
    assert "tools[0]" in str(info.value) and "provider StaticToolCallbackProvider" in str(
        info.value
    )
    assert "other_a" in str(info.value)


def test_result_conversion() -> None:
    """Strings pass through; models, dataclasses, dicts and datetimes become JSON."""

    @tool
    def info() -> Address:
        """Info."""
        return Address(street="1 rue")

    @tool
    def when() -> dict[str, Any]:
        """When."""
        return {"at": dt.datetime(2026, 1, 2, 3, 4), "w": Window(dt.date(2026, 1, 1))}

    @tool(result_converter=lambda r: f"<{r}>")
    def custom() -> int:
        """Custom."""
        return 7

    assert info.call("{}") == '{"street":"1 rue","city":"Paris"}'
    assert when.call("") == '{"at":"2026-01-02T03:04:00","w":{"start":"2026-01-01","days":1}}'
    assert custom.call("{}") == "<7>"


async def test_async_tool_sync_and_async_call() -> None:
    """An async tool works from acall, and from call when no loop is running."""

    @tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        return f"page {url}"

    assert await fetch.acall('{"url": "u"}') == "page u"
    with pytest.raises(UserError, match="use acall"):
        fetch.call('{"url": "u"}')


def test_async_tool_from_sync_code() -> None:
    """Sync code calls an async tool without managing a loop."""

    @tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        return f"page {url}"

    assert fetch.call('{"url": "u"}') == "page u"
    assert isinstance(fetch, ToolCallback)
