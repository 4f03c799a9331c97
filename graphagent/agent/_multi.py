"""Multi-agent patterns, each a graph that draws and checkpoints like any other.

``SequentialAgent``, ``ParallelAgent``, ``LlmRoutingAgent`` and ``LoopAgent`` compose
agents into a graph whose nodes are the sub-agents (what each sees and hands back:
``graphagent.agent._subagent``); ``AgentTool`` makes an agent a tool of another agent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from checkpoint.base import CheckpointSaver
from graphagent.agent._base import BaseAgent, compile_agent
from graphagent.agent._merge import (
    ConcatenationMergeStrategy,
    DefaultMergeStrategy,
    Limit,
    ListMergeStrategy,
    MergeStrategy,
)
from graphagent.agent._subagent import agent_node, check_names, composite_schema
from graphagent.errors import InvalidUpdateError, UserError
from graphagent.graph import END, START, OverAllState, ReplaceStrategy, StateGraph
from graphagent.messages import AssistantMessage, SystemMessage, UserMessage
from graphagent.models import ChatModel

__all__ = [
    "ConcatenationMergeStrategy",
    "DefaultMergeStrategy",
    "ListMergeStrategy",
    "LlmRoutingAgent",
    "LoopAgent",
    "MergeStrategy",
    "ParallelAgent",
    "SequentialAgent",
    "json_array",
]


class SequentialAgent(BaseAgent):
    """Run agents one after another on one conversation.

    Each sub-agent sees the conversation so far (unless it was built with
    ``include_contents=False``) and adds its final answer to it (every message it made
    with ``return_reasoning_contents=True``). A sub-agent's ``output_key`` puts its answer
    in the state, where later sub-agents' ``instruction`` placeholders read it.

    Example:
        >>> from graphagent.agent import ReactAgent
        >>> from graphagent.models import FakeChatModel
        >>> draft = ReactAgent(name="draft", model=FakeChatModel(["A first draft."]),
        ...                    output_key="draft")
        >>> edit = ReactAgent(name="edit", model=FakeChatModel(["An edited draft."]),
        ...                   instruction="Edit this: {draft}")
        >>> writer = SequentialAgent("writer", [draft, edit])
        >>> state = writer.invoke("Write about owls.")
        >>> state["draft"], state["messages"][-1].text
        ('A first draft.', 'An edited draft.')
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
        check_names(agents)
        self.name, self.description, self.agents = name, description, list(agents)
        g = StateGraph(composite_schema(agents))
        previous = START
        for agent in agents:
            fn, afn = agent_node(agent)
            g.add_node(agent.name, fn, kind="agent", afn=afn)
            g.add_edge(previous, agent.name)
            previous = agent.name
        g.add_edge(previous, END)
        self.graph = compile_agent(g, saver, name, self)


def _join(results: Mapping[str, AssistantMessage]) -> str:
    return "\n\n".join(f"{name}: {message.text}" for name, message in results.items())


class ParallelAgent(BaseAgent):
    """Run agents at the same time on the same input, then merge their answers.

    Each sub-agent works on its own copy of the conversation; only its final answer is
    kept, in ``state["results"][agent name]``, and ``merge(results)`` makes the one
    answer added to the conversation. With ``merge_output_key``, ``merge_strategy``
    also merges the answers (by each sub-agent's ``output_key``, else its name) into one
    value stored under that key: a dict (:class:`DefaultMergeStrategy`), a list
    (:class:`ListMergeStrategy`) or one text (:class:`ConcatenationMergeStrategy`).

    Args:
        name: the agent's name.
        agents: the sub-agents (their ``output_key`` values must differ).
        merge: ``{agent name: answer} -> str | AssistantMessage`` (default: each answer
            under its agent's name).
        merge_output_key: the state key the merged value is written to.
        merge_strategy: how the answers merge into that value (default: a dict).
        max_concurrency: most sub-agents running at once (default: all).

    Example:
        >>> from graphagent.agent import ReactAgent
        >>> from graphagent.models import FakeChatModel
        >>> poem = ReactAgent(name="poem", model=FakeChatModel(["Owls hoot."]), output_key="poem")
        >>> prose = ReactAgent(name="prose", model=FakeChatModel(["Owls fly."]))
        >>> both = ParallelAgent("both", [poem, prose], merge_output_key="all",
        ...                      merge_strategy=ListMergeStrategy())
        >>> both.invoke("Owls")["all"]
        ['Owls hoot.', 'Owls fly.']
    """

    def __init__(
        self,
        name: str,
        agents: Sequence[BaseAgent],
        *,
        merge: Callable[[Mapping[str, AssistantMessage]], str | AssistantMessage] = _join,
        merge_output_key: str | None = None,
        merge_strategy: MergeStrategy | None = None,
        max_concurrency: int | None = None,
        description: str = "",
        saver: CheckpointSaver | None = None,
    ) -> None:
        if len(agents) < 2:
            raise UserError("ParallelAgent needs at least two agents")
        if max_concurrency is not None and max_concurrency < 1:
            raise UserError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if merge_strategy is not None and merge_output_key is None:
            raise UserError(
                "merge_strategy merges into merge_output_key: pass merge_output_key=... too"
            )
        check_names(agents)
        keys = [a.output_key for a in agents if a.output_key is not None]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise UserError(
                f"sub-agents of ParallelAgent {name!r} share output_key(s) {twice}; each "
                "needs its own, or their answers overwrite each other"
            )
        self.name, self.description, self.agents = name, description, list(agents)
        self.merge_output_key, self.max_concurrency = merge_output_key, max_concurrency
        strategy = merge_strategy or DefaultMergeStrategy()
        limit = Limit(max_concurrency) if max_concurrency is not None else None
        g = StateGraph(composite_schema(agents))
        for agent in agents:

            def keep_answer(
                state: OverAllState, values: dict[str, Any], update: dict[str, Any], a: Any = agent
            ) -> dict[str, Any]:
                update.pop("messages", None)  # the merge adds the one answer
                return {**update, "results": {a.name: _answer(values)}}

            fn, afn = agent_node(agent, keep_answer)
            if limit is not None:
                fn, afn = limit.wrap(fn, afn)
            g.add_node(agent.name, fn, kind="agent", afn=afn)
            g.add_edge(START, agent.name)

        def merge_node(state: OverAllState) -> dict[str, Any]:
            answers = {a.name: state["results"][a.name] for a in agents}
            merged = merge(answers)
            message = merged if isinstance(merged, AssistantMessage) else AssistantMessage(merged)
            update: dict[str, Any] = {"messages": [message]}
            if merge_output_key is not None:
                by_key: dict[str, Any] = {}
                for a in agents:  # an output_key's value, else the answer's text
                    written = state.get(a.output_key) if a.output_key else None
                    by_key[a.output_key or a.name] = (
                        written if written is not None else answers[a.name].text
                    )
                update[merge_output_key] = strategy.merge(by_key, state)
            return update

        g.add_node("merge", merge_node, kind="node")
        g.add_edge([a.name for a in agents], "merge").add_edge("merge", END)
        self.graph = compile_agent(g, saver, name, self)


def _answer(values: Mapping[str, Any]) -> AssistantMessage:
    for message in reversed(values.get("messages", ())):
        if isinstance(message, AssistantMessage):
            return message
    return AssistantMessage("")


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
        check_names(agents)
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

        g = StateGraph(composite_schema(agents, {"route": ReplaceStrategy()}))
        g.add_node("route", route, kind="model")
        g.add_edge(START, "route")
        g.add_conditional_edges("route", lambda s: s["route"], names)
        for agent in agents:
            fn, afn = agent_node(agent)
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


def json_array(state: Mapping[str, Any]) -> Any:
    """The items of :class:`LoopAgent`'s array mode by default: the last message's text,
    read as a JSON array (Spring AI Alibaba's ``LoopMode.array()``)."""
    messages = state.get("messages") or ()
    text = messages[-1].text if messages else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # not an array: the loop names what it got


class LoopAgent(BaseAgent):
    """Run one agent again and again: a number of times, until a condition holds, or
    once per item of a list (array mode).

    In array mode (``items=``) the items come from a state key (``items="topics"``), a
    function of the state, or :func:`LoopAgent.json_array` (the last message read as a
    JSON array); each round adds the item as a user message (JSON for what is not a
    string) and runs the agent on it. ``max_iterations`` still bounds the rounds.

    Args:
        name: the agent's name.
        agent: the agent to repeat.
        max_iterations: most rounds.
        until: ``state -> bool``; stop as soon as it is true after a round.
        items: array mode: a state key, or ``state -> list``.

    Example:
        >>> from graphagent.agent import ReactAgent
        >>> from graphagent.models import FunctionChatModel
        >>> shout = ReactAgent(name="shout", model=FunctionChatModel(
        ...     lambda messages, tools: messages[-1].text.upper()))
        >>> loop = LoopAgent("each", shout, items="words", max_iterations=10)
        >>> [m.text for m in loop.invoke({"messages": [], "words": ["a", "b"]})["messages"]]
        ['a', 'A', 'b', 'B']
    """

    json_array = staticmethod(json_array)

    def __init__(
        self,
        name: str,
        agent: BaseAgent,
        *,
        max_iterations: int = 3,
        until: Callable[[Mapping[str, Any]], bool] | None = None,
        items: str | Callable[[Mapping[str, Any]], Any] | None = None,
        description: str = "",
        saver: CheckpointSaver | None = None,
    ) -> None:
        if max_iterations < 1:
            raise UserError("LoopAgent needs max_iterations >= 1")
        if items is not None and not (isinstance(items, str) or callable(items)):
            raise UserError(f"items takes a state key or a function of the state, got {items!r}")
        self.name, self.description, self.agent = name, description, agent
        self.max_iterations, self.until, self.items = max_iterations, until, items
        run, arun = agent_node(agent, self._count)

        def fn(state: OverAllState, config: Any) -> dict[str, Any]:
            before, view = self._next_item(state)
            return before if view is None else _joined(before, run(view, config))

        async def afn(state: OverAllState, config: Any) -> dict[str, Any]:
            before, view = self._next_item(state)
            return before if view is None else _joined(before, await arun(view, config))

        g = StateGraph(
            composite_schema(
                [agent], {"loop_rounds": ReplaceStrategy(), "loop_items": ReplaceStrategy()}
            )
        )
        if items is None:
            g.add_node(agent.name, run, kind="agent", afn=arun)
        else:
            g.add_node(agent.name, fn, kind="agent", afn=afn)
        g.add_edge(START, agent.name)
        g.add_conditional_edges(agent.name, self._again, [agent.name, END])
        self.graph = compile_agent(g, saver, name, self)

    @staticmethod
    def _count(state: OverAllState, values: dict[str, Any], update: dict[str, Any]) -> Any:
        return {**update, "loop_rounds": (state.get("loop_rounds") or 0) + 1}

    def _items(self, state: OverAllState) -> list[Any]:
        source = self.items
        found = source(state) if callable(source) else state.get(source)  # type: ignore[arg-type]
        if isinstance(found, (str, bytes, Mapping)) or not isinstance(found, Sequence):
            where = f"state key {source!r}" if isinstance(source, str) else "items"
            raise InvalidUpdateError(
                f"LoopAgent {self.name!r} loops over a list, but {where} gave "
                f"{type(found).__name__} {found!r:.80}; give it a list (a JSON array)"
            )
        return list(found)

    def _next_item(self, state: OverAllState) -> tuple[dict[str, Any], Any]:
        """Array mode: the update that adds this round's item, and the state the agent
        then runs on (``None`` when no item is left: the agent does not run)."""
        rounds = state.get("loop_rounds") or 0
        items = state.get("loop_items") if rounds else None
        before: dict[str, Any] = {}
        if items is None:
            items = self._items(state)
            before["loop_items"] = items
        if rounds >= len(items):
            return {**before, "loop_rounds": rounds}, None
        item = items[rounds]
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, default=str)
        message = UserMessage(text)
        before["messages"] = [message]
        view = {**state, "messages": [*state.get("messages", ()), message]}
        return before, view

    def _again(self, state: OverAllState) -> str:
        rounds = state.get("loop_rounds") or 0
        if rounds >= self.max_iterations:
            return END
        if self.items is not None:
            items = state.get("loop_items") or ()
            if rounds >= len(items):
                return END
        if self.until is not None and self.until(state):
            return END
        return self.agent.name

    def prepare_input(self, input: Any) -> Any:
        """New input starts the round count (and the items) again."""
        prepared = super().prepare_input(input)
        if isinstance(prepared, dict):
            prepared["loop_rounds"] = 0
            prepared["loop_items"] = None
        return prepared


def _joined(before: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``before`` then ``update``, their messages one after the other."""
    messages = [*before.get("messages", ()), *update.get("messages", ())]
    return {**before, **update, "messages": messages}
