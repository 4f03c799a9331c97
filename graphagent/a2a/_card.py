"""The agent card: who the agent is, where it answers, and its skills (its tools)."""

from __future__ import annotations

import re
from typing import Any

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

__all__ = ["INPUT_MODES", "OUTPUT_MODES", "agent_card"]

INPUT_MODES = ["text/plain", "application/json", "image/*", "application/octet-stream"]
"""What the served agent reads: text, JSON data parts, images and files."""
OUTPUT_MODES = ["text/plain"]
"""What it answers with: text, streamed as artifact chunks."""


def _tools(agent: Any) -> list[Any]:
    """The tools an agent offers: a ReactAgent's own, else those of its sub-agents."""
    toolset = getattr(agent, "toolset", None)
    if isinstance(toolset, dict):
        return list(toolset.values())
    found: list[Any] = []
    for sub in getattr(agent, "agents", None) or ():
        found.extend(_tools(sub))
    return found


def _skill_id(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", name).strip("-") or "skill"


def _skills(agent: Any) -> list[AgentSkill]:
    seen: set[str] = set()
    skills = []
    for tool in _tools(agent):
        definition = getattr(tool, "definition", tool)
        if definition.name in seen:
            continue
        seen.add(definition.name)
        skills.append(
            AgentSkill(
                id=_skill_id(definition.name),
                name=definition.name,
                description=definition.description or f"The {definition.name} tool.",
                tags=["tool"],
            )
        )
    if not skills:  # an agent without tools is its own one skill
        skills.append(
            AgentSkill(
                id=_skill_id(agent.name),
                name=agent.name,
                description=getattr(agent, "description", "") or f"Talk to {agent.name}.",
                tags=["agent"],
            )
        )
    return skills


def agent_card(agent: Any, url: str, *, version: str, description: str | None = None) -> AgentCard:
    """The card for ``agent`` answering JSON-RPC and HTTP+JSON at ``url``.

    Args:
        agent: the agent served.
        url: where callers reach it (the card names it for both interfaces; JSON-RPC
            first, the binding the SDK's clients prefer by default).
        version: the agent's version, as the card tells it.
        description: shown to callers (default: the agent's, else one naming it).
    """
    about = description or getattr(agent, "description", "") or f"The {agent.name} agent."
    return AgentCard(
        name=agent.name,
        description=about,
        version=version,
        supported_interfaces=[
            AgentInterface(
                url=url, protocol_binding=binding.value, protocol_version=PROTOCOL_VERSION_1_0
            )
            for binding in (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=INPUT_MODES,
        default_output_modes=OUTPUT_MODES,
        skills=_skills(agent),
    )
