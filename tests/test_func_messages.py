"""The ``"messages"`` stream of an entrypoint: tokens of a model called directly inside a
task or inside the entrypoint's function (no agent in between), sync and async, live, named
by where they came from, and not streamed again when a resumed run replays a task."""

from __future__ import annotations

import uuid
from typing import Any

from checkpoint import MemorySaver
from graphagent.func import entrypoint, task
from graphagent.graph import Command, interrupt
from graphagent.messages import AssistantMessage, UserMessage
from graphagent.models import FakeChatModel, FunctionChatModel


def _tokens(events: list[Any], node: str) -> str:
    """The text of the ``"messages"`` chunks that name ``node`` as where they came from."""
    return "".join(
        chunk.content for mode, (chunk, meta) in _messages(events) if meta["node"] == node
    )


def _messages(events: list[Any]) -> list[tuple[str, Any]]:
    return [(mode, payload) for mode, payload in events if mode == "messages"]


def test_a_model_called_in_a_task_and_in_the_entrypoint_streams_its_tokens() -> None:
    """``model.generate`` called in a task and in the function itself streams chunks that
    add up to each answer, the task's named by the task, before the task's update."""
    model = FakeChatModel(["a summary of it", "the final word"], chunk_size=3)

    @task
    def summarize(text: str) -> str:
        return model.generate([UserMessage(text)]).text

    @entrypoint()
    def flow(text: str) -> str:
        summary = summarize(text).result()
        return model.generate([UserMessage(summary)]).text

    events = list(flow.stream("long text", mode=["messages", "updates"]))
    assert _tokens(events, "summarize") == "a summary of it"
    assert _tokens(events, "flow") == "the final word"
    texts = [chunk.content for _, (chunk, _meta) in _messages(events) if chunk.content]
    assert len(texts) == 5 + 5  # chunks of 3 characters: streamed, not whole
    modes = [mode for mode, _ in events]
    first_update = modes.index("updates")
    assert events[first_update] == ("updates", {"summarize": "a summary of it"})
    assert set(modes[:first_update]) == {"messages"}  # tokens came before the task ended
    assert events[-1] == ("updates", {"flow": "the final word"})
    model.responses.extend([AssistantMessage("x"), AssistantMessage("y")])
    assert list(flow.stream("again", mode="updates")) == [{"summarize": "x"}, {"flow": "y"}]


async def test_async_models_in_async_tasks_and_sync_tasks_under_astream() -> None:
    """Under ``astream``: ``await model.agenerate`` in an async task and in the async
    function, and ``model.generate`` in a sync task (run in a worker thread), all stream."""
    model = FunctionChatModel(lambda messages, tools: f"re: {messages[-1].text}", chunk_size=2)

    @task
    async def draft(text: str) -> str:
        return (await model.agenerate([UserMessage(text)])).text

    @task
    def polish(text: str) -> str:
        return model.generate([UserMessage(text)]).text

    @entrypoint()
    async def flow(text: str) -> str:
        drafted = await draft(text)
        polished = await polish(drafted)
        return (await model.agenerate([UserMessage(polished)])).text

    events = [e async for e in flow.astream("hi", mode=["messages", "updates"])]
    assert _tokens(events, "draft") == "re: hi"
    assert _tokens(events, "polish") == "re: re: hi"
    assert _tokens(events, "flow") == "re: re: re: hi"
    assert events[-1] == ("updates", {"flow": "re: re: re: hi"})
    updates = [payload for mode, payload in events if mode == "updates"]
    assert updates[:2] == [{"draft": "re: hi"}, {"polish": "re: re: hi"}]


async def test_a_sync_entrypoint_under_astream_streams_its_tasks_tokens() -> None:
    """A sync function run by ``astream`` (in a worker thread) streams the tokens of models
    its tasks call, and of its own."""
    model = FunctionChatModel(lambda messages, tools: messages[-1].text.upper(), chunk_size=1)

    @task
    def shout(text: str) -> str:
        return model.generate([UserMessage(text)]).text

    @entrypoint()
    def flow(words: list[str]) -> str:
        loud = [f.result() for f in [shout(w) for w in words]]
        return model.generate([UserMessage(" ".join(loud))]).text

    events = [e async for e in flow.astream(["ab", "cd"], mode=["messages", "updates"])]
    paths = {meta["path"] for _, (_, meta) in _messages(events)}
    assert paths == {("flow",), ("flow", "shout:0"), ("flow", "shout:1")}
    for index, word in enumerate(["AB", "CD"]):
        mine = [c.content for _, (c, m) in _messages(events) if m["path"][-1] == f"shout:{index}"]
        assert "".join(mine) == word
    assert _tokens(events, "flow") == "AB CD"


def test_a_replayed_task_does_not_stream_again() -> None:
    """After a pause, the resumed run replays the finished task: its model is not called
    again and its tokens are not streamed twice; the tokens of what runs now are."""
    model = FakeChatModel(["first answer", "second answer"])

    @task
    def ask(text: str) -> str:
        return model.generate([UserMessage(text)]).text

    @entrypoint(saver=MemorySaver())
    def flow(text: str) -> str:
        first = ask(text).result()
        if interrupt("go on?"):
            return first + " / " + ask(first).result()
        return first

    config = {"thread_id": uuid.uuid4().hex}
    paused = list(flow.stream("q", config, mode=["messages", "updates"]))
    assert _tokens(paused, "ask") == "first answer"
    resumed = list(flow.stream(Command(resume=True), config, mode=["messages", "updates"]))
    assert _tokens(resumed, "ask") == "second answer"
    assert len(model.calls) == 2
    assert resumed[-1] == ("updates", {"flow": "first answer / second answer"})
