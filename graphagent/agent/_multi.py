"""Multi-agent patterns, each a graph that draws and checkpoints like any other.

``AgentTool`` makes an agent a tool of another agent; ``SequentialAgent``,
``ParallelAgent``, ``LlmRoutingAgent`` and ``LoopAgent`` compose agents into a graph
whose nodes are the sub-agents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from checkpoint.base import CheckpointSaver
from graphagent.agent._base import AGENT_SCHEMA, BaseAgent, compile_agent, last_answer
from graphagent.config import RunnableConfig
from graphagent.errors import ToolArgumentsError, UserError
from graphagent.graph import END, START, OverAllState, ReplaceStrategy, StateGraph
from graphagent.messages import AssistantMessage, SystemMessage
from graphagent.models import ChatModel
from graphagent.tools import ToolContext, ToolDefinition, ToolMetadata

__all__ = ["AgentTool", "LlmRoutingAgent", "LoopAgent", "ParallelAgent", "SequentialAgent"]


def _sub_thread(agent: BaseAgent, ctx: ToolContext | None) -> str | None:
    thread = ctx.config.thread_id if ctx is not None else None
    return f"{thread}/{agent.name}" if thread and agent.graph.saver is not None else None


def _sub_config(agent: BaseAgent, ctx: ToolContext | None) -> RunnableConfig:
    """The sub-agent's run config: its own thread, the caller's metadata and tool context.

    Tools inside the sub-agent need the caller's user id and tenant as much as the
    caller's own tools do. The sub-agent's own ``tool_context`` wins over the caller's;
    nothing else of the caller's run (per-request tools, limits) is passed on.
    """
    if ctx is None:
        return RunnableConfig()
    own: Mapping[str, Any] = getattr(agent, "tool_context", None) or {}
    inherited = {**ctx.context, **own}
    return RunnableConfig(
        thread_id=_sub_thread(agent, ctx),
        metadata=dict(ctx.config.metadata),
        configurable={"tool_context": inherited} if inherited else {},
    )


def _add_note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python 3.10: no add_note, but __notes__ is still where tools look
        exc.__notes__ = [*getattr(exc, "__notes__", []), note]  # type: ignore[attr-defined]


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class AgentTool:
    """An agent as a tool of another agent, on its own sub-thread.

    The model calls it with ``{"input": "the task"}``; the sub-agent answers on thread
    ``"<caller thread>/<agent name>"`` (so it remembers earlier tasks of that caller's
    conversation when it has a saver), and its answer is the tool's result. The
    sub-agent's tools see the caller's ``config.metadata`` (user id, tenant) and
    ``tool_context``; the sub-agent's own ``tool_context`` wins over the caller's.

    Args:
        agent: the agent to call.
        name: the tool's name (default: the agent's).
        description: the tool's description (default: the agent's).
    """

    def __init__(
        self, agent: BaseAgent, *, name: str | None = None, description: str | None = None
    ) -> None:
        text = description or agent.description
        if not text:
            raise UserError(
                f"AgentTool({agent.name!r}) needs a description: give the agent description=... "
                "or pass description= here, so the calling model knows when to use it"
            )
        self.agent = agent
        self._definition = ToolDefinition(
            name or agent.name,
            text,
            {
                "type": "object",
                "properties": {"input": {"type": "string", "description": "The task, in full."}},
                "required": ["input"],
                "additionalProperties": False,
            },
        )

    @property
    def definition(self) -> ToolDefinition:
        """The tool's definition."""
        return self._definition

    @property
    def metadata(self) -> ToolMetadata:
        """Not return_direct."""
        return ToolMetadata()

    def _task(self, tool_input: str | Mapping[str, Any]) -> str:
        try:
            raw = json.loads(tool_input) if isinstance(tool_input, str) else dict(tool_input)
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(
                f"arguments for {self.definition.name!r} are not JSON"
            ) from exc
        if not isinstance(raw, dict) or not isinstance(raw.get("input"), str):
            raise ToolArgumentsError(f'tool {self.definition.name!r} takes {{"input": "the task"}}')
        return str(raw["input"])

    def _annotate(self, exc: Exception, task: str, context: ToolContext | None) -> None:
        # the sub-agent's own error keeps its type; the note says which call it was
        thread = context.config.thread_id if context is not None else None
        _add_note(
            exc,
            f"(in agent tool {self.definition.name!r}: sub-agent {self.agent.name!r}, "
            f"caller thread {thread!r}, task {_clip(task)!r})",
        )

    def call(self, tool_input: str | Mapping[str, Any], context: ToolContext | None = None) -> str:
        """Run the sub-agent on the task; its answer's text.

        The sub-agent sees the caller's ``config.metadata`` and ``tool_context`` (its own
        ``tool_context`` wins). A failure is raised as the sub-agent raised it, with a
        note naming the sub-agent, the caller's thread and the task.
        """
        task = self._task(tool_input)
        try:
            return self.agent.call(task, config=_sub_config(self.agent, context)).text
        except Exception as exc:
            self._annotate(exc, task, context)
            raise

    async def acall(
        self, tool_input: str | Mapping[str, Any], context: ToolContext | None = None
    ) -> str:
        """Async :meth:`call`."""
        task = self._task(tool_input)
        try:
            answer = await self.agent.acall(task, config=_sub_config(self.agent, context))
        except Exception as exc:
            self._annotate(exc, task, context)
            raise
        return answer.text


def _agent_node(
    agent: BaseAgent,
    shape: Callable[[OverAllState, dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Sync and async node functions that run ``agent`` on the parent's messages.

    By default the sub-agent's new messages are appended to the parent's; ``shape``
    turns ``(parent state, sub-agent's final values, update)`` into another update.
    """

    def prepare(state: OverAllState) -> dict[str, Any]:
        prepared = agent.prepare_input({"messages": list(state.get("messages", []))})
        return dict(prepared)

    def finish(state: OverAllState, values: dict[str, Any], net: Any) -> dict[str, Any]:
        update = {"messages": net["messages"][1]} if "messages" in net else {}
        if net.get("messages", ("",))[0] == "reset":
            update = {"messages": values["messages"]}
        return shape(state, values, update) if shape is not None else update

    def run(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        values, net = agent.graph.run_nested(prepare(state), config)
        return finish(state, values, net)

    async def arun(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        values, net = await agent.graph.arun_nested(prepare(state), config)
        return finish(state, values, net)

    return run, arun


def _names(agents: Sequence[BaseAgent]) -> None:
    seen: set[str] = set()
    for a in agents:
        if a.name in seen:
            raise UserError(f"two sub-agents are named {a.name!r}; agent names must be unique")
        if a.name in ("route", "merge"):
            raise UserError(f"{a.name!r} is reserved here; rename the agent")
        seen.add(a.name)


class SequentialAgent(BaseAgent):
    """Run agents one after another on one conversation; each sees what the others said.

    Example:
        >>> from graphagent.agent import ReactAgent
        >>> from graphagent.models import FakeChatModel
        >>> draft = ReactAgent(name="draft", model=FakeChatModel(["A first draft."]))
        >>> edit = ReactAgent(name="edit", model=FakeChatModel(["An edited draft."]))
        >>> SequentialAgent("writer", [draft, edit]).call("Write about owls.").text
        'An edited draft.'
    """

    def __init__(
        self,
        name: str,
        agents: Sequence[BaseAgent],
        *,
        description: str = "",
        saver: CheckpointSaver | None = None,
    ) -> None:
        if not agents:
            raise UserError("SequentialAgent needs at least one agent")
        _names(agents)
        self.name, self.description, self.agents = name, description, list(agents)
        g = StateGraph(AGENT_SCHEMA)
        previous = START
        for agent in agents:
            fn, afn = _agent_node(agent)
            g.add_node(agent.name, fn, kind="agent", afn=afn)
            g.add_edge(previous, agent.name)
            previous = agent.name
        g.add_edge(previous, END)
        self.graph = compile_agent(g, saver, name, self)


def _join(results: Mapping[str, AssistantMessage]) -> str:
    return "\n\n".join(f"{name}: {message.text}" for name, message in results.items())


class ParallelAgent(BaseAgent):
    """Run agents at the same time on the same input, then merge their answers.

    Each sub-agent works on its own copy of the conversation; only its final answer
    is kept, in ``state["results"][agent name]``, and ``merge(results)`` makes the one
    answer added to the conversation.

    Args:
        name: the agent's name.
        agents: the sub-agents.
        merge: ``{agent name: answer} -> str | AssistantMessage`` (default: each answer
            under its agent's name).
    """

    def __init__(
        self,
        name: str,
        agents: Sequence[BaseAgent],
        *,
        merge: Callable[[Mapping[str, AssistantMessage]], str | AssistantMessage] = _join,
        description: str = "",
        saver: CheckpointSaver | None = None,
    ) -> None:
        if len(agents) < 2:
            raise UserError("ParallelAgent needs at least two agents")
        _names(agents)
        self.name, self.description, self.agents = name, description, list(agents)
        g = StateGraph(AGENT_SCHEMA)
        for agent in agents:

            def keep_answer(
                state: OverAllState, values: dict[str, Any], _: dict[str, Any], n: str = agent.name
            ) -> dict[str, Any]:
                return {"results": {n: last_answer(values)}}

            fn, afn = _agent_node(agent, keep_answer)
            g.add_node(agent.name, fn, kind="agent", afn=afn)
            g.add_edge(START, agent.name)

        def merge_node(state: OverAllState) -> dict[str, Any]:
            results = {a.name: state["results"][a.name] for a in agents}
            merged = merge(results)
            message = merged if isinstance(merged, AssistantMessage) else AssistantMessage(merged)
            return {"messages": [message]}

        g.add_node("merge", merge_node, kind="node")
        g.add_edge([a.name for a in agents], "merge").add_edge("merge", END)
        self.graph = compile_agent(g, saver, name, self)


class LlmRoutingAgent(BaseAgent):
    """A model reads the request and picks one or more sub-agents to handle it.

    The model is shown each sub-agent's name and description and answers with the
    names to use (a JSON list, or names in plain text). The chosen agents run (in
    parallel when several) on the conversation.
    """

    def __init__(
        self,
        name: str,
        model: ChatModel,
        agents: Sequence[BaseAgent],
        *,
        description: str = "",
        saver: CheckpointSaver | None = None,
    ) -> None:
        if not agents:
            raise UserError("LlmRoutingAgent needs at least one agent")
        _names(agents)
        missing = [a.name for a in agents if not a.description]
        if missing:
            raise UserError(
                f"sub-agents {missing} have no description; the router chooses by description"
            )
        self.name, self.description, self.agents, self.model = (
            name,
            description,
            list(agents),
            model,
        )
        names = [a.name for a in agents]
        listing = "\n".join(f"- {a.name}: {a.description}" for a in agents)
        prompt = (
            "Choose which of these agents should handle the user's latest request. Answer "
            f"with a JSON list of agent names, nothing else.\n{listing}"
        )

        def route(state: OverAllState) -> dict[str, Any]:
            answer = model.generate([SystemMessage(prompt), *state.get("messages", [])])
            chosen = _picked(answer.text, names)
            if not chosen:
                raise UserError(
                    f"router {name!r}: the model chose no known agent (said {answer.text!r:.100}); "
                    f"known agents: {', '.join(names)}"
                )
            return {"route": chosen}

        g = StateGraph({**AGENT_SCHEMA, "route": ReplaceStrategy()})
        g.add_node("route", route, kind="model")
        g.add_edge(START, "route")
        g.add_conditional_edges("route", lambda s: s["route"], names)
        for agent in agents:
            fn, afn = _agent_node(agent)
            g.add_node(agent.name, fn, kind="agent", afn=afn)
            g.add_edge(agent.name, END)
        self.graph = compile_agent(g, saver, name, self)


def _picked(text: str, names: Sequence[str]) -> list[str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, str):
        data = [data]
    if isinstance(data, list):
        return [n for n in names if n in data]
    return [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]


class LoopAgent(BaseAgent):
    """Run one agent again and again: a number of times, or until a condition holds.

    Args:
        name: the agent's name.
        agent: the agent to repeat.
        max_iterations: most rounds.
        until: ``state -> bool``; stop as soon as it is true after a round.
    """

    def __init__(
        self,
        name: str,
        agent: BaseAgent,
        *,
        max_iterations: int = 3,
        until: Callable[[Mapping[str, Any]], bool] | None = None,
        description: str = "",
        saver: CheckpointSaver | None = None,
    ) -> None:
        if max_iterations < 1:
            raise UserError("LoopAgent needs max_iterations >= 1")
        self.name, self.description, self.agent = name, description, agent
        self.max_iterations, self.until = max_iterations, until

        def count(
            state: OverAllState, values: dict[str, Any], update: dict[str, Any]
        ) -> dict[str, Any]:
            return {**update, "loop_rounds": (state.get("loop_rounds") or 0) + 1}

        fn, afn = _agent_node(agent, count)

        def again(state: OverAllState) -> str:
            if (state.get("loop_rounds") or 0) >= max_iterations:
                return END
            if until is not None and until(state):
                return END
            return agent.name

        g = StateGraph({**AGENT_SCHEMA, "loop_rounds": ReplaceStrategy()})
        g.add_node(agent.name, fn, kind="agent", afn=afn)
        g.add_edge(START, agent.name)
        g.add_conditional_edges(agent.name, again, [agent.name, END])
        self.graph = compile_agent(g, saver, name, self)

    def prepare_input(self, input: Any) -> Any:
        """New input starts the round count again."""
        prepared = super().prepare_input(input)
        if isinstance(prepared, dict):
            prepared["loop_rounds"] = 0
        return prepared
