"""Helpers shared by the benchmarks: timing and optional LangGraph import."""

from __future__ import annotations

import gc
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# measure this checkout's code, even when the virtual env's editable install points at
# another checkout (git worktrees sharing one .venv): its root goes first on the path,
# before the script's own folder (bench/, whose modules must not shadow a package)
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def best_of(fn: Callable[[], Any], repeat: int = 7, number: int = 1) -> float:
    """Seconds per call: the best of ``repeat`` rounds of ``number`` calls (GC off)."""
    times = []
    gc.disable()
    try:
        fn()  # warm up
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times.append((time.perf_counter() - start) / number)
    finally:
        gc.enable()
    return min(times)


def median(values: list[float]) -> float:
    """The median."""
    return statistics.median(values)


def have_langgraph() -> bool:
    """Whether LangGraph is installed (``pip install -e '.[bench]'``)."""
    try:
        import langgraph  # noqa: F401
    except ImportError:
        return False
    return True


def machine() -> str:
    """A one-line description of the machine and Python, the load average, and the
    checkout whose code is measured (where ``checkpoint`` and ``graphagent`` were
    imported from, and its commit)."""
    import os
    import subprocess

    import checkpoint
    import graphagent

    roots = {str(Path(m.__file__ or "").resolve().parent.parent) for m in (checkpoint, graphagent)}
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = "?"
    code = ", ".join(sorted(roots))
    if roots != {str(ROOT)}:
        code += f" (NOT this checkout, {ROOT})"
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}; "
        f"code: {code} at {commit or '?'}"
    )


def ratio(theirs: float | None, ours: float) -> str:
    """'12.3x less' style text."""
    if theirs is None:
        return "n/a (LangGraph not installed)"
    return f"{theirs / ours:.1f}x less"
