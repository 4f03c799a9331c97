"""An agent as a node of a composite agent: what it sees of the parent's state, and what
of its run comes back (Spring AI Alibaba's ``includeContents``,
``returnReasoningContents`` and ``outputKey``).

- ``include_contents=True`` (default): the sub-agent sees the parent's conversation.
  ``False``: it sees only its instruction and the parent's latest user message.
- ``return_reasoning_contents=False`` (default): only the sub-agent's final answer is
  added to the parent's conversation, not its tool calls, tool results or instruction.
  ``True``: everything it added.
- ``output_key``: the final answer (its text, or the structured answer) is also written
  to the parent's state under that key, through ``output_key_strategy`` (default:
  replace), so later agents read it and ``instruction`` placeholders name it.
- Other public keys the sub-agent wrote (a nested composite's sub-agents' output keys)
  reach the parent too.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from graphagent.agent._base import AGENT_SCHEMA, last_answer
from graphagent.agent._record import AGENT_KEY
from graphagent.config import RunnableConfig
from graphagent.errors import UserError
from graphagent.graph import KeyStrategy, OverAllState, ReplaceStrategy, is_private
from graphagent.messages import Message, SystemMessage, UserMessage

if TYPE_CHECKING:
    from graphagent.agent._base import BaseAgent

__all__ = [
    "LOOP_KEYS",
    "agent_node",
    "check_names",
    "composite_schema",
    "output_value",
    "render_instruction",
    "sub_messages",
]

Shape = Callable[[OverAllState, dict[str, Any], dict[str, Any]], dict[str, Any]]

LOOP_KEYS = frozenset({"loop_rounds", "loop_items", "route"})
"""Bookkeeping keys of the composite agents: never handed from a sub-agent to its parent."""


class _Template(string.Formatter):
    """``str.format`` that leaves unknown ``{names}`` as written and reads a message's text."""

    def get_value(self, key: Any, args: Any, kwargs: Any) -> Any:
        if key not in kwargs:
            return "{" + str(key) + "}"
        value = kwargs[key]
        return value.text if isinstance(value, Message) else value


def render_instruction(instruction: str, fields: Mapping[str, Any]) -> str:
    """``instruction`` with ``{key}`` placeholders filled from ``fields`` (state keys,
    and ``input``: the latest user text); unknown names stay as written.

    Example:
        >>> render_instruction("Review: {article} ({missing})", {"article": "Owls."})
        'Review: Owls. ({missing})'
    """
    try:
        return _Template().format(instruction, **fields)
    except (ValueError, IndexError, AttributeError, KeyError):
        return instruction  # braces that are not placeholders (JSON examples): as written


def latest_user_text(messages: Sequence[Message]) -> str:
    """The text of the last user message (``""`` if there is none)."""
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            return message.text
    return ""


def sub_messages(agent: BaseAgent, state: Mapping[str, Any]) -> list[Message]:
    """What ``agent`` is given of the parent's conversation, its instruction last."""
    history: list[Message] = list(state.get("messages", ()))
    if not agent.include_contents:
        history = [m for m in history if isinstance(m, UserMessage)][-1:]  # type: ignore[assignment]
    instruction = agent.instruction
    if instruction:
        fields = {k: v for k, v in state.items() if not is_private(k) and k != "messages"}
        fields["input"] = latest_user_text(history)
        history.append(SystemMessage(render_instruction(instruction, fields)))
    return history


def output_value(agent: BaseAgent, values: Mapping[str, Any]) -> Any:
    """What ``agent``'s run answered: its ``output_key`` value when it wrote one, else the
    structured answer of an ``output_type``/``output_schema`` agent, else the final text."""
    key = agent.output_key
    if key is not None and key in values:
        return values[key]
    structured = values.get("structured_response")
    if structured is not None and getattr(agent, "structured", False):
        return structured
    return last_answer(values).text


def _passed_up(net: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The public keys (besides messages and bookkeeping) the sub-agent wrote."""
    return {
        k: values[k]
        for k in net
        if k != "messages" and k in values and not is_private(k) and k not in LOOP_KEYS
    }


def agent_node(
    agent: BaseAgent, shape: Shape | None = None
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Sync and async node functions that run ``agent`` on the parent's state.

    The update holds the messages the parent keeps (see the module docstring), the
    ``output_key`` value and the other public keys the sub-agent wrote; ``shape`` turns
    ``(parent state, sub-agent's final values, update)`` into another update.
    """

    def prepare(state: OverAllState) -> dict[str, Any]:
        return dict(agent.prepare_sub_input(sub_messages(agent, state)))

    def finish(state: OverAllState, values: dict[str, Any], net: Any) -> dict[str, Any]:
        update = _passed_up(net, values)
        if agent.return_reasoning_contents:
            # what the sub-agent's run added, its instruction included
            known = {m.id for m in state.get("messages", ())}
            added = [m for m in values.get("messages", ()) if m.id not in known]
            if added:
                update["messages"] = added
        else:
            answer = last_answer(values)
            if answer.text or answer.tool_calls:
                update["messages"] = [answer]
        if agent.output_key is not None:
            update[agent.output_key] = output_value(agent, values)
        return shape(state, values, update) if shape is not None else update

    def run(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        values, net = agent.graph.run_nested(prepare(state), config)
        return finish(state, values, net)

    async def arun(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        values, net = await agent.graph.arun_nested(prepare(state), config)
        return finish(state, values, net)

    return run, arun


def check_names(agents: Sequence[BaseAgent], reserved: Sequence[str] = ("route", "merge")) -> None:
    """Refuse two sub-agents of one name, or a name the composite uses for its own node."""
    seen: set[str] = set()
    for a in agents:
        if a.name in seen:
            raise UserError(f"two sub-agents are named {a.name!r}; agent names must be unique")
        if a.name in reserved:
            raise UserError(f"{a.name!r} is reserved here; rename the agent")
        seen.add(a.name)


def composite_schema(
    agents: Sequence[BaseAgent], extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The state of a composite agent: the agent state, its own keys, and each sub-agent's
    ``output_key`` with its strategy (sub-agents of sub-agents included)."""
    schema: dict[str, Any] = {**AGENT_SCHEMA, **(extra or {})}
    for key, strategy in _output_keys(agents):
        if key in (AGENT_KEY, "messages") or key in LOOP_KEYS:
            raise UserError(
                f"output_key {key!r} is a key the agents keep for themselves; choose another"
            )
        known = schema.get(key)
        if known is not None and key not in AGENT_SCHEMA and strategy is not None:  # noqa: SIM102
            if type(known) is not type(strategy):
                raise UserError(
                    f"two sub-agents write output_key {key!r} with different strategies "
                    f"({schema[key]!r} and {strategy!r}); give them one strategy"
                )
        if key not in schema or strategy is not None:
            schema[key] = strategy if strategy is not None else ReplaceStrategy()
    return schema


def _output_keys(agents: Sequence[BaseAgent]) -> list[tuple[str, KeyStrategy | None]]:
    found: list[tuple[str, KeyStrategy | None]] = []
    for agent in agents:
        found.extend(_output_keys(getattr(agent, "agents", ())))
        inner = getattr(agent, "agent", None)
        if inner is not None:
            found.extend(_output_keys([inner]))
        if agent.output_key is not None:
            found.append((agent.output_key, agent.output_key_strategy))
    return found
