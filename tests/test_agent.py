"""ReactAgent: the loop, threads, streaming, return_direct, structured output, limits."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import BaseModel

from checkpoint.base import CheckpointSaver
from graphagent.agent import AgentRecord, ReactAgent
from graphagent.errors import (
    MaxIterationsError,
    StructuredOutputError,
    ThreadNotKeptWarning,
    UserError,
)
from graphagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResponseMessage
from graphagent.models import AssistantChunk, FakeChatModel, FunctionChatModel
from graphagent.tools import ToolContext, tool


def calls(*items: tuple[str, str, str], text: str = "") -> AssistantMessage:
    return AssistantMessage(
        text, tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in items]
    )


@tool
def get_weather(city: str, ctx: ToolContext) -> str:
    """Get the weather for a city."""
    ctx.update_state({"results": {"asked_by": ctx.metadata.get("user_id")}})
    return f"Sunny in {city}"


def weather_agent(model: Any, **kw: Any) -> ReactAgent:
    return ReactAgent(name="weather", model=model, tools=[get_weather], **kw)


def test_loop_calls_tools_then_answers() -> None:
    """Model -> tools -> model -> answer; the model never sees ToolContext."""
    model = FakeChatModel([calls(("1", "get_weather", '{"city": "Paris"}')), "Sunny in Paris!"])
    agent = weather_agent(model, system_prompt="Be brief.")
    reply = agent.call("Weather in Paris?", config={"metadata": {"user_id": "u1"}})
    assert reply.text == "Sunny in Paris!"
    second_request = model.calls[1]
    assert isinstance(second_request.messages[0], SystemMessage)
    assert isinstance(second_request.messages[-1], ToolResponseMessage)
    assert second_request.messages[-1].content == "Sunny in Paris"
    assert "ctx" not in str(second_request.tools[0].input_schema)
    assert agent.graph.nodes == ("model", "tools")


def test_thread_continues_across_calls_and_instances(
    saver: CheckpointSaver, make_saver: Any
) -> None:
    """With a saver a second call continues the thread, also from a new agent object."""
    model = FakeChatModel(["Hello Ada.", "Your name is Ada."])
    first = ReactAgent(name="a", model=model, saver=saver)
    first.call("My name is Ada.", thread_id="t1")
    again = ReactAgent(name="a", model=model, saver=make_saver())
    assert again.call("What is my name?", thread_id="t1").text == "Your name is Ada."
    assert [m.text for m in model.calls[1].messages] == [
        "My name is Ada.",
        "Hello Ada.",
        "What is my name?",
    ]
    record = AgentRecord.of(again.get_state(thread_id="t1").values)
    assert record.model_calls == 2 and record.run_model_calls == 1


def test_without_saver_each_call_is_fresh() -> None:
    """No saver: the second call does not see the first (and the thread_id is warned of)."""
    model = FakeChatModel(["one", "two"])
    agent = ReactAgent(name="a", model=model)
    with pytest.warns(ThreadNotKeptWarning, match="has no saver"):
        agent.call("first", thread_id="ignored")
        agent.call("second", thread_id="ignored")
    assert [m.text for m in model.calls[1].messages] == ["second"]


def test_tool_context_update_state_and_tool_context_mapping() -> None:
    """Tools see config metadata and the agent's tool_context; update_state lands in state."""
    seen: dict[str, Any] = {}

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        seen.update(ctx.context)
        ctx.update_state({"results": {"who": ctx.metadata["user_id"]}})
        return "ok"

    model = FakeChatModel([calls(("1", "whoami", "{}")), "done"])
    agent = ReactAgent(name="a", model=model, tools=[whoami], tool_context={"tenant": "acme"})
    out = agent.invoke("who?", {"metadata": {"user_id": "u9"}})
    assert out["results"] == {"who": "u9"} and seen == {"tenant": "acme"}


def test_messages_mode_streams_tokens_and_each_tool_result_as_it_finishes() -> None:
    """Tokens arrive as chunks; a fast tool's result arrives while a slow tool still runs."""
    release = threading.Event()

    @tool
    def fast() -> str:
        """Fast."""
        return "fast done"

    @tool
    def slow() -> str:
        """Slow."""
        assert release.wait(5), "the fast result was not streamed before slow finished"
        return "slow done"

    model = FakeChatModel([calls(("1", "slow", "{}"), ("2", "fast", "{}")), "All done now."])
    agent = ReactAgent(name="a", model=model, tools=[fast, slow])
    tokens: list[str] = []
    tool_results: list[str] = []
    for payload, info in agent.stream("go", mode="messages"):
        if isinstance(payload, AssistantChunk):
            tokens.append(payload.text)
            assert info == {"agent": "a", "node": "model"}
        else:
            tool_results.append(payload.content)
            if payload.content == "fast done":
                release.set()
    assert tool_results == ["fast done", "slow done"]
    assert "".join(tokens) == "All done now." and len([t for t in tokens if t]) > 1


def test_return_direct_ends_with_the_tool_result() -> None:
    """A return_direct tool's result is the answer; the model is not called again."""

    @tool(return_direct=True)
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return f"Order {order_id}: shipped"

    model = FakeChatModel([calls(("1", "lookup_order", '{"order_id": "A1"}'))])
    agent = ReactAgent(name="a", model=model, tools=[lookup_order])
    reply = agent.call("Where is A1?")
    assert reply.text == "Order A1: shipped" and reply.metadata["return_direct"] is True
    assert len(model.calls) == 1


def test_mixed_return_direct_continues() -> None:
    """When not every called tool is return_direct the model is called again."""

    @tool(return_direct=True)
    def direct() -> str:
        """Direct."""
        return "d"

    model = FakeChatModel(
        [calls(("1", "direct", "{}"), ("2", "get_weather", '{"city": "X"}')), "final"]
    )
    agent = ReactAgent(name="a", model=model, tools=[direct, get_weather])
    assert agent.call("go").text == "final"


class Weather(BaseModel):
    """A weather report."""

    city: str
    temp_c: float


def test_structured_output_via_tool_with_one_retry() -> None:
    """Without native support the answer comes as a final tool call; one bad try is sent back."""
    model = FakeChatModel(
        [
            calls(("1", "Weather", '{"city": "Paris"}')),
            calls(("2", "Weather", '{"city": "Paris", "temp_c": 21}')),
        ]
    )
    agent = ReactAgent(name="a", model=model, output_type=Weather)
    out = agent.invoke("weather?")
    assert out["structured_response"] == Weather(city="Paris", temp_c=21)
    assert "temp_c: Field required" in model.calls[1].messages[-1].text
    assert model.calls[0].tools[-1].name == "Weather"


def test_structured_output_fails_after_one_retry() -> None:
    """A second invalid answer raises StructuredOutputError."""
    bad = calls(("1", "Weather", '{"city": 3}'))
    agent = ReactAgent(name="a", model=FakeChatModel([bad, bad]), output_type=Weather)
    with pytest.raises(StructuredOutputError, match="did not fit Weather"):
        agent.invoke("weather?")


def test_structured_output_native_response_format() -> None:
    """A model with response_format support is asked for the schema and its JSON parsed."""

    class NativeModel(FunctionChatModel):
        supports_response_format = True

    answers = iter(['{"city": "Oslo"}', '{"city": "Oslo", "temp_c": 3}'])
    model = NativeModel(lambda messages, tools, options: next(answers))
    out = ReactAgent(name="a", model=model, output_type=Weather).invoke("weather?")
    assert out["structured_response"] == Weather(city="Oslo", temp_c=3)
    assert model.calls[0].options is not None and model.calls[0].options.response_format is Weather


def test_max_iterations_is_a_clear_error() -> None:
    """A model that keeps calling tools stops with MaxIterationsError."""
    looping = FunctionChatModel(lambda m, t: calls((str(len(m)), "get_weather", '{"city": "X"}')))
    agent = weather_agent(looping, max_iterations=3)
    with pytest.raises(MaxIterationsError, match="3 times"):
        agent.call("loop")
    assert len(looping.calls) == 3


def test_instruction_is_templated_once_per_run() -> None:
    """instruction fills {input} and other keys and is added once per run."""
    model = FakeChatModel(["ok", "ok"])
    agent = ReactAgent(name="a", model=model, instruction="Translate to {lang}: {input}")
    agent.invoke({"messages": ["bonjour"], "lang": "English"})
    first = model.calls[0].messages
    assert first[0].text == "Translate to English: bonjour" and first[1].text == "bonjour"


async def test_async_agent() -> None:
    """ainvoke, acall and astream run the same loop with async model and tool calls."""

    @tool
    async def aweather(city: str) -> str:
        """Async weather."""
        return f"Cloudy in {city}"

    model = FakeChatModel(
        [
            calls(("1", "aweather", '{"city": "Rome"}')),
            "Cloudy.",
            calls(("2", "aweather", '{"city": "Oslo"}')),
            "Done.",
        ]
    )
    agent = ReactAgent(name="a", model=model, tools=[aweather])
    assert (await agent.acall("Rome?")).text == "Cloudy."
    events = [e async for e in agent.astream("Oslo?", mode="messages")]
    assert any(
        isinstance(p, ToolResponseMessage) and p.content == "Cloudy in Oslo" for p, _ in events
    )


def test_bad_configuration_is_named() -> None:
    """Missing model, stray interceptors and bad input are clear errors."""
    with pytest.raises(UserError, match="needs a model"):
        ReactAgent(name="x")
    with pytest.raises(UserError, match="interceptors must be"):
        ReactAgent(name="x", model=FakeChatModel([]), interceptors=[object()])  # type: ignore[list-item]
    with pytest.raises(Exception, match="cannot run 'x' on int"):
        ReactAgent(name="x", model=FakeChatModel([])).call(42)
