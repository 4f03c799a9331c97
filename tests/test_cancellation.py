"""Stopping a run mid-step: closing or cancelling an async run, or Ctrl-C in a sync one,
ends the step's unfinished tasks, keeps what finished as pending writes, and a resume
runs only what did not finish, on every saver (issue 30 items 6 and 7)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from checkpoint import CheckpointSaver
from graphagent.config import RunnableConfig
from graphagent.graph import END, START, CompiledGraph, StateGraph


class Step:
    """A step of two async nodes: ``fast`` finishes, then ``slow`` says it waits and
    blocks (until cancelled, or for good when ``block`` is set)."""

    def __init__(self) -> None:
        self.fast_runs = 0
        self.slow_started = 0
        self.slow_cancelled = 0
        self.slow_finished = 0
        self.block = True
        self.fast_done = asyncio.Event()
        self.waiting = asyncio.Event()

    async def fast(self, state: Any) -> dict[str, Any]:
        self.fast_runs += 1
        self.fast_done.set()
        return {"fast": self.fast_runs}

    async def slow(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        self.slow_started += 1
        await self.fast_done.wait()
        if self.block:
            config.writer("slow waits")
            self.waiting.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.slow_cancelled += 1
                raise
        self.slow_finished += 1
        return {"slow": True}

    def graph(self, saver: CheckpointSaver) -> CompiledGraph:
        g = StateGraph().add_node("fast", self.fast).add_node("slow", self.slow)
        g.add_edge(START, "fast").add_edge(START, "slow")
        g.add_node("after", lambda s: {"after": True}).add_edge(["fast", "slow"], "after")
        return g.add_edge("after", END).compile(saver=saver)


async def _check_kept_and_resume(step: Step, app: CompiledGraph, cfg: dict[str, Any]) -> None:
    """When the stop returned, the step's other task was cancelled and ``fast``'s work
    stored, and nothing ran after it (not even later); a resume runs ``slow`` alone."""
    assert (step.slow_cancelled, step.slow_finished) == (1, 0)
    state = await app.aget_state(cfg)
    assert state.next == ("slow",)  # fast's work is kept: it is not due again
    assert "after" not in state.values
    await asyncio.sleep(0.2)  # an orphaned task would finish or write meanwhile
    assert (step.slow_cancelled, step.slow_finished) == (1, 0)
    assert (await app.aget_state(cfg)).checkpoint_id == state.checkpoint_id
    step.block = False
    out = await app.ainvoke(None, cfg)
    assert out == {"x": 1, "fast": 1, "slow": True, "after": True}
    assert step.fast_runs == 1 and step.slow_finished == 1


async def test_closing_an_astream_mid_step_cancels_it_and_keeps_the_finished_work(
    saver: CheckpointSaver,
) -> None:
    """aclose() on an astream while a step runs cancels the step's tasks and waits for
    them before it returns; the finished sibling's update is kept as a pending write."""
    step = Step()
    app = step.graph(saver)
    cfg = {"thread_id": "closed"}
    stream = app.astream({"x": 1}, cfg, mode="custom")
    assert await stream.__anext__() == "slow waits"
    await stream.aclose()
    await _check_kept_and_resume(step, app, cfg)


async def test_cancelling_an_ainvoke_mid_step_keeps_the_finished_work(
    saver: CheckpointSaver,
) -> None:
    """Cancelling the task running ainvoke cancels the step's other tasks, stores what
    finished, and the caller gets CancelledError."""
    step = Step()
    app = step.graph(saver)
    cfg = {"thread_id": "cancelled"}
    task = asyncio.ensure_future(app.ainvoke({"x": 1}, cfg))
    await step.waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _check_kept_and_resume(step, app, cfg)


async def test_a_timeout_around_astream_keeps_the_finished_work(saver: CheckpointSaver) -> None:
    """asyncio.wait_for around a streaming consumer: the timeout cancels the step the
    same way (and the caller sees TimeoutError, not a swallowed cancellation)."""
    step = Step()
    app = step.graph(saver)
    cfg = {"thread_id": "timed"}

    async def consume() -> list[Any]:
        return [event async for event in app.astream({"x": 1}, cfg, mode="updates")]

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(consume(), timeout=1.0)
    await _check_kept_and_resume(step, app, cfg)


# -- sync runs: Ctrl-C -----------------------------------------------------------------


class SyncStep:
    """A step of two sync nodes: ``fast`` finishes, then ``slow`` is interrupted."""

    def __init__(self, interrupt: Any) -> None:
        self.fast_runs = 0
        self.slow_runs = 0
        self.fast_done = threading.Event()
        self.interrupt = interrupt  # called in slow once fast is done; None: slow finishes

    def fast(self, state: Any) -> dict[str, Any]:
        self.fast_runs += 1
        self.fast_done.set()
        return {"fast": self.fast_runs}

    def slow(self, state: Any) -> dict[str, Any]:
        self.slow_runs += 1
        assert self.fast_done.wait(10)
        time.sleep(0.05)  # fast's outcome is recorded by now
        if self.interrupt is not None:
            self.interrupt()
        return {"slow": True}

    def graph(self, saver: CheckpointSaver) -> CompiledGraph:
        g = StateGraph().add_node("fast", self.fast).add_node("slow", self.slow)
        g.add_edge(START, "fast").add_edge(START, "slow")
        g.add_node("after", lambda s: {"after": True}).add_edge(["fast", "slow"], "after")
        return g.add_edge("after", END).compile(saver=saver)


def _raise_keyboard_interrupt() -> None:
    raise KeyboardInterrupt


def test_ctrl_c_in_a_step_saves_the_finished_siblings(saver: CheckpointSaver) -> None:
    """KeyboardInterrupt in one node of a step (Ctrl-C while it runs) reaches the caller
    after the finished sibling's update is stored; a resume does not run it again."""
    step = SyncStep(_raise_keyboard_interrupt)
    app = step.graph(saver)
    cfg = {"thread_id": "ctrl-c"}
    with pytest.raises(KeyboardInterrupt):
        app.invoke({"x": 1}, cfg)
    state = app.get_state(cfg)
    assert state.next == ("slow",) and "after" not in state.values
    step.interrupt = None
    assert app.invoke(None, cfg) == {"x": 1, "fast": 1, "slow": True, "after": True}
    assert (step.fast_runs, step.slow_runs) == (1, 2)


def test_ctrl_c_in_a_streamed_step_saves_the_finished_siblings(saver: CheckpointSaver) -> None:
    """The same through stream() with a live mode (the step runs in a thread of its own)."""
    step = SyncStep(_raise_keyboard_interrupt)
    app = step.graph(saver)
    cfg = {"thread_id": "ctrl-c-stream"}
    with pytest.raises(KeyboardInterrupt):
        list(app.stream({"x": 1}, cfg, mode=["custom", "updates"]))
    assert app.get_state(cfg).next == ("slow",)
    step.interrupt = None
    assert app.invoke(None, cfg)["after"] is True
    assert step.fast_runs == 1


@pytest.fixture
def sigint() -> Iterator[threading.Event]:
    """SIGINT raises KeyboardInterrupt only while the returned event is set (so a late
    signal cannot stop the test session)."""
    armed = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        if armed.is_set():
            armed.clear()
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    yield armed
    signal.signal(signal.SIGINT, previous)


def test_a_real_sigint_during_a_step_saves_the_finished_siblings(
    saver: CheckpointSaver, sigint: threading.Event
) -> None:
    """A real SIGINT while the main thread waits on a step: what finished is stored before
    KeyboardInterrupt reaches the caller, and fast never runs twice."""
    release = threading.Event()

    def ctrl_c() -> None:
        sigint.set()
        os.kill(os.getpid(), signal.SIGINT)
        release.wait(1.0)  # in a worker: lets go soon; in the main thread: interrupted

    step = SyncStep(ctrl_c)
    app = step.graph(saver)
    cfg = {"thread_id": "sigint"}
    with pytest.raises(KeyboardInterrupt):
        app.invoke({"x": 1}, cfg)
    release.set()
    step.interrupt = None
    assert app.invoke(None, cfg)["after"] is True
    assert step.fast_runs == 1


def test_closing_a_sync_stream_mid_step_waits_and_keeps_the_step(saver: CheckpointSaver) -> None:
    """close() on a stream while its step runs (in a thread of its own: a live mode) waits
    for the step, stores it, and runs nothing after it; a resume does not repeat it."""
    emitted = threading.Event()
    runs = {"a": 0, "b": 0, "after": 0}

    def a(state: Any, config: RunnableConfig) -> dict[str, Any]:
        runs["a"] += 1
        config.writer("a works")
        emitted.wait(5)
        time.sleep(0.2)  # still running when the consumer closes the stream
        return {"a": True}

    def b(state: Any) -> dict[str, Any]:
        runs["b"] += 1
        return {"b": True}

    def after(state: Any) -> dict[str, Any]:
        runs["after"] += 1
        return {"after": True}

    g = StateGraph().add_node("a", a).add_node("b", b).add_node("after", after)
    g.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], "after")
    app = g.add_edge("after", END).compile(saver=saver)
    cfg = {"thread_id": "sync-closed"}
    stream = app.stream({"x": 1}, cfg, mode="custom")
    assert next(stream) == "a works"
    emitted.set()
    stream.close()
    assert runs == {"a": 1, "b": 1, "after": 0}
    assert app.get_state(cfg).next == ("after",)
    assert app.invoke(None, cfg)["after"] is True
    assert runs == {"a": 1, "b": 1, "after": 1}


async def test_closing_an_agent_astream_cancels_its_running_tool(saver: CheckpointSaver) -> None:
    """aclose() on an agent's astream, while a tool runs, cancels the tool before it
    returns (the agent's stream closes the graph's, which cancels the step)."""
    from graphagent.agent import ReactAgent
    from graphagent.messages import AssistantMessage, ToolCall
    from graphagent.models import FunctionChatModel
    from graphagent.tools import ToolContext, tool

    seen = {"cancelled": 0, "finished": 0}

    @tool
    async def lookup(ctx: ToolContext) -> str:
        """Look something up, slowly."""
        ctx.config.writer("looking")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen["cancelled"] += 1
            raise
        seen["finished"] += 1
        return "found"

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        if any(m.role == "tool" for m in messages):
            return AssistantMessage("done")
        return AssistantMessage(tool_calls=(ToolCall(id="c1", name="lookup", arguments="{}"),))

    agent = ReactAgent(name="slow", model=FunctionChatModel(script), tools=[lookup], saver=saver)
    stream = agent.astream("go", thread_id="agent-closed", mode="custom")
    assert await stream.__anext__() == "looking"
    await stream.aclose()
    assert seen == {"cancelled": 1, "finished": 0}
    await asyncio.sleep(0.2)
    assert seen == {"cancelled": 1, "finished": 0}
