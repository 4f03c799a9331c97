"""What a compiled graph offers beyond running and reading threads: several state
updates as super-steps (``bulk_update_state``), and forgetting cached node results
(``clear_cache``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphagent.config import ConfigLike, RunnableConfig, ensure_config
from graphagent.errors import UserError
from graphagent.graph._drive import RESULT, adrive, drive, result_of
from graphagent.graph._plan import Plan
from graphagent.graph._policies import cache_namespace
from graphagent.graph._update import StateUpdate, bulk_update_program

__all__ = ["Maintenance"]


def _updates(supersteps: Sequence[Sequence[Any]]) -> list[list[StateUpdate]]:
    """Super-steps of ``(values, as_node)`` pairs, ``{"values", "as_node"}`` dicts or
    objects with those attributes (LangGraph's ``StateUpdate``)."""
    out: list[list[StateUpdate]] = []
    for step in supersteps:
        writes: list[StateUpdate] = []
        for item in step:
            if isinstance(item, Mapping) and "values" in item:
                writes.append((item["values"], item.get("as_node")))
            elif isinstance(item, tuple) and not hasattr(item, "values"):
                writes.append((item[0], item[1] if len(item) > 1 else None))
            elif hasattr(item, "values") and not isinstance(item, Mapping):
                writes.append((item.values, getattr(item, "as_node", None)))
            else:
                raise UserError(
                    f"bulk_update_state: {item!r} is not an update; give (values, as_node) "
                    "pairs, one list per super-step"
                )
        out.append(writes)
    return out


class Maintenance:
    """``bulk_update_state`` and ``clear_cache`` for :class:`CompiledGraph`."""

    __slots__ = ()
    plan: Plan

    def _bulk(self, config: ConfigLike, supersteps: Sequence[Sequence[Any]]) -> Any:
        saver = self.plan.saver
        if saver is None:
            raise UserError("bulk_update_state needs a saver: compile(saver=MemorySaver())")
        cfg = ensure_config(config)
        if cfg.thread_id is None:
            raise UserError("bulk_update_state needs a thread_id: pass config={'thread_id': ...}")
        return cfg, bulk_update_program(self.plan, cfg, _updates(supersteps))

    def bulk_update_state(
        self, config: ConfigLike, supersteps: Sequence[Sequence[Any]]
    ) -> RunnableConfig:
        """Write several updates to the thread, one checkpoint per super-step.

        Each super-step is a list of ``(values, as_node)`` writes merged as one step's
        node updates (two writes replacing one key in a super-step are refused); what
        runs next follows the last super-step's ``as_node`` edges.

        Returns:
            a config pointing at the last new checkpoint.

        Example::

            app.bulk_update_state(cfg, [[({"a": 1}, "n1")], [({"b": 2}, "n2"), ({"c": 3}, "n3")]])
        """
        cfg, program = self._bulk(config, supersteps)
        checkpoint_id = result_of(drive(program, self.plan.saver))
        return cfg.model_copy(update={"checkpoint_id": checkpoint_id})  # type: ignore[no-any-return]

    async def abulk_update_state(
        self, config: ConfigLike, supersteps: Sequence[Sequence[Any]]
    ) -> RunnableConfig:
        """Async :meth:`bulk_update_state`."""
        cfg, program = self._bulk(config, supersteps)
        checkpoint_id = None
        async for mode, payload in adrive(program, self.plan.saver):
            if mode is RESULT:
                checkpoint_id = payload
        return cfg.model_copy(update={"checkpoint_id": checkpoint_id})  # type: ignore[no-any-return]

    def _namespaces(self, nodes: Sequence[str] | None) -> list[tuple[str, ...]]:
        if self.plan.cache is None:
            raise UserError("clear_cache needs a cache: compile(cache=MemoryCache())")
        specs = self.plan.topology.nodes
        unknown = [n for n in nodes or () if n not in specs]
        if unknown:
            raise UserError(f"clear_cache: {', '.join(map(repr, unknown))} is not a node")
        names = list(specs) if nodes is None else list(nodes)
        found = [cache_namespace(n, specs[n].fn) for n in names if specs[n].cache is not None]
        if nodes is None:  # subgraphs without a cache of their own keep theirs here too
            found.extend(_inherited(self.plan))
        return found

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Forget the cached results of ``nodes`` (every cached node by default)."""
        namespaces = self._namespaces(nodes)
        if namespaces:
            self.plan.cache.clear(namespaces)

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Async :meth:`clear_cache`."""
        namespaces = self._namespaces(nodes)
        if namespaces:
            await self.plan.cache.aclear(namespaces)


def _inherited(plan: Plan) -> list[tuple[str, ...]]:
    """The cache namespaces of the cached nodes of ``plan``'s subgraphs (at any depth)
    that have no cache of their own, so use the one of the graph they run in."""
    found: list[tuple[str, ...]] = []
    for spec in plan.topology.nodes.values():
        sub = spec.subgraph
        if isinstance(sub, Plan) and sub.cache is None:
            nodes = sub.topology.nodes
            found += [cache_namespace(n, s.fn) for n, s in nodes.items() if s.cache is not None]
            found += _inherited(sub)
    return found
