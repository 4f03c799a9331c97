"""``PostgresStore``: items in PostgreSQL, shared by every process that reaches the database.

Needs the ``postgres`` extra (``pip install -e '.[postgres]'`` in a clone). Tables are
created on first use in the schema you name (``setup()`` does it now; both are
idempotent). A put, a get and a delete are each one statement, so each lands whole and
costs one round trip; a batch of several ops is one transaction. Values are ``JSONB`` (key
order is not kept, as JSONB never keeps it); filters compare typed (numbers as
``numeric``, strings bytewise, as in Python).
Semantic search uses pgvector when the database has it (or the store's role may create
it): vectors go in a ``vector`` column with an HNSW index and a search reads the nearest
rows in distance order (see ``_pgvector``). Without pgvector, nothing needs installing: the
candidates' float32 vectors are read and ranked exactly here (docs/memory.md says where
each stops scaling).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from typing_extensions import Self

from checkpoint.errors import CheckpointStorageError
from checkpoint.store import _core as core
from checkpoint.store import base as _base
from checkpoint.store._items import Item, SearchItem, _Put, _Search, new_item
from checkpoint.store._pgvector import PgVector, Query, binary, literal, query_dumper
from checkpoint.store._sqlstore import SqlStore, pack, unpack

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

_OPS = {"$eq": "=", "$ne": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _jsonb_as_text(cur: psycopg.Cursor[Any]) -> None:
    """Read JSONB as text on ``cur``: psycopg's C text loader, then ``core.loads``'s C
    scanner, instead of ``json.loads`` on bytes (two Python frames and an encoding sniff
    per value)."""
    from psycopg.types.string import TextLoader

    cur.adapters.register_loader("jsonb", TextLoader)


class PostgresStore(SqlStore):
    """Keep items in PostgreSQL.

    Args:
        conn: an open ``psycopg.Connection`` (see :meth:`from_url`); the store runs its
            own transactions, so it puts the connection in autocommit mode.
        schema: the schema for the tables (created if missing); ``None``: the connection's
            ``search_path`` (usually ``public``).
        index: ``{"embed": ..., "dims": N, "fields": [...]}`` for semantic search.
        ttl: ``{"default_ttl": minutes, "refresh_on_read": True}``.
        pgvector: ``None`` (the default) uses pgvector for semantic search when the
            database has it or the role may ``CREATE EXTENSION vector``; ``False`` never
            does (exact ranking in Python); ``True`` requires it (an error at setup if it
            is missing).

    Example::

        store = PostgresStore.from_url("postgresql://app@db/app", schema="memory")
    """

    P = "%s"
    INLINE_PAGE = True

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        schema: str | None = None,
        index: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
        pgvector: bool | None = None,
    ) -> None:
        super().__init__(index=index, ttl=ttl)
        if pgvector not in (None, True, False):
            raise core.StoreError(f"pgvector must be None, True or False; got {pgvector!r}")
        self._want_pgvector = pgvector
        # set up by _ensure: pgvector as this store uses it, or None (the exact scan)
        self.pgvector: PgVector | None = None
        if schema is not None and not _SCHEMA.match(schema):
            raise core.StoreError(
                f"invalid schema name {schema!r}: use letters, digits and '_' (e.g. 'memory')"
            )
        self.schema = schema
        where = f'"{schema}".' if schema else ""
        self.table = f"{where}graphagent_store"
        self.vectors = f"{where}graphagent_store_vectors"
        import psycopg

        self._error = psycopg.Error  # for get, which imports nothing per call
        self._lock = threading.RLock()
        self._get_sql = (
            f"SELECT value, created_at, updated_at, ttl_minutes FROM {self.table} "
            "WHERE ns = %s AND key = %s AND (expires_at IS NULL OR expires_at > %s)"
        )
        self._url: str | None = None  # from_url's: a dead connection is replaced
        self._query_oid: int | None = None  # pgvector's vector type, once set up
        self._attach(conn)
        self._ready = False
        self._in_tx = False

    def _attach(self, conn: psycopg.Connection[Any]) -> None:
        conn.autocommit = True
        self.conn = conn
        # get's own cursor and one for every other statement, both used under the lock:
        # executing on a kept cursor skips psycopg's new cursor and type adapters (a
        # third of the client's work for a get); JSONB arrives through the C scanner
        self._get_cursor = conn.cursor()
        self._cursor = conn.cursor()
        for cur in (self._get_cursor, self._cursor):
            _jsonb_as_text(cur)
        if self._query_oid is not None:
            self._cursor.adapters.register_dumper(Query, query_dumper(self._query_oid))
        self._ef_search = 40  # pgvector's default hnsw.ef_search, set per connection

    def _revived(self) -> bool:
        """Whether the connection was dead (a restart, a failover, an idle timeout) and a
        new one now serves: only a store that made its own (``from_url``), and not inside
        a transaction, whose earlier statements died with the connection. The failed
        statement is then sent once more: the server ended that backend before running
        it, and every statement but a delete's count is the same sent twice."""
        conn = self.conn
        if self._url is None or self._in_tx or not (conn.closed or conn.broken):
            return False
        import psycopg

        try:
            fresh = psycopg.connect(self._url, autocommit=True)
        except psycopg.Error:
            return False  # still down: the caller's error says so
        conn.close()
        self._attach(fresh)
        return True

    def _failed(self, exc: Exception) -> CheckpointStorageError:
        conn = self.conn
        if conn.closed or conn.broken:
            how = (
                "it reconnects on the next call once PostgreSQL answers"
                if self._url is not None
                else "a store on a connection you passed in cannot make another: give it "
                "a new connection, or use PostgresStore.from_url(url), which reconnects"
            )
            return CheckpointStorageError(
                f"PostgreSQL store failed: {exc} (the connection was lost; {how})"
            )
        return CheckpointStorageError(f"PostgreSQL store failed: {exc}")

    @classmethod
    def from_url(cls, url: str, *, schema: str | None = None, **kw: Any) -> Self:
        """A store on its own connection to ``url``."""
        import psycopg

        try:
            conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise CheckpointStorageError(f"cannot connect to PostgreSQL: {exc}") from exc
        store = cls(conn, schema=schema, **kw)
        store._url = url
        return store

    @classmethod
    def from_conn_string(cls, conn_string: str, **kw: Any) -> Self:
        """LangGraph's spelling of :meth:`from_url`."""
        return cls.from_url(conn_string, **kw)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    # ------------------------------------------------------------ statements

    def setup(self) -> None:
        """Create the schema, tables and indexes if missing (idempotent, never required)."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> None:
        if self._ready:
            return
        t, v = self.table, self.vectors
        ddl = [
            f'CREATE TABLE IF NOT EXISTS {t} (ns TEXT COLLATE "C" NOT NULL, '
            'key TEXT COLLATE "C" NOT NULL, value JSONB NOT NULL, '
            "created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL, "
            "expires_at DOUBLE PRECISION, ttl_minutes DOUBLE PRECISION, PRIMARY KEY (ns, key))",
            f"CREATE INDEX IF NOT EXISTS graphagent_store_recent ON {t} (updated_at, ns, key)",
            f"CREATE INDEX IF NOT EXISTS graphagent_store_expires ON {t} (expires_at) "
            "WHERE expires_at IS NOT NULL",
            f'CREATE TABLE IF NOT EXISTS {v} (ns TEXT COLLATE "C" NOT NULL, '
            'key TEXT COLLATE "C" NOT NULL, field TEXT NOT NULL, vec BYTEA NOT NULL, '
            "PRIMARY KEY (ns, key, field))",
        ]
        if self.schema:
            ddl.insert(0, f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        with self._transaction():
            # concurrent first uses would race on the catalog: one at a time per database
            self._rows("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"graphagent_store:{t}"])
            for sql in ddl:
                self._rows(sql)
            self.pgvector = self._setup_pgvector()
        self._ready = True

    def _setup_pgvector(self) -> PgVector | None:
        """pgvector's column and index when this store ranks with it (see ``_pgvector``)."""
        if self.index is None or self._want_pgvector is False:
            return None
        ext = PgVector.find(self._rows, create=True)
        if ext is None:
            if self._want_pgvector:
                raise CheckpointStorageError(
                    "PostgresStore(pgvector=True) but this database has no pgvector and the "
                    "store's role cannot create it: install pgvector (Debian: "
                    "postgresql-<version>-pgvector) and run CREATE EXTENSION vector as a "
                    "superuser, or leave pgvector=None to rank without it"
                )
            return None
        pgv = PgVector(ext, self.index.dims)
        # searches send their query vector in binary, typed by the extension's own oid
        oid = self._rows("SELECT %s::regtype::oid", [pgv.any_vector])[0][0]
        self._query_oid = int(oid)
        self._cursor.adapters.register_dumper(Query, query_dumper(self._query_oid))
        name = f"graphagent_store_hnsw_{pgv.dims}"
        for sql in pgv.ddl(self.vectors, name):
            self._rows(sql)
        # vectors written before the extension existed (or by a store with pgvector=False)
        missing = self._rows(f"SELECT ns, key, field, vec FROM {self.vectors} WHERE emb IS NULL")
        for ns, key, field, blob in missing:
            self._rows(
                f"UPDATE {self.vectors} SET emb = %s::{pgv.any_vector} "
                "WHERE ns = %s AND key = %s AND field = %s",
                [literal(unpack(blob)), ns, key, field],
            )
        return pgv

    def _execute(self, get: bool, sql: str, params: Sequence[Any]) -> psycopg.Cursor[Any]:
        """``sql`` run on get's cursor or the other one, and sent once more on a new
        connection when the first try found this one dead (see :meth:`_revived`)."""
        try:
            return (self._get_cursor if get else self._cursor).execute(sql, params)
        except self._error as exc:
            if not self._revived():
                raise self._failed(exc) from exc
        try:
            return (self._get_cursor if get else self._cursor).execute(sql, params)
        except self._error as again:
            raise self._failed(again) from again

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        # callers hold the lock (or are setting the store up): one statement at a time
        cur = self._execute(False, sql, params)
        try:
            return cur.fetchall() if cur.pgresult and cur.pgresult.nfields else []
        except self._error as exc:
            raise self._failed(exc) from exc

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._in_tx:
            yield
            return
        self._rows("BEGIN")
        self._in_tx = True
        try:
            yield
        except BaseException:
            self._in_tx = False
            self.conn.rollback()
            raise
        self._in_tx = False
        self._rows("COMMIT")

    @contextmanager
    def _locked(self, transaction: bool) -> Iterator[None]:
        with self._lock:
            self._ensure()
            if transaction:
                with self._transaction():
                    yield
            else:
                yield

    def _tx(self) -> Any:
        return self._locked(False)

    def _run(self, prepared: Sequence[Any]) -> list[Any]:
        # one op is one statement (atomic on its own); several share a transaction
        if len(prepared) != 1:
            with self._locked(True):
                return [self._one(op, self._now()) for op in prepared]
        # the usual lone op: the lock taken by hand (a @contextmanager's generator is
        # several thousand instructions a call)
        lock = self._lock
        lock.acquire()
        try:
            if not self._ready:
                self._ensure()
            return [self._one(prepared[0], self._now())]
        finally:
            lock.release()

    def _path_sql(self, cond: core.Condition) -> tuple[str, list[Any]]:
        kind, op = cond.kind, cond.op
        # a top-level field (the usual filter) is `->` with a text parameter; a deeper
        # path is `#>` with a text[] one (psycopg's list dumper costs several times more)
        path: Any = cond.path[0] if len(cond.path) == 1 else list(cond.path)
        get, get_text = (
            ("-> %s::text", "->> %s::text") if len(cond.path) == 1 else ("#> %s", "#>> %s")
        )
        if kind == "null":
            sql = f"coalesce(jsonb_typeof(value {get}), 'null') = 'null'"
            params: list[Any] = [path]
        elif kind == "bool":
            sql = f"coalesce(value {get} = %s::jsonb, false)"
            params = [path, "true" if cond.operand else "false"]
        elif kind == "other":
            # a list or dict: jsonb equality (key order and 1 vs 1.0 aside)
            sql = f"coalesce(value {get} = %s::jsonb, false)"
            params = [path, core.dumps(cond.operand)]
        elif kind == "num":
            # CASE, not AND: PostgreSQL may evaluate the cast before the type test
            sql = (
                f"coalesce(CASE WHEN jsonb_typeof(value {get}) = 'number' THEN "
                f"(value {get_text})::numeric {_OPS[op]} %s::numeric END, false)"
            )
            params = [path, path, cond.operand]
        else:
            sql = (
                f"coalesce(CASE WHEN jsonb_typeof(value {get}) = 'string' THEN "
                f'(value {get_text}) COLLATE "C" {_OPS[op]} %s END, false)'
            )
            params = [path, path, cond.operand]
        if op == "$ne":
            sql = f"NOT {sql}"
        return sql, params

    # ------------------------------------------------------------ items

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``namespace``/``key`` (a copy), or ``None``: one prepared
        ``SELECT`` (a second statement only to restart an item's TTL)."""
        namespace, code = self._code(namespace)
        escaped = core.escape_key(key if type(key) is str and key else core.check_key(key))
        now = _base.time.time()  # type: ignore[attr-defined]  # (tests move base's clock)
        lock = self._lock  # acquire and release: `with` costs 1k instructions more
        lock.acquire()
        try:
            if not self._ready:
                self._ensure()
            cur = self._execute(True, self._get_sql, (code, escaped, now))
            try:
                row = cur.fetchone()
            except self._error as exc:
                raise self._failed(exc) from exc
            if row is None:
                return None
            raw, created, updated, ttl = row
            if ttl is not None and (self.refresh_on_read if refresh_ttl is None else refresh_ttl):
                self._rows(
                    f"UPDATE {self.table} SET expires_at = %s + ttl_minutes * 60.0 "
                    "WHERE ns = %s AND key = %s AND ttl_minutes IS NOT NULL",
                    [now, code, escaped],
                )
        finally:
            lock.release()
        # JSONB arrives as text (see _jsonb_as_text): the parse is this read's own copy
        return new_item(namespace, key, core.loads(raw, namespace, key), created, updated)

    def _put(self, op: _Put, now: float) -> bool:
        self._sweep(now)
        ns, k = core.encode_namespace(op.namespace), core.escape_key(op.key)
        t, v = self.table, self.vectors
        if op.value is None:
            rows = self._rows(
                f"WITH dv AS (DELETE FROM {v} WHERE ns = %s AND key = %s), "
                f"d AS (DELETE FROM {t} WHERE ns = %s AND key = %s RETURNING expires_at) "
                "SELECT EXISTS (SELECT 1 FROM d WHERE expires_at IS NULL OR expires_at > %s)",
                [ns, k, ns, k, now],
            )
            return bool(rows[0][0])
        # the put's own statement: no read of the old row (a put returns nothing), the
        # vectors' statements (if any) as CTEs of the same one, so a put is one round trip
        # and one commit
        ctes: list[str] = []
        params: list[Any] = []
        if self.index is not None or op.vectors:
            fields = [field for field, _ in op.vectors]
            ctes.append(
                f"dv AS (DELETE FROM {v} WHERE ns = %s AND key = %s AND NOT (field = ANY(%s)))"
            )
            params += [ns, k, fields]
            pgv = self.pgvector
            if op.vectors and pgv is not None:
                # the bytes too: they stay readable by a store that runs without pgvector
                ctes.append(
                    f"iv AS (INSERT INTO {v} (ns, key, field, vec, emb) SELECT %s, %s, f, b, "
                    f"e::{pgv.any_vector} FROM unnest(%s::text[], %s::bytea[], %s::text[]) "
                    "AS x(f, b, e) ON CONFLICT (ns, key, field) "
                    "DO UPDATE SET vec = excluded.vec, emb = excluded.emb)"
                )
                params += [ns, k, fields, [pack(vec) for _, vec in op.vectors]]
                params.append([literal(vec) for _, vec in op.vectors])
            elif op.vectors:
                ctes.append(
                    f"iv AS (INSERT INTO {v} (ns, key, field, vec) SELECT %s, %s, f, b "
                    "FROM unnest(%s::text[], %s::bytea[]) AS x(f, b) "
                    "ON CONFLICT (ns, key, field) DO UPDATE SET vec = excluded.vec)"
                )
                params += [ns, k, fields, [pack(vec) for _, vec in op.vectors]]
        head = f"WITH {', '.join(ctes)} " if ctes else ""
        self._rows(
            f"{head}INSERT INTO {t} AS s (ns, key, value, created_at, updated_at, expires_at, "
            "ttl_minutes) VALUES (%s, %s, %s::jsonb, %s, %s, %s, %s) ON CONFLICT (ns, key) DO "
            "UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
            "expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes, "
            "created_at = CASE WHEN s.expires_at IS NULL OR s.expires_at > excluded.updated_at "
            "THEN s.created_at ELSE excluded.created_at END",
            [*params, ns, k, core.dumps(op.value), now, now, self._expiry(op, now), op.ttl],
        )
        return True

    # ------------------------------------------------------------ semantic search

    def _ranked(self, search: _Search, now: float) -> list[SearchItem]:
        """With pgvector: the nearest rows along the HNSW index when they fill the page,
        else an exact ranking computed in PostgreSQL; items without vectors come after."""
        pgv = self.pgvector
        if pgv is None:
            return super()._ranked(search, now)
        assert search.query is not None and self.index is not None
        need = search.offset + search.limit
        if need == 0:
            return []
        query = binary(search.query)
        where, params = self._where(search, now, "s.")
        if pgv.indexed:
            # an item has a row per embedded field, and other prefixes' rows come first
            # too: read a few times the rows the page needs
            fetch = min(1000, 4 * need * max(1, len(self.index.fields)))
            ef = PgVector.ef_search(fetch)
            if ef != self._ef_search:
                # for this connection (the store's own), so a search is one statement
                self._rows(f"SET hnsw.ef_search = {ef}")
                self._ef_search = ef
            rows = self._rows(
                pgv.nearest_sql(self.table, self.vectors, where, fetch),
                [query, *params],
            )
            best: dict[tuple[str, str], tuple[float, float, Any]] = {}
            for ns, key, score, updated, value, created, ttl in rows:
                old = best.get((ns, key))
                if old is None or score > old[0]:
                    best[(ns, key)] = (score, updated, (ns, key, value, created, updated, ttl))
            if len(best) >= need:
                # the values came with the rows: the page needs no second statement
                ordered = sorted(best.values(), key=lambda b: (-b[0], -b[1], b[2][:2]))
                out = []
                for score, _, row in ordered[search.offset : need]:
                    found = self._item(SearchItem, row)
                    found.score = score
                    out.append(found)
                return out
        rows = self._rows(pgv.exact_sql(self.table, self.vectors, where), [query, *params, need])
        scored = [(ns, key, score) for ns, key, score, _ in rows]
        page: list[tuple[str, str, float | None]] = list(scored[search.offset :])
        if len(scored) < need:
            # every scored item is in `scored`: the page goes on with unscored ones
            skip = max(0, search.offset - len(scored))
            rows = self._rows(
                f"SELECT s.ns, s.key FROM {self.table} s WHERE {where} AND NOT EXISTS "
                f"(SELECT 1 FROM {self.vectors} v WHERE v.ns = s.ns AND v.key = s.key AND "
                f"{pgv.sized}(v.emb) = {pgv.dims}) "
                "ORDER BY s.updated_at DESC, s.ns, s.key LIMIT %s OFFSET %s",
                [*params, search.limit - len(page), skip],
            )
            page += [(ns, key, None) for ns, key in rows]
        return self._fetch_page(page)
