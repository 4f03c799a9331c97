"""What every agent offers: call/invoke/stream (and async twins) over its compiled graph."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from checkpoint.base import CheckpointSaver
from graphagent.agent._record import AGENT_KEY, AgentRecordStrategy, legacy_layout, new_run
from graphagent.config import ConfigLike, RunnableConfig, ensure_config
from graphagent.errors import InvalidUpdateError, ThreadNotKeptWarning, UserError
from graphagent.graph import (
    AppendStrategy,
    Command,
    CompiledGraph,
    Drawing,
    MergeStrategy,
    ReplaceStrategy,
    StateGraph,
    StateHistory,
    StateSnapshot,
)
from graphagent.messages import AssistantMessage, Message, coerce_message

__all__ = ["AGENT_SCHEMA", "BaseAgent", "agent_schema", "compile_agent", "last_answer"]

AGENT_SCHEMA: dict[str, Any] = {
    "messages": AppendStrategy(),
    "structured_response": ReplaceStrategy(),
    "results": MergeStrategy(),
    AGENT_KEY: AgentRecordStrategy(),
}
"""The state every agent keeps; its bookkeeping is the private ``"__agent"`` record."""


def agent_schema(name: str, output_key: str | None, strategy: Any = None) -> dict[str, Any]:
    """The state of an agent that writes its answer to ``output_key`` (with ``strategy``,
    default replace)."""
    if output_key is None:
        return AGENT_SCHEMA
    if output_key in AGENT_SCHEMA or output_key in ("loop_rounds", "loop_items", "route"):
        raise UserError(
            f"agent {name!r}: output_key {output_key!r} is a key the agents keep for "
            "themselves; choose another (e.g. the kind of answer: 'article', 'sql')"
        )
    if not isinstance(output_key, str) or not output_key or output_key.startswith("__"):
        raise UserError(
            f"agent {name!r}: output_key must be a non-empty state key not starting with "
            f"'__' (private), got {output_key!r}"
        )
    return {**AGENT_SCHEMA, output_key: strategy if strategy is not None else ReplaceStrategy()}


def compile_agent(
    graph: StateGraph,
    saver: CheckpointSaver | None,
    name: str,
    agent: BaseAgent,
    *,
    store: Any = None,
    edge_notes: Mapping[str, str] | None = None,
    listeners: Sequence[Any] = (),
) -> CompiledGraph:
    """Compile ``agent``'s graph: its runs are the agent's runs (traces say
    ``invoke_agent``), they get ``store`` as ``config.store``, it refuses threads saved
    with the old state layout, its drawings explain the edge labels ``edge_notes``
    names, and ``listeners`` hear every run."""
    return graph.compile(
        saver=saver,
        name=name,
        store=store,
        agent=agent,
        stored_check=legacy_layout,
        edge_notes=edge_notes,
        listeners=listeners,
    )


def last_answer(values: Mapping[str, Any]) -> AssistantMessage:
    """The last assistant message of a state (an empty one if there is none)."""
    for message in reversed(values.get("messages", ())):
        if isinstance(message, AssistantMessage):
            return message
    return AssistantMessage("")


class BaseAgent:
    """An agent: a compiled graph with a conversational front.

    Subclasses set ``self.graph`` (from :func:`compile_agent`) and ``self.name``.

    Attributes:
        graph: the agent's compiled graph: draw it, inspect its threads.
    """

    name: str
    description: str
    graph: CompiledGraph
    #: a message added before the input of each run; ``{key}`` placeholders read state
    instruction: str | None = None
    #: the state key the final answer is also written to (for the agents after this one)
    output_key: str | None = None
    #: how ``output_key`` merges (``None``: replace)
    output_key_strategy: Any = None
    #: as a sub-agent: see the parent's conversation (else only instruction and input)
    include_contents: bool = True
    #: as a sub-agent: hand every message back to the parent (else only the answer)
    return_reasoning_contents: bool = False
    #: drop the thread from the saver once a run completes (stateless deployments)
    release_thread: bool = False
    #: the final answer is structured (``output_type`` or ``output_schema``)
    structured: bool = False
    #: what callers give it as a tool (``AgentTool``): a pydantic model or a JSON schema
    input_schema: Any = None

    # -- input -------------------------------------------------------------------------

    def prepare_input(self, input: Any) -> Any:
        """Turn ``input`` into graph input: a string, message(s) or a state dict.

        ``Command`` and ``None`` pass through (resume, continue). A new input resets
        the per-run counters.
        """
        if input is None or isinstance(input, Command):
            return input
        if isinstance(input, Mapping):
            data = dict(input)
            if "messages" in data:
                raw = data["messages"]
                raw = [raw] if isinstance(raw, (str, Message, Mapping)) else raw
                data["messages"] = [coerce_message(m) for m in raw]
            return {AGENT_KEY: new_run(), **data}
        if isinstance(input, (str, Message)):
            return {AGENT_KEY: new_run(), "messages": [coerce_message(input)]}
        if isinstance(input, Sequence):
            return {AGENT_KEY: new_run(), "messages": [coerce_message(m) for m in input]}
        raise InvalidUpdateError(
            f"cannot run {self.name!r} on {type(input).__name__}: pass a string, a message, a "
            "list of messages, a state dict, Command(resume=...) or None"
        )

    def prepare_sub_input(self, messages: list[Message]) -> Any:
        """Graph input for running as a composite agent's node on ``messages`` (they
        already hold this agent's instruction, filled from the parent's state)."""
        return self.prepare_input({"messages": messages})

    @staticmethod
    def _config(
        config: ConfigLike,
        thread_id: str | None,
        tools: Sequence[Any] | None = None,
        tool_names: Sequence[str] | None = None,
    ) -> RunnableConfig:
        cfg = ensure_config(config, thread_id=thread_id)
        if tools is None and tool_names is None:
            return cfg
        # per-request tools travel in configurable, where every node of the run sees them
        extra: dict[str, Any] = {"tools": list(tools)} if tools is not None else {}
        if tool_names is not None:
            extra["tool_names"] = tool_names
        return cfg.model_copy(update={"configurable": {**cfg.configurable, **extra}})

    def _run_config(
        self,
        config: ConfigLike,
        thread_id: str | None,
        tools: Sequence[Any] | None,
        tool_names: Sequence[str] | None,
    ) -> RunnableConfig:
        """A run's config; warns (once per agent) when it names a thread nothing keeps."""
        cfg = self._config(config, thread_id, tools, tool_names)
        if cfg.thread_id is None or self.graph.saver is not None:
            return cfg
        if not self.__dict__.get("_warned_thread_not_kept"):
            self._warned_thread_not_kept = True
            warnings.warn(
                f"agent {self.name!r} has no saver, so thread {cfg.thread_id!r} is not "
                "kept: every call starts a new conversation. Build it with saver=... "
                "(MemorySaver, SqliteSaver, RedisSaver, ...) or leave thread_id out",
                ThreadNotKeptWarning,
                stacklevel=_user_frame(),
            )
        return cfg

    # -- running -------------------------------------------------------------------------

    def invoke(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: str | None = None,
        tools: Sequence[Any] | None = None,
        tool_names: Sequence[str] | None = None,
        progress: bool = False,
    ) -> dict[str, Any]:
        """Run to the end (or an interrupt) and return the final state.

        ``tools`` adds tools for this run only and ``tool_names`` narrows the tools
        offered and run to those names (a ``ReactAgent``'s; also settable as
        ``config["configurable"]["tools"]`` / ``["tool_names"]``). ``progress=True``
        shows the current node, tool and elapsed time while it runs.
        """
        cfg = self._run_config(config, thread_id, tools, tool_names)
        values = self.graph.invoke(self.prepare_input(input), cfg, progress=progress)
        if self._releases(cfg) and "__interrupt__" not in values:
            self.graph.delete_thread(cfg)
        return values

    async def ainvoke(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: str | None = None,
        tools: Sequence[Any] | None = None,
        tool_names: Sequence[str] | None = None,
        progress: bool = False,
    ) -> dict[str, Any]:
        """Async :meth:`invoke`."""
        cfg = self._run_config(config, thread_id, tools, tool_names)
        values = await self.graph.ainvoke(self.prepare_input(input), cfg, progress=progress)
        if self._releases(cfg) and "__interrupt__" not in values:
            await self.graph.adelete_thread(cfg)
        return values

    def call(
        self,
        message: Any,
        *,
        thread_id: str | None = None,
        config: ConfigLike = None,
        tools: Sequence[Any] | None = None,
        tool_names: Sequence[str] | None = None,
        progress: bool = False,
    ) -> AssistantMessage:
        """Send a message and return the agent's answer.

        With a saver and a ``thread_id`` the conversation continues where it left off
        (in any process); without one, each call starts fresh. If the run pauses for a
        human (an interrupt), the last assistant message is returned and
        ``get_state(...).interrupts`` holds the question. ``progress=True`` shows the
        current node, tool and elapsed time while it runs (in Jupyter, one output
        updated in place; in a terminal, a status line).

        Example:
            >>> from graphagent.agent import ReactAgent
            >>> from graphagent.models import FakeChatModel
            >>> agent = ReactAgent(name="echo", model=FakeChatModel(["Hello!"]))
            >>> agent.call("hi").text
            'Hello!'
        """
        values = self.invoke(
            message,
            config,
            thread_id=thread_id,
            tools=tools,
            tool_names=tool_names,
            progress=progress,
        )
        return last_answer(values)

    async def acall(
        self,
        message: Any,
        *,
        thread_id: str | None = None,
        config: ConfigLike = None,
        tools: Sequence[Any] | None = None,
        tool_names: Sequence[str] | None = None,
        progress: bool = False,
    ) -> AssistantMessage:
        """Async :meth:`call`."""
        values = await self.ainvoke(
            message,
            config,
            thread_id=thread_id,
            tools=tools,
            tool_names=tool_names,
            progress=progress,
        )
        return last_answer(values)

    def stream(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: str | None = None,
        mode: str | Sequence[str] = "updates",
        tools: Sequence[Any] | None = None,
        tool_names: Sequence[str] | None = None,
    ) -> Iterator[Any]:
        """Run, yielding events: the graph's modes plus ``"messages"``.

        ``"messages"`` yields ``(chunk, info)`` pairs: model tokens as they arrive
        (``AssistantChunk``) and each tool's ``ToolResponseMessage`` as soon as that tool
        finishes; ``info`` names the agent and node.
        """
        cfg = self._run_config(config, thread_id, tools, tool_names)
        yield from self.graph.stream(self.prepare_input(input), cfg, mode=mode)
        if self._releases(cfg) and not self.graph.get_state(cfg).interrupts:
            self.graph.delete_thread(cfg)

    async def astream(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: str | None = None,
        mode: str | Sequence[str] = "updates",
        tools: Sequence[Any] | None = None,
        tool_names: Sequence[str] | None = None,
    ) -> AsyncGenerator[Any, None]:
        """Async :meth:`stream`."""
        cfg = self._run_config(config, thread_id, tools, tool_names)
        events = self.graph.astream(self.prepare_input(input), cfg, mode=mode)
        async with contextlib.aclosing(events):  # closing this stream stops the run now
            async for event in events:
                yield event
        if self._releases(cfg) and not (await self.graph.aget_state(cfg)).interrupts:
            await self.graph.adelete_thread(cfg)

    def _releases(self, cfg: RunnableConfig) -> bool:
        """Whether a finished run on ``cfg`` drops its thread (``release_thread``)."""
        if not self.release_thread or cfg.thread_id is None or self.graph.saver is None:
            return False
        return not self.graph.runs_nested(cfg)  # a parent run's thread is not ours to drop

    # -- threads -----------------------------------------------------------------------------

    def get_state(
        self, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> StateSnapshot:
        """The thread's latest state (see ``CompiledGraph.get_state``)."""
        return self.graph.get_state(self._config(config, thread_id))

    def get_state_history(
        self, config: ConfigLike = None, *, thread_id: str | None = None, limit: int | None = None
    ) -> StateHistory:
        """The thread's checkpoints, newest first (a list; a timeline in Jupyter)."""
        return self.graph.get_state_history(self._config(config, thread_id), limit=limit)

    def delete_thread(self, config: ConfigLike = None, *, thread_id: str | None = None) -> None:
        """Forget the thread."""
        self.graph.delete_thread(self._config(config, thread_id))

    def draw(
        self, fmt: str = "svg", *, thread_id: str | None = None, config: ConfigLike = None
    ) -> Drawing:
        """The agent's graph as ``svg``, ``mermaid``, ``dot`` or ``ascii``; with a
        ``thread_id``, the SVG shows that thread's run (see ``CompiledGraph.draw``)."""
        if thread_id is None and config is None:
            return self.graph.draw(fmt)
        return self.graph.draw(fmt, config=self._config(config, thread_id))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self.graph._repr_mimebundle_(include, exclude)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {len(self.graph.nodes)} nodes>"


# as the interpreter names the files (co_filename), and resolved, should a link lead here
_PACKAGE = tuple(
    {
        str(Path(__file__).parent.parent) + os.sep,
        str(Path(__file__).resolve().parent.parent) + os.sep,
    }
)


def _user_frame() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside graphagent
    (``call`` reaches the warning through ``invoke``, ``stream`` through a generator)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    return level
