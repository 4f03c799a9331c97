"""Bad input, fuzzed with hypothesis: tool arguments from a model, provider bodies and
streams, and thread ids or key prefixes that try to leave their keyspace."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpoint import MemorySaver, RedisSaver
from graphagent.agent import ReactAgent
from graphagent.errors import ModelResponseError
from graphagent.messages import AssistantMessage, ToolCall, UserMessage
from graphagent.models import AnthropicChatModel, FakeChatModel, OpenAIChatModel

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def book(city: str, nights: int, vip: bool = False) -> str:
    """Book a hotel."""
    return f"booked {nights} nights in {city}{' (vip)' if vip else ''}"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
arguments = st.one_of(
    st.text(max_size=60),  # anything at all, mostly not JSON
    json_values.map(json.dumps),  # JSON of any shape
    st.fixed_dictionaries(  # the right keys with wrong or extra values
        {"city": json_values, "nights": json_values},
        optional={"vip": json_values, "extra": json_values},
    ).map(json.dumps),
    st.builds(lambda n: '{"city": "' + "x" * n, st.integers(0, 50)),  # truncated
)


@FUZZ
@given(arguments)
def test_any_tool_arguments_from_a_model_never_crash_the_agent(args: str) -> None:
    """Whatever the model sends as arguments, the run ends with an answer and a tool message."""
    call = ToolCall(id="c1", name="book", arguments=args)
    agent = ReactAgent(
        name="a",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "done"]),
        tools=[book],
    )
    out = agent.invoke("book it")
    tool_message = out["messages"][2]
    assert tool_message.role == "tool" and tool_message.tool_call_id == "c1"
    assert tool_message.text.startswith("booked") or "book" in tool_message.text
    assert out["messages"][-1].text == "done"


def test_huge_tool_arguments_are_handled() -> None:
    """A megabyte of arguments is an argument error the model is told about, not a crash."""
    huge = json.dumps({"city": "x" * 1_000_000, "nights": "many"})
    call = ToolCall(id="c1", name="book", arguments=huge)
    agent = ReactAgent(
        name="a", model=FakeChatModel([AssistantMessage(tool_calls=[call]), "ok"]), tools=[book]
    )
    out = agent.invoke("go")
    assert "nights" in out["messages"][2].text and len(out["messages"][2].text) < 10_000


def _openai(handler: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        "m", api_key="sk-x", transport=httpx.MockTransport(handler), max_retries=0
    )


def _anthropic(handler: Any) -> AnthropicChatModel:
    return AnthropicChatModel(
        "m", api_key="sk-x", transport=httpx.MockTransport(handler), max_retries=0
    )


not_json = st.binary(max_size=200).map(lambda b: b"\x00<" + b)  # never valid JSON
wrong_shape = json_values.filter(
    lambda v: not (isinstance(v, dict) and ("choices" in v or "content" in v))
).map(lambda v: json.dumps(v).encode())


@FUZZ
@given(st.one_of(not_json, wrong_shape), st.sampled_from([_openai, _anthropic]))
def test_malformed_bodies_raise_model_response_error(body: bytes, client: Any) -> None:
    """A 200 whose body is not a response of the provider's format is a ModelResponseError."""
    model = client(lambda request: httpx.Response(200, content=body))
    with pytest.raises(ModelResponseError):
        model.generate([UserMessage("hi")])


sse_lines = st.lists(
    st.one_of(
        st.text(max_size=30).map(lambda t: "data: " + t.replace("\n", " ")),
        st.just("data: {"),
        st.just('data: {"choices": 7}'),
        st.just('data: {"choices": [{"delta": {"tool_calls": [{"index": "x"}]}}]}'),
        st.just(": comment"),
        st.just("event: error"),
        st.just(""),
    ),
    min_size=1,
    max_size=12,
)


@FUZZ
@given(sse_lines, st.sampled_from([_openai, _anthropic]))
def test_malformed_streams_raise_model_response_error_or_add_up(
    lines: list[str], client: Any
) -> None:
    """A broken event stream raises ModelResponseError; it never leaks another exception."""
    body = ("\n".join(lines) + "\n\n").encode()
    model = client(
        lambda request: httpx.Response(
            200, content=body, headers={"content-type": "text/event-stream"}
        )
    )
    try:
        chunks = list(model.stream([UserMessage("hi")]))
    except ModelResponseError:
        return
    # what parsed must be a well-formed (possibly empty) answer
    assert all(isinstance(c.content, str) for c in chunks)


def test_a_stream_of_garbage_json_is_a_response_error() -> None:
    """The common case, without luck involved: data that is not JSON."""
    body = b"data: {not json\n\n"
    model = _openai(
        lambda r: httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    with pytest.raises(ModelResponseError):
        list(model.stream([UserMessage("hi")]))


thread_ids = st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s) | st.sampled_from(
    ["}", "{", "{}", "a}:{b", "*", "%7D", "%", "..", "x:head", "\\", "🦉"]
)


@settings(max_examples=60, deadline=None)
@given(thread_ids)
def test_odd_thread_ids_stay_in_their_keyspace(redis_url: str, thread_id: str) -> None:
    """Any thread id maps to keys inside one hash tag under the prefix, and back."""
    client = redis.Redis.from_url(redis_url)
    prefix = f"gafuzz-keyspace-{os.getpid()}"  # test runs in other checkouts share Redis
    saver = RedisSaver(client, prefix=prefix)
    app = _counter(saver)
    try:
        app.invoke({"n": 1}, {"thread_id": thread_id})
        keys = [k.decode() for k in client.scan_iter(match=f"{{{prefix}:*", count=1000)]
        assert len(keys) == 4  # head, cp, seq, data: nothing else, nothing outside the prefix
        assert len({k[: k.rindex("}") + 1] for k in keys}) == 1
        assert len({_slot(k) for k in keys}) == 1
        assert saver.threads() == [thread_id]
        assert app.get_state({"thread_id": thread_id}).values == {"n": 2}
    finally:
        saver.delete_thread(thread_id)
        leftover = list(client.scan_iter(match=f"{{{prefix}:*"))
        if leftover:
            client.delete(*leftover)
    assert list(client.scan_iter(match=f"{{{prefix}:*")) == []


def _slot(key: str) -> str:
    """The part of a key Redis Cluster hashes: the first {...} with something inside."""
    start = key.find("{")
    end = key.find("}", start + 1)
    return key[start + 1 : end] if start != -1 and end > start + 1 else key


def _counter(saver: Any) -> Any:
    from graphagent.graph import END, START, StateGraph

    g = StateGraph()
    g.add_node("inc", lambda s: {"n": s["n"] + 1}).add_edge(START, "inc").add_edge("inc", END)
    return g.compile(saver=saver)


@given(st.tuples(st.text(max_size=5), st.sampled_from("{}"), st.text(max_size=5)).map("".join))
def test_prefixes_with_braces_are_refused(prefix: str) -> None:
    """A prefix that could break the hash tag is refused with the reason."""
    with pytest.raises(ValueError, match="contain none of"):
        RedisSaver(redis.Redis(), prefix=prefix)


def test_memory_saver_threads_are_separate_for_any_ids() -> None:
    """MemorySaver keeps look-alike ids apart."""
    saver = MemorySaver()
    app = _counter(saver)
    for tid in ["a", "a ", "A", "a}", "{a}"]:
        app.invoke({"n": 0}, {"thread_id": tid})
    assert sorted(saver.threads()) == sorted(["a", "a ", "A", "a}", "{a}"])


@pytest.mark.parametrize("data", ["false", "[]", '"text"', "3", "null"])
@pytest.mark.parametrize("client", [_openai, _anthropic])
def test_stream_events_of_the_wrong_json_type_are_response_errors(data: str, client: Any) -> None:
    """Found by the fuzzer: an event whose JSON is not an object is a ModelResponseError."""
    body = f"data: {data}\n\n".encode()
    model = client(
        lambda r: httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    with pytest.raises(ModelResponseError):
        list(model.stream([UserMessage("hi")]))
    body_model = client(lambda r: httpx.Response(200, content=data.encode()))
    with pytest.raises(ModelResponseError):
        body_model.generate([UserMessage("hi")])
