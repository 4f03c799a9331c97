"""The savers the ``--db``, ``--postgres`` and ``--redis`` flags name."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import redis

from checkpoint.postgres import PostgresSaver
from checkpoint.redis import RedisSaver
from checkpoint.sqlite import SqliteSaver
from graphagent.cli._common import CliError

__all__ = ["Stored", "redis_saver", "stored_saver", "where"]

Stored = SqliteSaver | PostgresSaver | RedisSaver


def redis_saver(url: str | None, prefix: str) -> RedisSaver:
    """A Redis saver at ``url`` (or ``$REDIS_URL``) that answered a PING.

    Raises:
        CliError: no URL, an invalid URL or prefix, or a Redis that does not answer.
    """
    url = url or os.environ.get("REDIS_URL")
    if not url:
        raise CliError("no Redis to look in: pass --redis URL or set REDIS_URL")
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


def _sqlite_saver(path: str, *, create: bool) -> SqliteSaver:
    if not create and not Path(path).is_file():
        raise CliError(f"no SQLite file {path!r} (chat --db {path} creates it)")
    return SqliteSaver.from_path(path)


def stored_saver(args: argparse.Namespace, *, create: bool) -> Stored | None:
    """The saver named by --db, --postgres or --redis (``None``: none was given)."""
    given = [flag for flag in ("db", "postgres", "redis") if getattr(args, flag)]
    if len(given) > 1:
        raise CliError("pass one of --db PATH, --postgres URL or --redis URL")
    saver: Stored | None = None
    if args.db:
        saver = _sqlite_saver(args.db, create=create)
    elif args.postgres:
        saver = PostgresSaver.from_url(args.postgres, schema=args.schema, timeout=5)
        args.opened.append(saver)  # before setup(), so that a failing one is closed too
        if create:
            saver.setup()  # idempotent: creates the tables on first use
    elif args.redis:
        saver = redis_saver(args.redis, args.prefix)
    if saver is not None and saver not in args.opened:
        args.opened.append(saver)
    return saver


def where(args: argparse.Namespace) -> str:
    """Where the flags point, for messages (URLs stay out: they may hold passwords)."""
    if args.db:
        return f"in {args.db!r}"
    if args.postgres:
        return f"in schema {args.schema!r}"
    return f"under prefix {args.prefix!r}"
