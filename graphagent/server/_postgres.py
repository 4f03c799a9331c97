"""A cluster on PostgreSQL: records, event streams and the run queue in one schema.

- Records: one table of JSON documents (as the SQLite home keeps them).
- Events: one table of (run, seq, event, data); a reader waits on ``LISTEN`` for the
  run's ``NOTIFY`` (with a poll as a fallback), so a client on one machine reads a run
  that executes on another.
- Queue: a table of runs; an executor takes the oldest free ones with ``FOR UPDATE SKIP
  LOCKED``, leases their thread in a table whose primary key is the thread (one run per
  thread across the cluster), renews the lease while the run executes; a lease that ran
  out (a dead executor) frees the thread and its run for another executor, which resumes
  it from its last checkpoint. Cancel travels as a ``NOTIFY``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from graphagent._internal.waiting import pause
from graphagent.server._docs import dumps
from graphagent.server._events import END, RESULT, Event
from graphagent.server._outage import OUTAGE_MS, Backoff

__all__ = ["PostgresCluster", "PostgresDocs", "PostgresEvents"]

log = logging.getLogger("graphagent.server")

_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.graphagent_server_docs (
    kind TEXT NOT NULL, id TEXT NOT NULL, owner TEXT NOT NULL, parent TEXT NOT NULL,
    seq BIGSERIAL, doc TEXT NOT NULL, PRIMARY KEY (kind, id));
CREATE INDEX IF NOT EXISTS graphagent_server_docs_parent
    ON {s}.graphagent_server_docs (kind, parent, seq);
CREATE INDEX IF NOT EXISTS graphagent_server_docs_owner
    ON {s}.graphagent_server_docs (kind, owner, seq);
CREATE TABLE IF NOT EXISTS {s}.graphagent_server_events (
    run_id TEXT NOT NULL, seq BIGSERIAL, event TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS {s}.graphagent_server_queue (
    run_id TEXT PRIMARY KEY, thread TEXT NOT NULL, seq BIGSERIAL,
    owner TEXT, lease_until TIMESTAMPTZ, taken INT NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS {s}.graphagent_server_leases (
    thread TEXT PRIMARY KEY, owner TEXT NOT NULL, until TIMESTAMPTZ NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.graphagent_server_cancels (
    run_id TEXT PRIMARY KEY, action TEXT NOT NULL);
"""


class PostgresCluster:
    """The connections and the schema one process of a PostgreSQL cluster uses.

    Args:
        url: a libpq URL.
        schema: the schema holding the server's tables (one per cluster).
        setups: what else creates tables (the saver's, the store's), run once with them.
        outage_ms: how long the listening connection may fail before an error is logged
            (it reconnects for ever, with waits growing to 2 s; readers poll meanwhile).
    """

    def __init__(
        self,
        url: str,
        schema: str,
        setups: Sequence[Callable[[], Awaitable[Any]]] = (),
        *,
        outage_ms: int = OUTAGE_MS,
    ) -> None:
        from psycopg_pool import AsyncConnectionPool

        from checkpoint.postgres import acheck_idle

        self.setups = tuple(setups)
        self.outage_ms = outage_ms
        self.url = url
        self.s = '"' + schema.replace('"', '""') + '"'
        self.channel = f"ga_{uuid.uuid5(uuid.NAMESPACE_URL, schema).hex[:12]}"
        # the savers' check: after a restart, each idle pooled connection is dead, and
        # without it each would fail one request before the pool noticed
        self.pool: Any = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=20,
            open=False,
            kwargs={"autocommit": True},
            check=acheck_idle,
        )
        self._ready = False
        self._listener: asyncio.Task[None] | None = None
        self._waiters: dict[str, list[asyncio.Event]] = {}
        self._lock = asyncio.Lock()

    async def ready(self) -> None:
        """Open the pool and create the tables (once)."""
        async with self._lock:
            if self._ready:
                return
            await self.pool.open()
            async with self.pool.connection() as conn:
                # processes starting together would race on CREATE ... IF NOT EXISTS (a
                # unique violation in the catalog): one creates at a time
                await conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (self.s,))
                try:
                    await conn.execute(_SCHEMA.format(s=self.s))
                    for setup in self.setups:  # the saver's and the store's tables
                        await setup()
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (self.s,))
            self._ready = True

    async def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (none for a statement without)."""
        await self.ready()
        async with self.pool.connection() as conn:
            cur = await conn.execute(query.format(s=self.s), args)
            return list(await cur.fetchall()) if cur.description else []

    async def notify(self, topic: str, payload: str) -> None:
        """Tell every listening process (``topic`` names what happened)."""
        await self.sql("SELECT pg_notify(%s, %s)", self.channel, f"{topic}:{payload}")

    def waiter(self, key: str) -> asyncio.Event:
        """An event set when a notification about ``key`` arrives."""
        event = asyncio.Event()
        self._waiters.setdefault(key, []).append(event)
        if self._listener is None:
            self._listener = asyncio.ensure_future(self._listen())
        return event

    def forget(self, key: str, event: asyncio.Event) -> None:
        """Stop waking ``event``."""
        events = self._waiters.get(key, [])
        if event in events:
            events.remove(event)
        if not events:
            self._waiters.pop(key, None)

    async def _listen(self) -> None:
        import psycopg

        retry = Backoff("listening to PostgreSQL", self.outage_ms, give_up=False)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {self.channel}")
                    retry.succeeded()
                    async for note in conn.notifies():
                        for event in self._waiters.get(note.payload, ()):
                            event.set()
                        topic = note.payload.split(":", 1)[0]
                        for event in self._waiters.get(topic, ()):
                            event.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # (notifications missed meanwhile: readers poll)
                await retry.failed(exc)

    async def close(self) -> None:
        """Stop listening, close the pool."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        await self.pool.close()


class PostgresDocs:
    """Thread and run records in PostgreSQL."""

    def __init__(self, db: PostgresCluster) -> None:
        self.db = db

    async def get(self, kind: str, ident: str) -> dict[str, Any] | None:
        rows = await self.db.sql(
            "SELECT doc FROM {s}.graphagent_server_docs WHERE kind = %s AND id = %s", kind, ident
        )
        return json.loads(rows[0][0]) if rows else None

    async def get_many(self, kind: str, idents: Sequence[str]) -> list[dict[str, Any]]:
        out = []
        for ident in idents:
            doc = await self.get(kind, ident)
            if doc is not None:
                out.append(doc)
        return out

    async def put(self, kind: str, ident: str, doc: dict[str, Any]) -> None:
        owner, parent = str(doc.get("_owner") or ""), str(doc.get("_parent") or "")
        await self.db.sql(
            "INSERT INTO {s}.graphagent_server_docs (kind, id, owner, parent, doc) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (kind, id) DO UPDATE SET "
            "doc = EXCLUDED.doc, owner = EXCLUDED.owner, parent = EXCLUDED.parent",
            kind,
            ident,
            owner,
            parent,
            dumps(doc),
        )

    async def delete(self, kind: str, ident: str) -> None:
        await self.db.sql(
            "DELETE FROM {s}.graphagent_server_docs WHERE kind = %s AND id = %s", kind, ident
        )

    async def children(self, kind: str, parent: str) -> list[dict[str, Any]]:
        rows = await self.db.sql(
            "SELECT doc FROM {s}.graphagent_server_docs WHERE kind = %s AND parent = %s "
            "ORDER BY seq",
            kind,
            parent,
        )
        return [json.loads(r[0]) for r in rows]

    async def owned(self, kind: str, owner: str) -> list[dict[str, Any]]:
        rows = await self.db.sql(
            "SELECT doc FROM {s}.graphagent_server_docs WHERE kind = %s AND owner = %s "
            "ORDER BY seq",
            kind,
            owner,
        )
        return [json.loads(r[0]) for r in rows]

    async def close(self) -> None:
        await self.db.close()


_AFTER = (
    "SELECT seq, event, data FROM {s}.graphagent_server_events "
    "WHERE run_id = %s AND seq > %s ORDER BY seq"
)


class PostgresEvents:
    """Runs' events in a table; readers wake on ``NOTIFY``.

    Args:
        db: the cluster's connections.
        outage_ms: how long a reader waits for PostgreSQL to answer again (a connection
            lost, the pool's timeout) before its stream ends with an error.
    """

    def __init__(self, db: PostgresCluster, *, outage_ms: int = OUTAGE_MS) -> None:
        self.db = db
        self.outage_ms = outage_ms

    async def publish(self, run_id: str, event: str, data: Any) -> str:
        # the event and the readers' wake-up in one statement (one round trip)
        rows = await self.db.sql(
            "WITH added AS (INSERT INTO {s}.graphagent_server_events (run_id, event, data) "
            "VALUES (%s, %s, %s) RETURNING seq) "
            "SELECT seq, pg_notify(%s, %s) FROM added",
            run_id,
            event,
            dumps(data),
            self.db.channel,
            f"ev:{run_id}",
        )
        return str(rows[0][0])

    async def end(self, run_id: str, result: Any) -> bool:
        await self.db.ready()
        table = f"{self.db.s}.graphagent_server_events"
        async with self.db.pool.connection() as conn, conn.transaction():
            # one ender per run at a time; readers see the result and the end together,
            # when the transaction commits
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.db.s}:end:{run_id}",)
            )
            cur = await conn.execute(
                f"SELECT 1 FROM {table} WHERE run_id = %s AND event = %s", (run_id, END)
            )
            if await cur.fetchone() is not None:
                return False
            # two statements: the result's seq is below the end's, as readers need
            insert = f"INSERT INTO {table} (run_id, event, data) VALUES (%s, %s, %s)"
            await conn.execute(insert, (run_id, RESULT, dumps(result)))
            await conn.execute(insert, (run_id, END, "null"))
            # delivered when the transaction commits, on the connection already held
            await conn.execute("SELECT pg_notify(%s, %s)", (self.db.channel, f"ev:{run_id}"))
        return True

    async def has(self, run_id: str) -> bool:
        rows = await self.db.sql(
            "SELECT 1 FROM {s}.graphagent_server_events WHERE run_id = %s LIMIT 1", run_id
        )
        return bool(rows)

    async def ended(self, run_id: str) -> bool:
        rows = await self.db.sql(
            "SELECT 1 FROM {s}.graphagent_server_events WHERE run_id = %s AND event = %s",
            run_id,
            END,
        )
        return bool(rows)

    async def read(self, run_id: str, after: str | None) -> AsyncIterator[Event]:
        # a failed read is made again from the last event delivered: none lost or repeated
        retry = Backoff(f"reading the events of run {run_id!r} from PostgreSQL", self.outage_ms)
        if after is None:
            rows = await retry.call(
                lambda: self.db.sql(
                    "SELECT COALESCE(MAX(seq), 0), BOOL_OR(event = %s) "
                    "FROM {s}.graphagent_server_events WHERE run_id = %s",
                    END,
                    run_id,
                )
            )
            if rows and rows[0][1]:
                return
            cursor = int(rows[0][0]) if rows else 0
        else:
            cursor = int(after) if after.isdigit() else 0
        wake = self.db.waiter(f"ev:{run_id}")
        try:
            while True:
                wake.clear()
                rows = await retry.call(partial(self.db.sql, _AFTER, run_id, cursor))
                for seq, event, data in rows:
                    cursor = int(seq)
                    yield str(seq), event, json.loads(data)
                    if event == END:
                        return
                await pause(wake, 1.0)  # not wait_for: it can swallow a cancel
        finally:
            self.db.forget(f"ev:{run_id}", wake)

    async def close(self) -> None:
        return None
