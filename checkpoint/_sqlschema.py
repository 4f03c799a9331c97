"""The SQL savers' vocabulary: statements, dialects, the tables and their migrations.

Tables (``graphagent_`` names, so they sit beside anyone else's)::

    threads      thread id -> head checkpoint id, last sequence number, last write time
    checkpoints  (thread, checkpoint id) -> sequence number, record (see ``_layout``)
    data         (thread, field) -> encoded value or log item
    writes       (thread, checkpoint id, task) -> pending writes
    locks        thread id -> holder's token, lease end (the opt-in run lock)
    deleted      thread id -> the id its delete minted (refuses the writes of runs older
                 than the delete), kept a day
    migrations   the schema versions applied

Thread ids, field names and tasks are stored as UTF-8 bytes (lone surrogates kept), so any
Python string is a valid thread id and none can collide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LATEST",
    "MIGRATIONS",
    "Dialect",
    "Stmt",
    "decode_text",
    "encode_text",
    "result_kind",
    "storable_id",
]


@dataclass(frozen=True, slots=True)
class Stmt:
    """One SQL statement of a program.

    Attributes:
        sql: the statement, in the driver's dialect.
        params: its parameters (``many``: a sequence of parameter rows, one run each).
        many: run once per row of ``params``.
        result: what the program receives: ``"rows"`` (all rows), ``"count"`` (rows
            changed) or ``"none"`` (``None``; the driver need not wait for the reply).
    """

    sql: str
    params: Sequence[Any] = ()
    many: bool = False
    result: str = "rows"


def result_kind(sql: str) -> str:
    """``"rows"`` for a query or a ``RETURNING`` statement, else ``"none"``."""
    head = sql.lstrip()[:6].upper()
    return "rows" if head == "SELECT" or " RETURNING " in sql.upper() else "none"


@dataclass(frozen=True)
class Dialect:
    """How one database spells what the programs need.

    Attributes:
        name: the database's name, for messages.
        param: the placeholder (``?`` or ``%s``); programs are written with ``?``.
        blob: the binary column type.
        real: the floating point column type.
        bigint: the 64-bit integer column type.
        now: an SQL expression for the database's clock, UNIX seconds.
        tables: what goes before a table name (a quoted schema and a dot, or nothing).
        begin_read: starts a read transaction that sees one snapshot.
        begin_write: starts a write transaction.
        table_exists: a query taking a table name (qualified as ``tables`` says) that
            returns a row when the table exists.
        setup_prelude: statements run first in ``setup()``'s transaction.
        extra_ddl: ``{without_rowid}``-style suffix for tables with composite keys.
        returning: the database knows ``RETURNING`` (else changes are counted).
        cte_put: the database runs a step's whole write as one ``WITH`` statement (data-
            modifying common table expressions, ``unnest`` of arrays).
        share_rows: what ends a query that must lock the rows it reads against a
            concurrent delete until the transaction ends (nothing where a write
            transaction already locks the whole database).
        item_blocks: writes also store each full block of log items in one field, and
            long reads fetch those (see ``_sqlblocks``).
    """

    name: str
    param: str
    blob: str
    real: str
    bigint: str
    now: str
    tables: str
    begin_read: str
    begin_write: str
    table_exists: str
    setup_prelude: tuple[str, ...] = ()
    extra_ddl: str = ""
    returning: bool = True
    cte_put: bool = False
    share_rows: str = ""
    item_blocks: bool = False


# Numbered migrations: entry N-1 takes the schema from version N-1 to N. Never edit a
# released entry; add the next one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE {t}graphagent_threads (
            thread_id {blob} PRIMARY KEY,
            head TEXT NOT NULL,
            seq {bigint} NOT NULL,
            touched_at {real} NOT NULL)""",
        "CREATE INDEX graphagent_threads_touched ON {t}graphagent_threads (touched_at)",
        """CREATE TABLE {t}graphagent_checkpoints (
            thread_id {blob} NOT NULL,
            id TEXT NOT NULL,
            seq {bigint} NOT NULL,
            record {blob} NOT NULL,
            PRIMARY KEY (thread_id, id)){extra}""",
        """CREATE UNIQUE INDEX graphagent_checkpoints_seq
            ON {t}graphagent_checkpoints (thread_id, seq)""",
        """CREATE TABLE {t}graphagent_data (
            thread_id {blob} NOT NULL,
            field {blob} NOT NULL,
            value {blob} NOT NULL,
            PRIMARY KEY (thread_id, field)){extra}""",
        """CREATE TABLE {t}graphagent_writes (
            thread_id {blob} NOT NULL,
            checkpoint_id TEXT NOT NULL,
            task {blob} NOT NULL,
            value {blob} NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_id, task)){extra}""",
        """CREATE TABLE {t}graphagent_locks (
            thread_id {blob} PRIMARY KEY,
            token TEXT NOT NULL,
            expires_at {real} NOT NULL)""",
    ),
    (
        # thread -> the id its delete minted: refuses older writes (see refuse_if_deleted)
        """CREATE TABLE {t}graphagent_deleted (
            thread_id {blob} PRIMARY KEY,
            stamp TEXT NOT NULL,
            deleted_at {real} NOT NULL)""",
        "CREATE INDEX graphagent_deleted_at ON {t}graphagent_deleted (deleted_at)",
    ),
)
LATEST = len(MIGRATIONS)


def encode_text(text: str) -> bytes:
    """A thread id, field name or task as stored: UTF-8, lone surrogates kept."""
    return text.encode("utf-8", "surrogatepass")


def decode_text(raw: bytes | memoryview) -> str:
    """Reverse :func:`encode_text`."""
    return bytes(raw).decode("utf-8", "surrogatepass")


def storable_id(cid: str) -> bool:
    """Whether a checkpoint id can be a TEXT value in every database (no NUL, valid UTF-8)."""
    if "\x00" in cid:
        return False
    try:
        cid.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
