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


def test_hand_written_call_signatures() -> None:
    """The context reaches call(input, context), call(input, *, context) and **kwargs forms."""

    class KeywordOnly(ToolCallback):
        definition = ToolDefinition("kw", "Keyword context.", OBJECT)

        def call(self, tool_input: str, *, context: ToolContext | None = None) -> str:  # type: ignore[override]
            return str(context.metadata.get("user_id") if context else None)

    class Kwargs:
        definition = ToolDefinition("kwargs", "Any keywords.", OBJECT)

        async def acall(self, tool_input: str, **extra: Any) -> str:
            return str(extra["context"].tool_call_id)

    manager = ToolCallingManager()
    cfg = {"metadata": {"user_id": "ada"}}
    result = manager.execute_tool_calls([], ask("kw"), tools=[KeywordOnly()], config=cfg)
    assert result.tool_responses[0].content == "ada"
    result = asyncio.run(manager.aexecute_tool_calls([], ask("kwargs", id="k9"), tools=[Kwargs()]))
    assert result.tool_responses[0].content == "k9"


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


# -- resolution (item 9) ------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"sunny in {city}"


@tool
def get_time(city: str) -> str:
    """Get the local time in a city."""
    return f"noon in {city}"


def _offered(model: FakeChatModel, i: int = 0) -> list[str]:
    return sorted(t.name for t in model.calls[i].tools)


def test_resolver_alone_provides_its_tools() -> None:
    """Spring AI Alibaba's DefaultBuilder: no tools and no names, a listable resolver."""
    from graphagent.tools import DelegatingToolCallbackResolver, StaticToolCallbackResolver

    model = FakeChatModel([ask("get_weather", '{"city": "Oslo"}'), "done"])
    agent = ReactAgent(
        name="a", model=model, resolver=StaticToolCallbackResolver([get_weather, get_time])
    )
    assert agent.call("weather?").text == "done"
    assert _offered(model) == ["get_time", "get_weather"]
    assert model.calls[1].messages[-1].content == "sunny in Oslo"
    delegating = DelegatingToolCallbackResolver([StaticToolCallbackResolver([get_time])])
    model2 = FakeChatModel(["ok"])
    ReactAgent(name="b", model=model2, resolver=delegating).call("time?")
    assert _offered(model2) == ["get_time"]


# origin: model/tool/DefaultToolCallingManagerTests::
# whenToolCallbackResolverEnabledThenUnlistedToolIsResolved
def test_manager_falls_back_to_its_resolver() -> None:
    from graphagent.tools import StaticToolCallbackResolver

    manager = ToolCallingManager(resolver=StaticToolCallbackResolver([get_time]))
    asked = AssistantMessage(
        tool_calls=[
            ToolCall(id="1", name="get_weather", arguments='{"city": "Rome"}'),
            ToolCall(id="2", name="get_time", arguments='{"city": "Rome"}'),
            ToolCall(id="3", name="nope", arguments="{}"),
        ]
    )
    texts = [
        m.content for m in manager.execute_tool_calls([], asked, tools=[get_weather]).tool_responses
    ]
    assert texts[:2] == ["sunny in Rome", "noon in Rome"]
    assert texts[2].startswith("unknown tool 'nope'")
    # a plain function is a resolver too (Spring AI's toolName -> callback lambda)
    fn_manager = ToolCallingManager(resolver=lambda name: get_time if name == "get_time" else None)
    result = fn_manager.execute_tool_calls([], ask("get_time", '{"city": "Oslo"}'), tools=[])
    assert result.tool_responses[0].content == "noon in Oslo"


def test_agent_tools_step_falls_back_to_the_resolver() -> None:
    """A name the agent was not given, but its resolver knows, still runs (Alibaba's tool node)."""
    from graphagent.tools import StaticToolCallbackResolver

    model = FakeChatModel([ask("get_time", '{"city": "Lima"}'), "done"])
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[get_weather],
        resolver=StaticToolCallbackResolver([get_weather, get_time]),
    )
    agent.call("time?")
    assert _offered(model) == ["get_weather"]  # tools given: the resolver only falls back
    assert model.calls[1].messages[-1].content == "noon in Lima"


def test_per_request_tools_are_added_and_sent(saver: Any) -> None:
    model = FakeChatModel([ask("get_time", '{"city": "Oslo"}'), "done", "plain"])
    agent = ReactAgent(name="a", model=model, tools=[get_weather], saver=saver)
    assert agent.call("time?", thread_id="t1", tools=[get_time]).text == "done"
    assert _offered(model, 0) == ["get_time", "get_weather"]
    assert _offered(model, 1) == ["get_time", "get_weather"]
    assert model.calls[1].messages[-1].content == "noon in Oslo"
    agent.call("again", thread_id="t1")  # the next request has the agent's own tools only
    assert _offered(model, 2) == ["get_weather"]


def test_per_request_tools_through_config_and_stream() -> None:
    model = FakeChatModel([ask("get_time", '{"city": "Oslo"}'), "done"])
    agent = ReactAgent(name="a", model=model, tools=[get_weather])
    list(agent.stream("time?", {"configurable": {"tools": [get_time]}}, mode="messages"))
    assert _offered(model) == ["get_time", "get_weather"]
    assert model.calls[1].messages[-1].content == "noon in Oslo"


def test_per_request_narrowing_limits_what_is_offered_and_run() -> None:
    from graphagent.tools import StaticToolCallbackResolver

    model = FakeChatModel([ask("get_weather", '{"city": "Oslo"}'), "done"])
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[get_weather, get_time],
        resolver=StaticToolCallbackResolver([get_weather]),
    )
    asyncio.run(agent.acall("weather?", tool_names=["get_time"]))
    assert _offered(model) == ["get_time"]
    # the model called a tool outside the narrowed set: refused, even though the
    # resolver knows it
    assert model.calls[1].messages[-1].content.startswith("unknown tool 'get_weather'")
    with pytest.raises(UserError, match="names 'get_date', which agent 'a' does not have"):
        agent.call("x", tool_names=["get_date"])
    with pytest.raises(UserError, match="a list of names"):
        agent.call("x", tool_names="get_time")  # type: ignore[arg-type]


def test_same_tool_twice_is_one_different_tools_one_name_is_an_error() -> None:
    from graphagent.errors import ToolDefinitionError
    from graphagent.tools import StaticToolCallbackProvider, StaticToolCallbackResolver

    desk = Desk()
    model = FakeChatModel(["ok"])
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[get_weather, get_weather],
        tool_callback_providers=[StaticToolCallbackProvider(get_weather)],
        tool_names=["get_weather"],
        resolver=StaticToolCallbackResolver([get_weather]),
        method_tools=[desk, desk],
    )
    assert sorted(agent.toolset) == ["currency", "get_weather", "kind", "kind2", "status", "tax"]
    agent.call("hi", tools=[get_weather])  # per request, again: still one
    assert [t.name for t in model.calls[0].tools].count("get_weather") == 1

    @tool(name="get_weather")
    def other_weather(city: str) -> str:
        """Another weather."""
        return "rain"

    with pytest.raises(ToolDefinitionError, match="two tools are named 'get_weather'"):
        ReactAgent(name="b", model=FakeChatModel([]), tools=[get_weather, other_weather])
    with pytest.raises(ToolDefinitionError, match="two tools are named 'get_weather'"):
        ReactAgent(name="c", model=FakeChatModel(["x"]), tools=[get_weather]).call(
            "hi", tools=[other_weather]
        )


def test_per_request_tools_need_an_agent_with_a_tools_step() -> None:
    agent = ReactAgent(name="bare", model=FakeChatModel(["x"]))
    with pytest.raises(UserError, match="built without tools"):
        agent.call("hi", tools=[get_time])


# origin: tool/method/MethodToolCallbackProviderTests::
# whenMultipleToolObjectsWithSameToolNameThenThrow,
# whenToolObjectHasNoToolAnnotatedMethodThenThrow
def test_method_tools_of_two_objects_sharing_a_name_and_of_none() -> None:
    from graphagent.errors import ToolDefinitionError
    from graphagent.tools import collect_tools

    class A:
        @tool
        def valid_tool(self) -> str:
            """From A."""
            return "a"

    class B:
        @tool
        def valid_tool(self) -> str:
            """From B."""
            return "b"

    class Plain:
        def helper(self) -> str:
            return "no tools here"

    with pytest.raises(ToolDefinitionError, match="two tools are named 'valid_tool'"):
        collect_tools(method_tools_of=[A(), B()])
    # two instances of one class are two tools too: each has its own state
    with pytest.raises(ToolDefinitionError, match="two tools are named 'valid_tool'"):
        collect_tools(method_tools_of=[A(), A()])
    with pytest.raises(ToolDefinitionError, match="Plain has no @tool methods"):
        method_tools(Plain())
