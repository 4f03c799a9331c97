"""The savers the ``--db``, ``--postgres`` and ``--redis`` flags name, and the default.

With none of the flags, ``threads`` (and ``chat``, for an agent without a saver of its
own) use the store the demo keeps its threads in: Redis when ``REDIS_URL`` is set, else
the SQLite file ``$GRAPHAGENT_DB`` (default ``.graphagent/demo.sqlite``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import redis

from checkpoint import MemorySaver
from checkpoint.postgres import PostgresSaver
from checkpoint.redis import RedisSaver
from checkpoint.sqlite import SqliteSaver
from graphagent import demo
from graphagent.cli._common import CliError
from graphagent.cli._errors import first_line

__all__ = [
    "PREFIX",
    "Stored",
    "add_store_flags",
    "default_saver",
    "in_memory",
    "saver_name",
    "stored_saver",
]

Stored = SqliteSaver | PostgresSaver | RedisSaver

PREFIX = demo.REDIS_PREFIX
"""The default ``--prefix``: the demo's, so that both see the same threads."""


def add_store_flags(parser: argparse.ArgumentParser, *, verb: str) -> None:
    """``--db``, ``--postgres``/``--schema`` and ``--redis``/``--prefix`` on ``parser``."""
    parser.add_argument("--db", metavar="PATH", help=f"{verb} a SQLite file")
    parser.add_argument("--postgres", metavar="URL", help=f"{verb} PostgreSQL at this URL")
    parser.add_argument("--schema", default="public", help="PostgreSQL schema (default public)")
    parser.add_argument("--redis", metavar="URL", help=f"{verb} Redis at this URL")
    parser.add_argument("--prefix", default=PREFIX, help=f"Redis key prefix (default {PREFIX})")


def _redis_saver(url: str, prefix: str) -> RedisSaver:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=3)
    except ValueError as exc:
        raise CliError(f"invalid Redis URL: {exc}") from exc
    try:
        saver = RedisSaver(client, prefix=prefix)
    except ValueError as exc:  # the prefix: named before anything is sent
        client.close()
        raise CliError(f"--prefix: {exc}") from exc
    try:
        saver.client.ping()
    except redis.RedisError as exc:
        saver.close()
        # redis-py names host and port, never the password, so the message is safe to print
        raise CliError(f"cannot reach Redis: {exc}") from exc
    return saver


def _postgres_saver(url: str, schema: str, *, create: bool, opened: list[Any]) -> PostgresSaver:
    try:
        import psycopg
    except ImportError:
        raise CliError(
            "--postgres needs psycopg: pip install 'psycopg[binary]' 'psycopg-pool'"
        ) from None
    try:
        # one plain connection first: the pool would retry (and log a warning each time)
        # for its whole timeout before saying the server is not there
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        raise CliError(f"cannot reach PostgreSQL: {first_line(exc)}") from exc
    saver = PostgresSaver.from_url(url, schema=schema, timeout=5)
    opened.append(saver)  # before setup(), so that a failing one is closed too
    if create:
        saver.setup()  # idempotent: creates the tables on first use
    return saver


def _sqlite_saver(path: str, *, create: bool, default: bool = False) -> SqliteSaver:
    if not create and not Path(path).is_file():
        if default:
            raise CliError(
                f"no SQLite file {path!r}, the default store (where the demo keeps threads; "
                "make demo or graphagent chat creates it): pass --db PATH, --postgres URL or "
                "--redis URL to read another"
            )
        raise CliError(f"no SQLite file {path!r} (chat --db {path} creates it)")
    return SqliteSaver.from_path(path, create=create)  # reading creates and changes nothing


def stored_saver(args: argparse.Namespace, *, create: bool) -> Stored | None:
    """The saver named by --db, --postgres or --redis (``None``: none was given).

    Sets ``args.where`` (for messages) and adds the saver to ``args.opened``.
    """
    given = [flag for flag in ("db", "postgres", "redis") if getattr(args, flag)]
    if len(given) > 1:
        raise CliError("pass one of --db PATH, --postgres URL or --redis URL")
    saver: Stored | None = None
    if args.db:
        saver, args.where = _sqlite_saver(args.db, create=create), f"in {args.db!r}"
    elif args.postgres:
        saver = _postgres_saver(args.postgres, args.schema, create=create, opened=args.opened)
        args.where = f"in schema {args.schema!r}"
    elif args.redis:
        saver, args.where = _redis_saver(args.redis, args.prefix), f"under prefix {args.prefix!r}"
    if saver is not None and saver not in args.opened:
        args.opened.append(saver)
    return saver


def default_saver(args: argparse.Namespace, *, create: bool) -> tuple[Stored, str]:
    """The store the demo keeps threads in (see the module's docstring), and its name.

    Sets ``args.where`` and adds the saver to ``args.opened``.
    """
    kind, location = demo.store()
    saver: Stored
    if kind == "redis":
        saver, args.where = _redis_saver(location, args.prefix), f"under prefix {args.prefix!r}"
        name = f"Redis at $REDIS_URL, prefix {args.prefix!r}"
    else:
        saver = _sqlite_saver(location, create=create, default=True)
        args.where, name = f"in {location!r}", f"the SQLite file {location}"
    args.opened.append(saver)
    return saver, name


def in_memory(saver: object) -> bool:
    """Whether ``saver`` loses its threads when the process ends."""
    return isinstance(saver, MemorySaver) or (
        isinstance(saver, SqliteSaver) and saver.path == ":memory:"
    )


def saver_name(saver: object) -> str:
    """A saver as a person knows it: the file, the schema, the prefix (never a URL)."""
    if isinstance(saver, SqliteSaver):
        return f"the SQLite file {saver.path}"
    if isinstance(saver, RedisSaver):
        return f"Redis, prefix {saver.prefix!r}"
    if isinstance(saver, PostgresSaver):
        return f"PostgreSQL, schema {saver.schema!r}"
    return f"a {type(saver).__name__}"
