"""Live progress of a run: which node, which tool, how long, updated in place.

A :class:`Tracker` is a lifecycle listener that keeps what a run is doing now. A view shows it:
in Jupyter one output updated in place through an IPython display handle (no widget
extension), in a terminal one status line rewritten with ``\\r``, elsewhere a line per
change. A ticker thread refreshes the elapsed time while nothing else changes.
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from graphagent._internal.listen import GraphLifecycleListener, listening
from graphagent._internal.observe import ChatInfo, NodeInfo, RunInfo, ToolInfo
from graphagent.errors import GraphBubbleUp
from graphagent.observability._logs import error_name, usage_of

__all__ = ["TerminalLine", "Tracker", "progress", "status_line"]


class Tracker(GraphLifecycleListener):
    """What a run is doing now, from the library's operations; safe across threads.

    A lifecycle listener: each running node, model request and tool call sits in its
    table (keyed by the operation's info object) from its start to its end.

    Args:
        on_change: called (from any thread) after anything changed.
    """

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self.lock = threading.Lock()
        self.on_change = on_change
        self.name = ""
        self.began: float | None = None
        self.ended_at: float | None = None
        self.depth = 0
        self.nodes: dict[object, tuple[str, float]] = {}
        self.tools: dict[object, tuple[str, float]] = {}
        self.chats: dict[object, tuple[str, float]] = {}
        self.model_calls = 0
        self.tool_calls = 0
        self.tokens = 0
        self.paused = False
        self.failure: str | None = None

    # -- listener ------------------------------------------------------------------------

    def on_run_start(self, run: RunInfo) -> None:
        """Track a run (the outermost names the display)."""
        with self.lock:
            if self.depth == 0 and self.began is None:
                self.name = run.graph
                self.began = time.monotonic()
            self.depth += 1
        self.changed()

    def on_run_end(self, run: RunInfo, values: Any, error: BaseException | None) -> None:
        """The outermost run's end ends the display, failed or not."""
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                self.ended_at = time.monotonic()
                if error is not None and not isinstance(error, (GraphBubbleUp, GeneratorExit)):
                    self.failure = error_name(error)
        self.changed()

    def on_node_start(self, node: NodeInfo) -> None:
        """Show a node while it runs, by its path through nested graphs."""
        self._began(self.nodes, node, " > ".join(node.path))

    def on_interrupt(self, node: NodeInfo) -> None:
        """The run waits for a human."""
        with self.lock:
            self.paused = True

    def on_node_end(self, node: NodeInfo, update: Any, error: BaseException | None) -> None:
        """The node no longer runs."""
        self._ended(self.nodes, node)

    def on_model_start(self, call: ChatInfo) -> None:
        """Show a model request while it runs."""
        self._began(self.chats, call, call.model)

    def on_model_end(self, call: ChatInfo, answer: Any, error: BaseException | None) -> None:
        """Count the call and its tokens."""
        with self.lock:
            if answer is not None:
                _, tokens_in, tokens_out = usage_of(answer)
                self.tokens += (tokens_in or 0) + (tokens_out or 0)
            self.model_calls += 1
        self._ended(self.chats, call)

    def on_tool_start(self, call: ToolInfo) -> None:
        """Show a tool call while it runs."""
        self._began(self.tools, call, call.name)

    def on_tool_end(self, call: ToolInfo, result: Any, error: BaseException | None) -> None:
        """Count the call."""
        with self.lock:
            self.tool_calls += 1
        self._ended(self.tools, call)

    # -- events --------------------------------------------------------------------------

    def _began(self, table: dict[object, tuple[str, float]], key: object, label: str) -> None:
        with self.lock:
            table[key] = (label, time.monotonic())
        self.changed()

    def _ended(self, table: dict[object, tuple[str, float]], key: object) -> None:
        with self.lock:
            table.pop(key, None)
        self.changed()

    def changed(self) -> None:
        """Tell the view."""
        if self.on_change is not None:
            self.on_change()

    # -- what to show --------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """The outermost run has ended."""
        return self.ended_at is not None

    def elapsed(self) -> float:
        """Seconds since the run began (until it ended)."""
        if self.began is None:
            return 0.0
        return (self.ended_at or time.monotonic()) - self.began

    def doing(self) -> str:
        """What runs now: tools (with their own time), else a model request, else nodes."""
        now = time.monotonic()
        with self.lock:
            tools = sorted(self.tools.values(), key=lambda t: t[1])
            chats = list(self.chats.values())
            nodes = sorted(self.nodes.values(), key=lambda t: t[1])
        if tools:
            return "running " + ", ".join(f"{name} ({now - t:.1f} s)" for name, t in tools)
        if chats:
            return f"waiting for {chats[0][0]} ({now - chats[0][1]:.1f} s)"
        if nodes:
            return "node " + ", ".join(name for name, _ in nodes)
        return "starting" if self.began is None else "between steps"

    def summary(self) -> str:
        """The line for a finished run."""
        counts = [f"{self.model_calls} model call{'s' if self.model_calls != 1 else ''}"]
        counts.append(f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}")
        if self.tokens:
            counts.append(f"{self.tokens:,} tokens")
        took = f"{self.elapsed():.1f} s"
        if self.failure is not None:
            return f"✗ {self.name} failed after {took}: {self.failure} · " + " · ".join(counts)
        if self.paused:
            return f"⏸ {self.name} is waiting for a human after {took} · " + " · ".join(counts)
        return f"✓ {self.name} finished in {took} · " + " · ".join(counts)

    def line(self) -> str:
        """One line: the summary when finished, else what runs now and for how long."""
        if self.finished:
            return self.summary()
        return f"⏳ {self.name or 'run'} · {self.doing()} · {self.elapsed():.1f} s"


class _Ticker:
    """Calls ``refresh`` every ``interval`` seconds until stopped (elapsed times move)."""

    def __init__(self, refresh: Callable[[], None], interval: float) -> None:
        self.stop_event = threading.Event()
        # in the caller's context: a kernel that routes output by context (ipykernel 7)
        # sends the updates to the cell that started the run
        context = contextvars.copy_context()
        self.thread = threading.Thread(
            target=context.run,
            args=(self._loop, refresh, interval),
            name="graphagent-progress",
            daemon=True,
        )
        self.thread.start()

    def _loop(self, refresh: Callable[[], None], interval: float) -> None:
        while not self.stop_event.wait(interval):
            refresh()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join()


class _Bundle:
    """What a display handle shows: HTML for notebooks, the line for plain text."""

    def __init__(self, line: str, finished: bool) -> None:
        self.line = line
        self.finished = finished

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        color = "#2e7d32" if self.line.startswith("✓") else "#1565c0"
        if self.line.startswith(("✗", "⏸")):
            color = "#c62828" if self.line.startswith("✗") else "#ef6c00"
        body = (
            f'<div class="graphagent-progress" style="font-family:monospace;font-size:13px;'
            f'text-align:left;padding:2px 8px;border-left:3px solid {color}">'
            f"{html.escape(self.line)}</div>"
        )
        return {"text/html": body, "text/plain": self.line}


class _JupyterView:
    """One notebook output, updated in place through an IPython display handle."""

    def __init__(self, tracker: Tracker) -> None:
        from IPython.display import display

        self.tracker = tracker
        self.lock = threading.Lock()
        self.shown = ""
        self.handle = display(_Bundle(tracker.line(), False), display_id=True)  # type: ignore[no-untyped-call]

    def refresh(self) -> None:
        line = self.tracker.line()
        with self.lock:
            if line == self.shown or self.handle is None:
                return
            self.shown = line
            self.handle.update(_Bundle(line, self.tracker.finished))


class TerminalLine:
    """A status line on a terminal, rewritten in place and erased before other output.

    Text written through :meth:`write` (the chat's answer) erases the status first, so
    the two never mix on one line.
    """

    def __init__(self, stream: TextIO, tracker: Tracker, *, keep: bool = True) -> None:
        self.stream = stream
        self.tracker = tracker
        self.keep = keep
        self.lock = threading.RLock()
        self.shown = ""
        self.hidden = False

    def _erase(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.shown = ""

    def refresh(self) -> None:
        """Redraw the status line (nothing while hidden or unchanged)."""
        with self.lock:
            if self.hidden:
                return
            line = self.tracker.line()
            if line != self.shown:
                self.stream.write("\r\x1b[2K" + line)
                self.shown = line
                self.stream.flush()

    def write(self, text: str) -> None:
        """Write ``text`` where the status line was."""
        with self.lock:
            self._erase()
            self.stream.write(text)
            self.stream.flush()

    def hide(self, hidden: bool) -> None:
        """Hide the line (and keep it hidden) or let it show again."""
        with self.lock:
            self.hidden = hidden
            if hidden:
                self._erase()
                self.stream.flush()

    def close(self) -> None:
        """Leave the final summary on its own line, or erase the status."""
        with self.lock:
            self._erase()
            if self.keep and self.tracker.began is not None:
                self.stream.write(self.tracker.summary() + "\n")
            self.stream.flush()


class _Lines:
    """Not a terminal: one line per change of what runs (no ticking)."""

    def __init__(self, stream: TextIO, tracker: Tracker) -> None:
        self.stream = stream
        self.tracker = tracker
        self.lock = threading.Lock()
        self.last = ""

    def refresh(self) -> None:
        with self.lock:
            doing = self.tracker.summary() if self.tracker.finished else self.tracker.doing()
            if doing != self.last and doing not in ("starting", "between steps"):
                self.last = doing
                name = self.tracker.name or "run"
                text = doing if self.tracker.finished else f"… {name} · {doing}"
                self.stream.write(text + "\n")
                self.stream.flush()


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        from IPython import get_ipython

        ipython = get_ipython()
    except Exception:  # a broken IPython install must not break a run
        return False
    return ipython is not None and hasattr(ipython, "kernel")


@contextlib.contextmanager
def _shown(tracker: Tracker, refresh: Callable[[], None], interval: float) -> Iterator[None]:
    """Observe the block's runs with ``tracker``, refreshing the view as they change."""
    tracker.on_change = refresh
    ticker = _Ticker(refresh, interval)
    try:
        with listening(tracker):
            yield
    finally:
        ticker.stop()
        refresh()


@contextlib.contextmanager
def status_line(stream: TextIO, *, interval: float = 0.25) -> Iterator[TerminalLine]:
    """A terminal status line for the runs inside the block, erased at the end."""
    tracker = Tracker()
    line = TerminalLine(stream, tracker, keep=False)
    try:
        with _shown(tracker, line.refresh, interval):
            yield line
    finally:
        line.close()


@contextlib.contextmanager
def progress(*, stream: TextIO | None = None, interval: float = 0.25) -> Iterator[Tracker]:
    """Show the live progress of the runs inside the block.

    In Jupyter: one output updated in place. In a terminal (``stream`` a TTY, default
    stderr): a status line, replaced by a summary at the end. Otherwise a line whenever
    the node or tool changes.

    Example::

        with progress():
            for event in agent.stream("hi", thread_id="t1"):
                ...
    """
    tracker = Tracker()
    out = stream or sys.stderr
    if stream is None and _in_notebook():
        with _shown(tracker, _JupyterView(tracker).refresh, interval):
            yield tracker
    elif out.isatty():
        line = TerminalLine(out, tracker)
        try:
            with _shown(tracker, line.refresh, interval):
                yield tracker
        finally:
            line.close()
    else:
        with _shown(tracker, _Lines(out, tracker).refresh, interval):
            yield tracker
