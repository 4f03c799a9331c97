"""Security: stored bytes never run code; secrets stay out of model requests, logs and errors."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import httpx
import msgpack
import pytest
import redis

from checkpoint import RedisSaver
from graphagent.agent import ReactAgent
from graphagent.errors import CheckpointError, SerializationError
from graphagent.graph import END, START, StateGraph
from graphagent.models import OpenAIChatModel
from graphagent.tools import ToolContext

API_KEY = "sk-live-DO-NOT-LEAK-0123456789"
TENANT_SECRET = "tenant-secret-DO-NOT-LEAK"


def test_loading_a_tampered_checkpoint_never_runs_or_imports_code(
    redis_url: str, redis_prefix: str, tmp_path: Any
) -> None:
    """Bytes in Redis that name a callable are refused; nothing is imported or executed."""
    client = redis.Redis.from_url(redis_url)
    saver = RedisSaver(client, prefix=redis_prefix)
    g = StateGraph()
    g.add_node("a", lambda s: {"x": 1}).add_edge(START, "a").add_edge("a", END)
    app = g.compile(saver=saver)
    app.invoke({"x": 0}, {"thread_id": "t"})
    marker = tmp_path / "pwned"
    evil = msgpack.packb(
        msgpack.ExtType(8, msgpack.packb(["subprocess.Popen", {"args": ["touch", str(marker)]}]))
    )
    data_key = f"{{{redis_prefix}:t}}:data"
    for field in client.hkeys(data_key):
        client.hset(data_key, field, evil)
    before = set(sys.modules)
    with pytest.raises(SerializationError, match="not registered"):
        app.get_state({"thread_id": "t"})
    assert not marker.exists()
    assert set(sys.modules) - before == set()


def test_tool_context_and_secrets_never_reach_the_model_or_the_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The model sees the tool's own parameters only; the key travels in one header only."""
    seen: list[httpx.Request] = []

    def tool_turn(call_id: str) -> dict[str, Any]:
        return {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                            }
                        ],
                    },
                }
            ]
        }

    answer = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}]}

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=tool_turn("c1") if len(seen) == 1 else answer)

    def lookup(q: str, ctx: ToolContext) -> str:
        """Look something up for the tenant."""
        assert ctx.config.metadata["tenant_token"] == TENANT_SECRET  # the tool does get it
        return f"found {q}"

    model = OpenAIChatModel("m", api_key=API_KEY, transport=httpx.MockTransport(server))
    agent = ReactAgent(name="a", model=model, tools=[lookup])
    caplog.set_level(logging.DEBUG)
    out = agent.invoke("hi", {"metadata": {"tenant_token": TENANT_SECRET}})
    assert out["messages"][-1].text == "ok" and len(seen) == 2
    for request in seen:
        body = request.content.decode()
        assert API_KEY not in body and TENANT_SECRET not in body
        assert "ctx" not in json.dumps(json.loads(body)["tools"])
        assert "ToolContext" not in body
        headers = {k: v for k, v in request.headers.items() if API_KEY in v}
        assert list(headers) == ["authorization"]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert API_KEY not in logged and TENANT_SECRET not in logged
    assert API_KEY not in repr(model) and API_KEY not in repr(agent)


def test_redis_credentials_are_not_logged_or_shown(caplog: pytest.LogCaptureFixture) -> None:
    """A URL with a password: not in logs, errors, or the saver's repr."""
    caplog.set_level(logging.DEBUG)
    saver = RedisSaver.from_url(
        "redis://agent:hunter2-secret@127.0.0.1:1/0", prefix="sec", socket_connect_timeout=0.5
    )
    g = StateGraph()
    g.add_node("a", lambda s: {"x": 1}).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(CheckpointError) as err:
        g.compile(saver=saver).invoke({"x": 0}, {"thread_id": "t"})
    shown = [str(err.value), repr(err.value.__cause__), repr(saver), repr(saver.client)]
    shown += [r.getMessage() for r in caplog.records]
    assert not [s for s in shown if "hunter2-secret" in s]
