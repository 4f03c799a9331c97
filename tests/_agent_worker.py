"""A stateless agent worker process for the scale-out tests.

Run as ``python tests/_agent_worker.py QUEUE_URL QUEUE WORKER KIND TARGET NAME``. It takes
jobs ``"<thread>|<turn>"`` from the Redis list ``QUEUE`` at ``QUEUE_URL`` (on a Redis
Cluster when KIND is ``cluster``), runs one agent turn on that thread with its state in
the store ``KIND TARGET NAME`` (see ``_stores.Store``), and pushes
``"<thread>|<turn>|<worker>|<answer>"`` to ``QUEUE:done``. ``"STOP"`` ends it. The model is
scripted: each turn calls the ``note`` tool once, then answers with how many user messages
it saw, which proves the thread's history reached this process.
"""

from __future__ import annotations

import sys
from typing import Any

import redis
from _stores import Store

from checkpoint.base import CheckpointSaver
from graphagent.agent import ReactAgent
from graphagent.messages import AssistantMessage, Message, ToolCall
from graphagent.models import FunctionChatModel


def script(messages: list[Message], tools: Any) -> AssistantMessage:
    """Call ``note`` once per turn, then say how many user turns the history holds."""
    users = sum(1 for m in messages if m.role == "user")
    if messages[-1].role == "user":
        call = ToolCall(id=f"n{users}", name="note", arguments=f'{{"turn": {users}}}')
        return AssistantMessage(tool_calls=[call])
    return AssistantMessage(f"saw {users} user messages; {messages[-1].text}")


def note(turn: int) -> str:
    """Write down that a turn happened."""
    return f"noted turn {turn}"


def build(saver: CheckpointSaver) -> ReactAgent:
    """The worker's agent on a saver."""
    return ReactAgent(name="worker", model=FunctionChatModel(script), tools=[note], saver=saver)


def main(argv: list[str]) -> int:
    queue_url, queue, worker = argv[:3]
    store = Store(*argv[3:6])
    client: Any = (
        # no socket timeout: redis-py 8 defaults to 5 s, which cuts the blocking pops short
        redis.RedisCluster.from_url(store.target, socket_timeout=None)
        if store.kind == "cluster"
        else redis.Redis.from_url(queue_url, socket_timeout=None)
    )
    agent = build(store.open())
    while True:
        item = client.blpop([queue], timeout=30)
        if item is None:
            return 1  # the test went away
        job = item[1].decode()
        if job == "STOP":
            return 0
        thread, turn = job.split("|")
        answer = agent.call(f"turn {turn}", thread_id=thread).text
        client.rpush(f"{queue}:done", f"{thread}|{turn}|{worker}|{answer}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
