"""The served agents and graphs, as the Agent Protocol's assistants."""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from checkpoint.base import CheckpointSaver
from graphagent.agent import BaseAgent
from graphagent.graph import CompiledGraph
from graphagent.server._errors import ApiError

__all__ = ["Assistant", "Assistants", "assistant_uuid"]

# LangGraph's server derives a graph's default assistant id the same way (uuid5 under the
# URL namespace), so a client that saved an assistant_id from one finds it on the other
_NAMESPACE = uuid.NAMESPACE_URL


def assistant_uuid(graph_id: str) -> str:
    """The assistant id of a served graph: a UUID derived from its name."""
    return str(uuid.uuid5(_NAMESPACE, graph_id))


@dataclass(frozen=True)
class Assistant:
    """One served agent or graph.

    Attributes:
        name: the graph's name: its ``graph_id``, ``name`` and accepted ``assistant_id``.
        graph: the compiled graph, checkpointing into the server's saver.
        agent: the agent, when the target is one (it prepares a run's input).
        description: shown to clients.
    """

    name: str
    graph: CompiledGraph
    agent: BaseAgent | None = None
    description: str | None = None
    created_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat())

    @property
    def assistant_id(self) -> str:
        """The assistant's UUID."""
        return assistant_uuid(self.name)

    def prepare(self, input: Any) -> Any:
        """A run's input as the graph takes it (an agent adds its per-run record)."""
        if self.agent is not None:
            return self.agent.prepare_input(input)
        return input

    def to_wire(self) -> dict[str, Any]:
        """As ``assistants.get`` answers."""
        return {
            "assistant_id": self.assistant_id,
            "graph_id": self.name,
            "name": self.name,
            "description": self.description,
            "config": {},
            "context": {},
            "metadata": {"created_by": "system"},
            "version": 1,
            "created_at": self.created_at,
            "updated_at": self.created_at,
        }


def _assistant(target: Any, saver: CheckpointSaver) -> Assistant:
    if isinstance(target, BaseAgent):
        graph = target.graph.with_saver(saver)
        return Assistant(target.name, graph, target, getattr(target, "description", None) or None)
    if isinstance(target, CompiledGraph):
        return Assistant(target.name, target.with_saver(saver))
    raise TypeError(
        f"cannot serve {type(target).__name__} {target!r:.80}: serve a ReactAgent (any agent) "
        "or a compiled graph (StateGraph.compile())"
    )


class Assistants:
    """The served assistants, found by name or by UUID.

    Args:
        targets: agents and compiled graphs; their names must differ.
        saver: where every thread is checkpointed.
    """

    def __init__(self, targets: Iterable[Any], saver: CheckpointSaver) -> None:
        self._by_id: dict[str, Assistant] = {}
        for target in targets:
            assistant = _assistant(target, saver)
            if assistant.name in self._by_id:
                raise ValueError(
                    f"two targets are named {assistant.name!r}: give each agent or graph its "
                    "own name (ReactAgent(name=...), compile(name=...))"
                )
            self._by_id[assistant.name] = assistant
            self._by_id[assistant.assistant_id] = assistant
        if not self._by_id:
            raise ValueError("nothing to serve: pass at least one agent or compiled graph")

    def __iter__(self) -> Any:
        seen = []
        for assistant in self._by_id.values():
            if assistant not in seen:
                seen.append(assistant)
        return iter(seen)

    def get(self, ident: str) -> Assistant:
        """The assistant with this name or UUID; 404 naming it and the served ones."""
        found = self._by_id.get(ident)
        if found is None:
            names = ", ".join(sorted(a.name for a in self))
            raise ApiError(404, f"assistant {ident!r} not found: this server serves {names}")
        return found

    def find(self, ident: str | None) -> Assistant | None:
        """The assistant with this name or UUID, if served."""
        return self._by_id.get(ident) if ident else None

    def search(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``assistants.search``: by ``graph_id``, ``name`` and ``metadata``."""
        out = []
        for a in self:
            wire = a.to_wire()
            if body.get("graph_id") and body["graph_id"] != a.name:
                continue
            if body.get("name") and body["name"] not in a.name:
                continue
            meta = body.get("metadata") or {}
            if any(wire["metadata"].get(k) != v for k, v in meta.items()):
                continue
            out.append(wire)
        offset, limit = int(body.get("offset") or 0), int(body.get("limit") or 10)
        return out[offset : offset + limit]
