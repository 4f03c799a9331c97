"""The README's demo: build a ReactAgent, talk to it on a thread, resume the thread, draw it.

Run with ``make demo`` (or ``python -m graphagent.demo``).

Model: set ``GRAPHAGENT_MODEL`` to ``"provider:model"`` (``openai:gpt-4o-mini`` with
``OPENAI_API_KEY``, ``dashscope:qwen-plus`` with ``DASHSCOPE_API_KEY``, ...), or set
``GRAPHAGENT_BASE_URL`` to a local OpenAI-compatible server (Ollama, llama.cpp, vLLM)
and ``GRAPHAGENT_MODEL`` to its model name. Otherwise the scripted test model answers.

Threads: in the SQLite file ``.graphagent/demo.sqlite`` (``GRAPHAGENT_DB`` names another
file), or in Redis when ``REDIS_URL`` is set. Either way a second run continues the same
conversation, and says so; ``graphagent threads`` and ``graphagent chat`` look there too
when given no store.

``graphagent.demo:agent`` is the demo's agent for the command line (built on first use,
with the same model and saver)::

    graphagent chat graphagent.demo:agent --thread demo-user-42
    graphagent draw graphagent.demo:agent
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Literal

from checkpoint import RedisSaver, SqliteSaver
from checkpoint.base import CheckpointSaver
from graphagent.agent import AgentRecord, ReactAgent
from graphagent.errors import GraphAgentError, ModelConfigError
from graphagent.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import ChatModel, FunctionChatModel, OpenAIChatModel, init_chat_model
from graphagent.tools import ToolContext, tool

# ``agent`` (what ``graphagent chat graphagent.demo:agent`` loads) is built on first use by
# the module's __getattr__, so it is not listed: a star import would open the demo's store
__all__ = [
    "DEFAULT_DB",
    "FORECASTS",
    "REDIS_PREFIX",
    "THREAD",
    "build",
    "get_weather",
    "main",
    "make_model",
    "make_saver",
    "scripted",
    "store",
]

THREAD = "demo-user-42"
DEFAULT_DB = ".graphagent/demo.sqlite"
REDIS_PREFIX = "graphagent"
"""The demo's Redis key prefix: ``RedisSaver``'s and the command line's default too."""
FORECASTS = {"paris": "sunny, 21 C", "oslo": "light snow, -2 C", "tokyo": "rain, 14 C"}


@tool
def get_weather(city: str, ctx: ToolContext) -> str:
    """Get today's weather for a city.

    Args:
        city: The city, e.g. "Paris".
    """
    ctx.update_state({"results": {"last_city": city}})
    return FORECASTS.get(city.lower(), "no forecast available")


def scripted(messages: list[Message], tools: Any) -> AssistantMessage:
    """The offline stand-in for a model: asks for the weather, then answers from the tool."""
    last = messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(f"The weather in {_city(messages)} is {last.content}.")
    text = last.text if isinstance(last, UserMessage) else ""
    city = next((c for c in FORECASTS if c in text.lower()), None)
    if city is not None:
        args = f'{{"city": "{city.title()}"}}'
        return AssistantMessage(
            tool_calls=[ToolCall(id=f"call-{len(messages)}", name="get_weather", arguments=args)]
        )
    asked = [m.text for m in messages if isinstance(m, UserMessage)][:-1]
    return AssistantMessage(f"Earlier in this conversation you asked: {asked}")


def _city(messages: list[Message]) -> str:
    for m in reversed(messages):
        if isinstance(m, AssistantMessage) and m.tool_calls:
            found = re.search(r'"city":\s*"([^"]+)"', m.tool_calls[0].arguments)
            if found:
                return found.group(1)
    return "that city"


def make_model() -> tuple[ChatModel, str]:
    """A real model when configured through the environment, else the scripted one."""
    spec = os.environ.get("GRAPHAGENT_MODEL")
    base_url = os.environ.get("GRAPHAGENT_BASE_URL")
    if base_url:
        name = spec or "default"
        return OpenAIChatModel(name, base_url=base_url), f"{name} at {base_url}"
    if spec:
        return init_chat_model(spec), spec
    return FunctionChatModel(
        scripted
    ), "the scripted test model (set GRAPHAGENT_MODEL to use a real one)"


def store() -> tuple[Literal["redis", "sqlite"], str]:
    """Where the demo keeps threads: ``("redis", $REDIS_URL)`` when it is set, else
    ``("sqlite", path)`` (``$GRAPHAGENT_DB``, default ``.graphagent/demo.sqlite``)."""
    url = os.environ.get("REDIS_URL")
    if url:
        return "redis", url
    return "sqlite", os.environ.get("GRAPHAGENT_DB") or DEFAULT_DB


def make_saver() -> tuple[CheckpointSaver, str]:
    """Redis when REDIS_URL is set (threads expire after an hour), else a SQLite file."""
    kind, where = store()
    if kind == "redis":
        return RedisSaver.from_url(where, prefix=REDIS_PREFIX, ttl=3600), "Redis at $REDIS_URL"
    text = f"the SQLite file {where} (set REDIS_URL to keep them in Redis)"
    return SqliteSaver.from_path(where), text


def build(model: ChatModel, saver: CheckpointSaver) -> ReactAgent:
    """The demo agent: one tool, a system prompt, a saver."""
    return ReactAgent(
        name="weather_assistant",
        model=model,
        tools=[get_weather],
        system_prompt="You are a concise weather assistant. Use get_weather for forecasts.",
        saver=saver,
    )


_agent: ReactAgent | None = None


def __getattr__(name: str) -> ReactAgent:
    # `agent` is built on first use: importing the module opens no file and no connection
    global _agent
    if name != "agent":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _agent is None:
        _agent = build(make_model()[0], make_saver()[0])
    return _agent


def main() -> int:
    """Run the demo; returns the exit code: 2, after one line on stderr, when the model
    or the store is misconfigured or unreachable (a missing API key names its variable)."""
    try:
        return _run()
    except ModelConfigError as exc:
        if exc.variable is None:
            raise
        print(
            f"graphagent demo: the model needs an API key: set {exc.variable} "
            "(or unset GRAPHAGENT_MODEL to run with the scripted model)",
            file=sys.stderr,
        )
        return 2
    except GraphAgentError as exc:
        # raised on purpose, so its first line says what is wrong: a model spec, a model
        # server that does not answer, a store that cannot be reached
        text = str(exc).strip()
        print(
            f"graphagent demo: {text.splitlines()[0] if text else type(exc).__name__}",
            file=sys.stderr,
        )
        return 2


def _run() -> int:
    model, model_text = make_model()
    saver, saver_text = make_saver()
    print("graphagent demo: a ReactAgent")
    print(f"  model:   {model_text}")
    print(f"  threads: {saver_text}")

    agent = build(model, saver)
    earlier = agent.get_state(thread_id=THREAD).values.get("messages", [])
    if earlier:
        print(
            f"\nthread {THREAD!r} holds {len(earlier)} messages from an earlier run: "
            "this run continues that conversation"
        )
    print(f"\n--- call 1 on thread {THREAD!r}")
    print("user:      What's the weather in Paris?")
    print("assistant:", agent.call("What's the weather in Paris?", thread_id=THREAD).text)

    print("\n--- call 2: a freshly built agent resumes the thread by its id")
    in_memory = isinstance(saver, SqliteSaver) and saver.path == ":memory:"
    resumed = build(model, saver if in_memory else make_saver()[0])
    print("user:      What did I ask you before?")
    print("assistant:", resumed.call("What did I ask you before?", thread_id=THREAD).text)
    state = resumed.get_state(thread_id=THREAD)
    count = len(state.values["messages"])
    calls = AgentRecord.of(state.values).model_calls
    print(f"thread {THREAD!r} holds {count} messages after {calls} model calls")

    print("\n--- checkpoints (newest first)")
    for snap in resumed.get_state_history(thread_id=THREAD, limit=5):
        print(f"  step {snap.step:>2}  {snap.metadata['source']:<6} next={list(snap.next)}")

    print("\n--- the agent's graph")
    print(resumed.draw("ascii"))
    print(resumed.draw("mermaid"))
    if os.environ.get("REDIS_URL"):
        print("(the thread stays in Redis for an hour: run the demo again to continue it)")
    elif isinstance(saver, SqliteSaver):
        print(f"(the thread is kept in {saver.path}: run the demo again to continue it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
