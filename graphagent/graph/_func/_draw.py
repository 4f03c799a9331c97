"""An entrypoint drawn: one node, its tasks listed under its name; over a thread, each
task marked with what the thread's run did with it (ran, replayed, kept, waiting).

The drawing itself is the graph wing's (``CompiledGraph.draw``): this module only writes
the task lines into a copy of the entrypoint's plan.
"""

from __future__ import annotations

import dataclasses
import dis
import types
from collections.abc import Callable, Iterator
from typing import Any

from graphagent.config import ConfigLike, ensure_config
from graphagent.errors import UserError
from graphagent.graph._compiled import CompiledGraph
from graphagent.graph._func._task import Task
from graphagent.graph.draw import Drawing

__all__ = ["drawing", "task_lines", "tasks_named_in"]

_RAN, _REPLAYED = "\u2713", "\u21ba"  # check mark, anticlockwise arrow


def _loads(code: types.CodeType) -> Iterator[tuple[int, int, str]]:
    """``(line, offset, name)`` of each global or closure name ``code`` (and the code
    nested in it: comprehensions, inner functions) loads."""
    line = code.co_firstlineno
    for ins in dis.get_instructions(code):
        line = ins.starts_line or line
        if ins.opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLASSDEREF"):
            yield line, ins.offset, str(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _loads(const)


def tasks_named_in(fn: Callable[..., Any]) -> dict[str, Task[Any]]:
    """The tasks ``fn``'s code refers to (globals and closure), by name, in the order its
    lines name them."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return {}
    scope: dict[str, Any] = dict(getattr(fn, "__globals__", {}))
    for var, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or (), strict=False):
        try:
            scope[var] = cell.cell_contents
        except ValueError:  # an empty cell: a name bound later
            continue
    found: dict[str, Task[Any]] = {}
    for _, _, name in sorted(_loads(code)):
        value = scope.get(name)
        if isinstance(value, Task):
            found.setdefault(value.name, value)
    return found


def task_lines(graph: CompiledGraph, name: str, config: ConfigLike) -> list[str]:
    """One line per task for the thread's state at ``config``: how many calls ran and
    were replayed by the run that wrote it; for a paused run, the calls kept so far and
    those waiting for an answer."""
    state = graph.get_state(config)
    saver = graph.saver
    lines: list[str] = []
    if state.interrupts and saver is not None:
        cfg = ensure_config(config)
        assert cfg.thread_id is not None
        checkpoint = saver.get(cfg.thread_id, state.checkpoint_id)
        kept: dict[str, int] = {}
        for w in checkpoint.pending_writes if checkpoint is not None else ():
            record = w.value[1] if w.kind == "nested" else None
            # a result stored as its call finished is its own write (once per call)
            if isinstance(record, dict) and "task" in record and w.task == w.value[0]:
                task = str(record["task"])
                kept[task] = kept.get(task, 0) + 1
        lines = [f"{_RAN} {task} \u00d7{n} kept" for task, n in kept.items()]
        for question in state.interrupts:
            part = question.path[-1] if question.path else question.node
            asker = part.rsplit(":", 1)[0]
            if asker != name:
                lines.append(f"\u23f8 {asker} waiting")
        return lines
    counts = state.values.get("tasks") or {}
    for task, (ran, replayed) in counts.items():
        done = [f"{_RAN} ran \u00d7{ran}"] if ran else []
        done += [f"{_REPLAYED} replayed \u00d7{replayed}"] if replayed else []
        lines.append(f"{task}: {', '.join(done)}")
    return lines


def drawing(
    graph: CompiledGraph,
    name: str,
    tasks: list[str],
    fmt: str,
    thread_id: str | None,
    config: ConfigLike,
) -> Drawing:
    """``Entrypoint.draw``: the one-node ``graph`` of entrypoint ``name``, listing
    ``tasks`` (or, over a thread, what its run did with each)."""
    if thread_id is not None or config is not None:
        cfg = ensure_config(config, thread_id=thread_id)
        if cfg.thread_id is None:
            raise UserError("draw(config=...) needs a thread_id to draw a run")
        lines = task_lines(graph, name, cfg) or tasks
        return _with_tasks(graph, name, lines).draw(fmt, config=cfg)
    return _with_tasks(graph, name, tasks).draw(fmt)


def _with_tasks(graph: CompiledGraph, name: str, lines: list[str]) -> CompiledGraph:
    """The entrypoint's graph with ``lines`` listed under its node."""
    plan = graph.plan
    spec = plan.topology.nodes[name]
    nodes = dict(plan.topology.nodes)
    nodes[name] = dataclasses.replace(spec, metadata={"tasks": lines})
    topology = dataclasses.replace(plan.topology, nodes=nodes)
    return CompiledGraph(dataclasses.replace(plan, topology=topology))
