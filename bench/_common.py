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
# another checkout (git worktrees sharing one .venv)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


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
    """A one-line description of the machine and Python."""
    import os

    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )


def ratio(theirs: float | None, ours: float) -> str:
    """'12.3x less' style text."""
    if theirs is None:
        return "n/a (LangGraph not installed)"
    return f"{theirs / ours:.1f}x less"
