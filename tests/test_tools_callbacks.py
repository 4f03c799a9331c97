"""Defining tools the Spring AI ways (issue 14 items 9 and 10).

Ported tests name their origin in spring-projects/spring-ai
(spring-ai-model/src/test/java/org/springframework/ai/...) or the seeds.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict

from graphagent.agent import ReactAgent
from graphagent.errors import ToolArgumentsError, UserError
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.tools import (
    FunctionToolCallback,
    ToolCallback,
    ToolCallingManager,
    ToolContext,
    ToolDefinition,
    ToolMetadata,
    ToolParam,
    method_tools,
    tool,
)

OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}}


def ask(name: str, arguments: str = "{}", id: str = "c1") -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=id, name=name, arguments=arguments)])


def run(t: Any, arguments: str = "{}") -> str:
    manager = ToolCallingManager()
    return (
        manager.execute_tool_calls([], ask(t.definition.name, arguments), tools=[t])
        .tool_responses[0]
        .content
    )


# -- ToolCallback's defaults ----------------------------------------------------------


class Shout(ToolCallback):
    """The smallest hand-written tool: a definition and call(tool_input)."""

    definition = ToolDefinition("shout", "Say it louder.", OBJECT)

    def call(self, tool_input: str) -> str:  # type: ignore[override]
        return tool_input.upper()


# origin: model/tool/DefaultToolCallingManagerTest (its anonymous ToolCallback, call(String) only)
def test_minimal_hand_written_tool_gets_defaults() -> None:
    shout = Shout()
    assert shout.metadata == ToolMetadata()
    assert run(shout, '{"text": "hi"}') == '{"TEXT": "HI"}'
    assert asyncio.run(shout.acall('{"text": "a"}')) == '{"TEXT": "A"}'
    manager = ToolCallingManager()
    result = asyncio.run(manager.aexecute_tool_calls([], ask("shout", '"x"'), tools=[shout]))
    assert result.tool_responses[0].content == '"X"'


def test_hand_written_tool_with_context_instance_definition_and_return_direct() -> None:
    class Who(ToolCallback):
        def __init__(self) -> None:
            self.definition = ToolDefinition("who", "Who asks.", OBJECT)
            self.metadata = ToolMetadata(return_direct=True)

        def call(self, tool_input: str, context: ToolContext | None = None) -> str:
            assert context is not None
            return str(context.metadata.get("user_id"))

    model = FakeChatModel([ask("who")])
    agent = ReactAgent(name="a", model=model, tools=[Who()])
    answer = agent.call("who am I", config={"metadata": {"user_id": "ada"}})
    assert answer.text == "ada" and answer.metadata.get("return_direct") is True


def test_async_only_hand_written_tool_runs_from_sync_code() -> None:
    class Later(ToolCallback):
        definition = ToolDefinition("later", "Answer later.", OBJECT)

        async def acall(self, tool_input: str, context: ToolContext | None = None) -> str:
            await asyncio.sleep(0)
            return "later"

    assert run(Later()) == "later"
    assert Later().call("{}") == "later"


def test_duck_typed_tool_without_metadata_or_acall() -> None:
    """Not a subclass: a definition and call are enough, in the manager and in an agent."""

    class Bare:
        definition = ToolDefinition("bare", "A bare tool.", OBJECT)

        def call(self, tool_input: str, context: Any = None) -> str:
            return "bare"

    assert run(Bare()) == "bare"
    model = FakeChatModel([ask("bare"), "done"])
    assert ReactAgent(name="a", model=model, tools=[Bare()]).call("go").text == "done"
    assert model.calls[0].tools[0].name == "bare"


def test_tool_without_call_or_acall_is_named() -> None:
    class Empty(ToolCallback):
        definition = ToolDefinition("empty", "Nothing.", OBJECT)

    with pytest.raises(NotImplementedError, match="Empty is a ToolCallback without call"):
        Empty().call("{}")
    with pytest.raises(NotImplementedError, match="without call"):
        asyncio.run(Empty().acall("{}"))


# -- FunctionToolCallback -------------------------------------------------------------


class WeatherRequest(BaseModel):
    """A weather request."""

    location: Annotated[str, ToolParam("City and country, e.g. Paris, France")]
    unit: Annotated[str, ToolParam("C or F", required=False)]


# origin: seeds 001 (Spring AI Alibaba tools): FunctionToolCallback.builder("get_weather",
# new WeatherFunction()).inputType(WeatherRequest.class), with a bare lambda for the function
def test_function_tool_with_input_type_and_unannotated_lambda() -> None:
    weather = FunctionToolCallback(
        "get_weather",
        lambda r: f"sunny in {r.location} ({r.unit or 'C'})",
        description="Get the weather",
        input_type=WeatherRequest,
    )
    assert weather.call('{"location": "Paris"}') == "sunny in Paris (C)"
    schema = weather.definition.input_schema
    assert schema["properties"]["location"]["description"] == "City and country, e.g. Paris, France"
    assert schema["required"] == ["location"]
    assert schema["additionalProperties"] is False


# origin: tool/function/FunctionToolCallbackTest::testBiFunctionToolCall (input and context)
def test_function_tool_bifunction_lambda_gets_the_context() -> None:
    seen: list[ToolContext] = []
    echo = FunctionToolCallback(
        "echo",
        lambda r, ctx: seen.append(ctx) or r.location,
        description="Echo",
        input_type=WeatherRequest,
    )
    ctx = ToolContext(config={"metadata": {"user_id": "u1"}})
    assert echo.call('{"location": "Oslo"}', ctx) == "Oslo"
    assert seen[0] is ctx
    assert set(echo.definition.input_schema["properties"]) == {"location", "unit"}


def test_toolparam_in_nested_models_and_nested_objects_are_closed() -> None:
    class Address(BaseModel):
        street: Annotated[str, ToolParam("Street and number")]
        floor: Annotated[int, ToolParam("Floor", required=False)]

    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")
        tag: str

    @tool
    def ship(to: Address, labels: list[Address]) -> str:
        """Ship a parcel."""
        return f"{to.street}/{to.floor}/{len(labels)}"

    schema = ship.definition.input_schema
    address = schema["$defs"]["Address"]
    assert address["properties"]["street"]["description"] == "Street and number"
    assert address["required"] == ["street"]
    assert address["additionalProperties"] is False
    assert ship.call('{"to": {"street": "1 rue"}, "labels": []}') == "1 rue/None/0"
    # the schema says nested extras are not allowed, and validation agrees
    with pytest.raises(ToolArgumentsError, match=r"to\.color: Extra inputs"):
        ship.call('{"to": {"street": "1 rue", "color": "red"}, "labels": []}')

    @tool
    def tagged(item: Loose) -> str:
        """Tag an item."""
        return str(item.model_extra)

    # a model that allows extras says so, and keeps them
    assert tagged.definition.input_schema["$defs"]["Loose"]["additionalProperties"] is True
    assert tagged.call('{"item": {"tag": "a", "more": 1}}') == "{'more': 1}"


# origin: tool/support/ToolUtilsTests (getToolDescriptionFromName), with Python names
def test_no_docstring_falls_back_to_the_name_with_a_warning() -> None:

    def getCurrentWeather(city: str) -> str:
        return city

    def get_stock_price(sku: str) -> str:
        return sku

    with pytest.warns(UserWarning, match="no description"):
        assert tool(getCurrentWeather).definition.description == "get current weather"
    with pytest.warns(UserWarning, match="give it a docstring"):
        assert tool(get_stock_price).definition.description == "get stock price"
    with pytest.warns(UserWarning):
        bare = FunctionToolCallback("lookup_order", lambda r: r.location, input_type=WeatherRequest)
    assert bare.definition.description == "lookup order"


# -- methods ----------------------------------------------------------------------------


class Desk:
    prefix = "desk"

    def __init__(self) -> None:
        self.orders = {"A1": "shipped"}

    @tool
    def status(self, order_id: str) -> str:
        """An order's status."""
        return self.orders.get(order_id, "unknown")

    @tool
    @staticmethod
    def tax(amount: float) -> float:
        """VAT on an amount."""
        return round(amount * 0.2, 2)

    @staticmethod
    @tool
    def currency() -> str:
        """The desk's currency."""
        return "EUR"

    @tool
    @classmethod
    def kind(cls) -> str:
        """What this is."""
        return cls.prefix

    @classmethod
    @tool
    def kind2(cls) -> str:
        """What this is, again."""
        return cls.prefix + "2"


# origin: tool/method/MethodToolCallbackProviderTests (static and instance @Tool methods)
def test_method_tools_finds_instance_static_and_class_methods() -> None:
    tools = {t.name: t for t in method_tools(Desk())}
    assert set(tools) == {"status", "tax", "currency", "kind", "kind2"}
    assert tools["status"].call('{"order_id": "A1"}') == "shipped"
    assert tools["tax"].call('{"amount": 10}') == "2.0"
    assert tools["currency"].call("{}") == "EUR"
    assert tools["kind"].call("{}") == "desk" and tools["kind2"].call("{}") == "desk2"
    assert set(tools["tax"].definition.input_schema["properties"]) == {"amount"}
    assert tools["kind"].definition.input_schema["properties"] == {}
    # the class still works as Python
    assert Desk.tax(5) == 1.0 and Desk.currency() == "EUR"


def test_bare_static_and_class_method_objects() -> None:
    """Taken from a class's __dict__: a staticmethod is its tool; a classmethod is refused."""
    manager = ToolCallingManager()
    result = manager.execute_tool_calls([], ask("currency"), tools=[vars(Desk)["currency"]])
    assert result.tool_responses[0].content == "EUR"
    with pytest.raises(UserError, match="bare classmethod"):
        ToolCallingManager().execute_tool_calls([], ask("x"), tools=[vars(Desk)["kind2"]])
