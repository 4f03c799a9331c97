"""``@entrypoint``: a plain function as a durable, per-thread runnable.

An entrypoint is a one-node graph run by the graph engine (``graphagent.graph``), so it
checkpoints into the same savers, pauses and resumes the same way, and has the same thread
API. This face translates between the function's world (an input, a return value, a saved
value) and the graph's state (see ``_node``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from checkpoint.base import CheckpointSaver
from graphagent.config import ConfigLike, RunnableConfig
from graphagent.errors import UserError
from graphagent.graph._builder import StateGraph
from graphagent.graph._command import Command
from graphagent.graph._compiled import CompiledGraph, parse_modes
from graphagent.graph._constants import END, START
from graphagent.graph._func._draw import drawing, tasks_named_in
from graphagent.graph._func._node import Final, Runner, signature_of
from graphagent.graph._func._streams import Translator, engine_modes
from graphagent.graph._snapshot import StateHistory, StateSnapshot
from graphagent.graph._strategies import ReplaceStrategy
from graphagent.graph.draw import Drawing

__all__ = ["Entrypoint", "entrypoint"]

T = TypeVar("T")
_INTERRUPT = "__interrupt__"


def _graph_input(input: Any) -> Any:
    """The graph's input for an entrypoint's: ``None`` (continue) and commands pass."""
    return input if input is None or isinstance(input, Command) else {"input": input}


def _output(out: Mapping[str, Any]) -> Any:
    """What the caller gets from a run's final state: the function's return value, or
    ``{"__interrupt__": (...)}`` when the run paused."""
    if _INTERRUPT in out:
        return {_INTERRUPT: out[_INTERRUPT]}
    return out.get("value")


def _shown(snapshot: StateSnapshot) -> StateSnapshot:
    """A thread's snapshot as an entrypoint's: ``values`` is what the function returned."""
    if not snapshot.exists:
        return snapshot
    # a plain snapshot (a listed one builds its values from its listing, which holds the
    # graph's state, not the return value)
    kept = {f.name: getattr(snapshot, f.name) for f in dataclasses.fields(snapshot)}
    kept["values"] = snapshot.values.get("value")
    return StateSnapshot(**kept)


class Entrypoint(Generic[T]):
    """A function made durable by :class:`entrypoint`: run it per thread, stream it,
    read and update its threads, draw it.

    Attributes:
        name: the entrypoint's name (its function's, unless given).
        graph: the one-node compiled graph it runs as.
    """

    def __init__(self, runner: Runner, graph: CompiledGraph, known: dict[str, Any]) -> None:
        self._runner = runner
        self._known = known
        self.graph = graph
        self.name = runner.name

    @property
    def saver(self) -> CheckpointSaver | None:
        """Where threads are checkpointed (``None``: runs are not saved)."""
        return self.graph.saver

    @property
    def store(self) -> Any:
        """The long-term memory store a ``store`` parameter receives (``None``: none)."""
        return self.graph.store

    @property
    def tasks(self) -> tuple[str, ...]:
        """The names of the tasks this entrypoint is known to call (from its code, and
        from its runs so far)."""
        return tuple(dict.fromkeys([*self._known, *self._runner.seen]))

    @property
    def cache(self) -> Any:
        """Where tasks with a ``CachePolicy`` keep results (``None``: they run each time)."""
        return self._runner.cache

    def _namespaces(self) -> list[tuple[str, ...]]:
        both = {**self._known, **self._runner.seen}
        return [t.cache_namespace for t in both.values()]

    def clear_cache(self) -> None:
        """Forget the cached results of this entrypoint's tasks (those its code names and
        those its runs have called)."""
        if self.cache is not None:
            self.cache.clear(self._namespaces())

    async def aclear_cache(self) -> None:
        """Async :meth:`clear_cache`."""
        if self.cache is not None:
            await self.cache.aclear(self._namespaces())

    # -- running ----------------------------------------------------------------------

    def invoke(self, input: Any, config: ConfigLike = None, *, thread_id: str | None = None) -> T:
        """Run the function on ``input`` and return what it returned.

        Args:
            input: the function's input; ``None`` continues the thread (after a crash or
                an error, finished tasks are not run again); ``Command(resume=answer)``
                answers an ``interrupt()``.
            config: a :class:`~graphagent.config.RunnableConfig` or a dict with its keys.
            thread_id: shortcut for ``config={"thread_id": ...}``.

        Returns:
            the return value (``entrypoint.final``'s ``value``), or
            ``{"__interrupt__": (Interrupt, ...)}`` when the run paused.
        """
        return _output(self.graph.invoke(_graph_input(input), config, thread_id=thread_id))  # type: ignore[no-any-return]

    async def ainvoke(
        self, input: Any, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> T:
        """Async :meth:`invoke`."""
        out = await self.graph.ainvoke(_graph_input(input), config, thread_id=thread_id)
        return _output(out)  # type: ignore[no-any-return]

    def stream(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        stream_mode: str | Sequence[str] | None = None,
    ) -> Iterator[Any]:
        """Run the function, yielding events as they happen.

        Modes: ``"updates"`` (``{task: result}`` as each task finishes, then
        ``{entrypoint: return value}``), ``"values"`` (the return value), ``"custom"``
        (what the function and its tasks pass to their ``writer``), ``"messages"``,
        ``"debug"``. A list of modes yields ``(mode, payload)`` pairs.
        """
        modes, pairs = parse_modes(stream_mode or mode)
        translate = Translator(modes, pairs)
        events = self.graph.stream(
            _graph_input(input), config, mode=engine_modes(modes), thread_id=thread_id
        )
        for engine_mode, payload in events:
            yield from translate(engine_mode, payload)

    async def astream(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        stream_mode: str | Sequence[str] | None = None,
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""
        modes, pairs = parse_modes(stream_mode or mode)
        translate = Translator(modes, pairs)
        events = self.graph.astream(
            _graph_input(input), config, mode=engine_modes(modes), thread_id=thread_id
        )
        async for engine_mode, payload in events:
            for event in translate(engine_mode, payload):
                yield event

    # -- threads ------------------------------------------------------------------------

    def get_state(
        self, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> StateSnapshot:
        """The thread's latest state (or the one at ``config.checkpoint_id``); its
        ``values`` is what the function last returned."""
        return _shown(self.graph.get_state(config, thread_id=thread_id))

    async def aget_state(
        self, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> StateSnapshot:
        """Async :meth:`get_state`."""
        return _shown(await self.graph.aget_state(config, thread_id=thread_id))

    def get_state_history(
        self,
        config: ConfigLike = None,
        *,
        limit: int | None = None,
        before: str | None = None,
        thread_id: str | None = None,
    ) -> StateHistory:
        """The thread's checkpoints, newest first (each ``values``: the return value)."""
        history = self.graph.get_state_history(
            config, limit=limit, before=before, thread_id=thread_id
        )
        return StateHistory(_shown(s) for s in history)

    async def aget_state_history(
        self,
        config: ConfigLike = None,
        *,
        limit: int | None = None,
        before: str | None = None,
        thread_id: str | None = None,
    ) -> StateHistory:
        """Async :meth:`get_state_history`."""
        history = await self.graph.aget_state_history(
            config, limit=limit, before=before, thread_id=thread_id
        )
        return StateHistory(_shown(s) for s in history)

    def update_state(
        self, config: ConfigLike, value: Any, as_node: str | None = None
    ) -> RunnableConfig:
        """Set what the thread's next run gets as ``previous`` (and its current value).

        Returns:
            a config pointing at the new checkpoint.
        """
        return self.graph.update_state(config, self._saved(value, as_node))

    async def aupdate_state(
        self, config: ConfigLike, value: Any, as_node: str | None = None
    ) -> RunnableConfig:
        """Async :meth:`update_state`."""
        return await self.graph.aupdate_state(config, self._saved(value, as_node))

    def _saved(self, value: Any, as_node: str | None) -> dict[str, Any]:
        if as_node not in (None, self.name):
            raise UserError(
                f"as_node={as_node!r}: an entrypoint's state is written as itself "
                f"({self.name!r}); leave as_node out"
            )
        return {"value": value, "saved": value}

    def delete_thread(self, config: ConfigLike = None, *, thread_id: str | None = None) -> None:
        """Forget everything saved for the thread."""
        self.graph.delete_thread(config, thread_id=thread_id)

    async def adelete_thread(
        self, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> None:
        """Async :meth:`delete_thread`."""
        await self.graph.adelete_thread(config, thread_id=thread_id)

    # -- looking at it ------------------------------------------------------------------

    def draw(
        self, fmt: str = "svg", *, thread_id: str | None = None, config: ConfigLike = None
    ) -> Drawing:
        """The entrypoint as one node listing its tasks; with a thread, the SVG marks
        which tasks ran and which were replayed in the run that wrote its state."""
        return drawing(self.graph, self.name, list(self.tasks), fmt, thread_id, config)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self.draw("svg")._repr_mimebundle_(include, exclude)

    def __repr__(self) -> str:
        saver = type(self.saver).__name__ if self.saver is not None else "no saver"
        return f"<Entrypoint {self.name!r}: {len(self.tasks)} tasks known, {saver}>"


class entrypoint:
    """Make a function a durable workflow: ``@entrypoint(saver=MemorySaver())``.

    The function takes its input as its first parameter, and by name any of
    ``previous`` (what the thread's last run saved), ``config``, ``writer`` (custom stream
    events) and ``store``. Tasks it calls (:func:`~graphagent.func.task`) run
    concurrently and their results are checkpointed as they finish; a run resumed after
    ``interrupt()``, an error or a crash gets finished tasks' results back without running
    them again.

    Args:
        saver: where threads are checkpointed (any ``checkpoint`` saver).
        checkpointer: LangGraph's name for ``saver``.
        store: long-term memory; a ``store`` parameter receives it.
        cache: where tasks with a ``CachePolicy`` keep their results, across runs and
            threads (``checkpoint.cache``: ``MemoryCache()``, ``SqliteCache``,
            ``RedisCache``).
        name: the entrypoint's name (its function's unless given).

    Example:
        >>> from checkpoint import MemorySaver
        >>> @entrypoint(saver=MemorySaver())
        ... def count(word: str, *, previous: list[str] | None = None) -> list[str]:
        ...     return [*(previous or []), word]
        >>> count.invoke("a", thread_id="t"), count.invoke("b", thread_id="t")
        (['a'], ['a', 'b'])
    """

    final = Final
    """``entrypoint.final(value=, save=)``: return ``value``, keep ``save`` for the next
    run's ``previous``."""

    def __init__(
        self,
        saver: CheckpointSaver | None = None,
        *,
        checkpointer: CheckpointSaver | None = None,
        store: Any = None,
        cache: Any = None,
        name: str | None = None,
    ) -> None:
        if saver is not None and checkpointer is not None:
            raise UserError("pass either saver= or checkpointer=, not both")
        self.saver = saver if saver is not None else checkpointer
        self.store = store
        self.cache = cache
        self.name = name

    def __call__(self, fn: Callable[..., T]) -> Entrypoint[T]:
        name = self.name or getattr(fn, "__name__", "") or "entrypoint"
        runner = Runner(fn, name, signature_of(fn, name), self.cache)
        g = StateGraph({k: ReplaceStrategy() for k in ("input", "value", "saved", "tasks")})
        known = tasks_named_in(fn)
        g.add_node(
            name, runner, kind="entrypoint", metadata={"tasks": list(known)}, afn=runner.arun
        )
        g.add_edge(START, name).add_edge(name, END)
        compiled = g.compile(self.saver, name=name, store=self.store)
        # the input is stored before the function runs: its tasks' results are kept on it
        plan = dataclasses.replace(compiled.plan, input_first=True)
        return Entrypoint(runner, CompiledGraph(plan), known)
