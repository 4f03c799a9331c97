"""The one-machine store: threads, records and items in one SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from checkpoint import SqliteSaver, SqliteStore

__all__ = ["InlineSqliteSaver", "sqlite_options"]

T = TypeVar("T")


class InlineSqliteSaver(SqliteSaver):
    """A ``SqliteSaver`` whose ``a``-methods run on the event loop's thread.

    A server's checkpoint reads and writes on a local SQLite file take tens of
    microseconds; handing each to a worker thread costs more than that in thread wake-ups
    and GIL hand-offs (bench/server.py: the hand-offs were the largest cost of a
    ``runs.wait`` under load).
    """

    async def _to_thread(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)

    async def ahead(self, thread_id: str) -> str | None:
        """The thread's newest checkpoint id (one query, not a load)."""
        return self.head(thread_id)


def sqlite_options(path: str) -> dict[str, Any]:
    """``create_app`` options keeping everything in the SQLite file at ``path``."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    return {"saver": InlineSqliteSaver(path), "store": SqliteStore(path), "docs": path}
