"""``PostgresStore``'s pgvector path: the extension, its column and index, ranked queries.

When the database has pgvector (installed, or installable by the store's role), each vector
row also holds its vector in a ``vector`` column ``emb``, and an HNSW index over
``emb::vector(dims)`` (inner product: stored vectors and queries are unit length, so the
inner product is the cosine) lets a search read the nearest rows in distance order instead
of scoring every candidate. The column has no fixed size, so stores with different ``dims``
can share a schema: each size gets its own partial index.

HNSW is approximate and, in pgvector before 0.8, an index scan yields at most
``hnsw.ef_search`` rows. A search reads the nearest rows of the whole table (a few times
its page), then keeps those of live items under its prefix passing its filter: when that
fills the page it is the answer; otherwise (a narrow prefix, a rare filter) the page is
ranked exactly, still inside PostgreSQL (``ORDER BY`` the distance over the candidates,
which the planner reads along the primary key for a narrow prefix).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["MAX_INDEXED_DIMS", "PgVector", "Query", "binary", "literal"]

# pgvector's HNSW index takes vectors of at most 2,000 dimensions
MAX_INDEXED_DIMS = 2000
# pgvector reads hnsw.ef_search from 1 to 1,000
_MAX_EF_SEARCH = 1000

Rows = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def literal(vector: Sequence[float]) -> str:
    """A vector as pgvector's text input, ``[x,y,...]``."""
    return "[" + ",".join(map(repr, vector)) + "]"


class Query(bytes):
    """A query vector in pgvector's binary input form (``vector_recv``: the dimension and
    a zero as big-endian int16, then the float4 values big-endian), sent as a binary
    parameter: no float text to write here or to parse in the server."""


def binary(vector: Sequence[float]) -> Query:
    """``vector`` as a :class:`Query` parameter."""
    return Query(struct.pack(f">hh{len(vector)}f", len(vector), 0, *vector))


def query_dumper(oid: int) -> type[Any]:
    """A psycopg dumper sending a :class:`Query` as a binary value of type ``oid`` (the
    ``vector`` type's, which differs between databases)."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class QueryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    QueryDumper.oid = oid
    return QueryDumper


class PgVector:
    """pgvector as one store uses it: the extension's schema (types and operators are
    qualified with it, so the store's ``search_path`` does not matter) and the index size."""

    def __init__(self, ext_schema: str, dims: int) -> None:
        self.dims = dims
        x = f'"{ext_schema}"'
        self.vector = f"{x}.vector({dims})"
        self.distance = f"OPERATOR({x}.<#>)"  # negative inner product
        self.sized = f"{x}.vector_dims"
        self.any_vector = f"{x}.vector"
        self.ops = f"{x}.vector_ip_ops"
        self.indexed = dims <= MAX_INDEXED_DIMS

    @staticmethod
    def find(rows: Rows, create: bool) -> str | None:
        """The schema holding pgvector, creating the extension if it is available and
        ``create`` (inside a savepoint, so a role that may not create it goes on without);
        ``None`` when the database has no pgvector."""
        found = rows(
            "SELECT (SELECT extnamespace::regnamespace::text FROM pg_extension "
            "WHERE extname = 'vector'), EXISTS (SELECT 1 FROM pg_available_extensions "
            "WHERE name = 'vector')",
            (),
        )
        schema, available = found[0]
        if schema is not None or not (available and create):
            return str(schema).strip('"') if schema is not None else None
        rows("SAVEPOINT graphagent_pgvector", ())
        try:
            rows("CREATE EXTENSION IF NOT EXISTS vector", ())
        except Exception:
            # e.g. not a superuser (pgvector is not a trusted extension): use the exact scan
            rows("ROLLBACK TO SAVEPOINT graphagent_pgvector", ())
            return None
        rows("RELEASE SAVEPOINT graphagent_pgvector", ())
        return PgVector.find(rows, False)

    def ddl(self, vectors: str, index_name: str) -> list[str]:
        """The column and (for at most 2,000 dimensions) the HNSW index of this size."""
        out = [f"ALTER TABLE {vectors} ADD COLUMN IF NOT EXISTS emb {self.any_vector}"]
        if self.indexed:
            out.append(
                f"CREATE INDEX IF NOT EXISTS {index_name} ON {vectors} USING hnsw "
                f"((emb::{self.vector}) {self.ops}) WHERE {self.sized}(emb) = {self.dims}"
            )
        return out

    def nearest_sql(self, table: str, vectors: str, where: str, fetch: int) -> str:
        """The ``fetch`` vector rows nearest the query, read along the HNSW index, then the
        ones of live items passing ``where``, with their values (parameters: the query as
        a binary :class:`Query`, then ``where``'s).
        The inner query is the index's own shape (``ORDER BY`` distance ``LIMIT``), so the
        planner takes the index whatever its statistics say (a fresh table has none); the
        query vector is sent once (``ORDER BY`` the distance's column) and ``fetch`` is
        written in, so PostgreSQL plans the prepared statement once (a ``LIMIT``
        parameter had it plan every search: 0.16 ms)."""
        return (
            f"SELECT c.ns, c.key, -c.d, s.updated_at, s.value, s.created_at, s.ttl_minutes "
            f"FROM (SELECT ns, key, "
            f"(emb::{self.vector}) {self.distance} %b::{self.vector} AS d FROM {vectors} "
            f"WHERE {self.sized}(emb) = {self.dims} ORDER BY d LIMIT {int(fetch)}) c "
            # each row's item by its primary key (OFFSET 0 keeps the planner from
            # flattening this into a join planned on guessed row counts)
            f"CROSS JOIN LATERAL (SELECT * FROM {table} i WHERE i.ns = c.ns AND i.key = c.key "
            f"OFFSET 0) s WHERE {where}"
        )

    def exact_sql(self, table: str, vectors: str, where: str) -> str:
        """The best-scored items, exactly (parameters: the query as a binary
        :class:`Query`, ``where``'s, item limit): the distance is computed in PostgreSQL
        for every candidate row; the aggregate keeps the planner off the approximate
        index."""
        return (
            f"SELECT v.ns, v.key, max(-((v.emb::{self.vector}) {self.distance} "
            f"%b::{self.vector})) AS score, max(s.updated_at) AS updated FROM {vectors} v "
            f"JOIN {table} s ON s.ns = v.ns AND s.key = v.key "
            f"WHERE {self.sized}(v.emb) = {self.dims} AND {where} GROUP BY v.ns, v.key "
            "ORDER BY score DESC, updated DESC, v.ns, v.key LIMIT %s"
        )

    @staticmethod
    def ef_search(rows_wanted: int) -> int:
        """The ``hnsw.ef_search`` that lets one index scan yield ``rows_wanted`` rows."""
        return max(40, min(_MAX_EF_SEARCH, rows_wanted))
