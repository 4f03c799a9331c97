"""``graphagent store ls|get|search|rm``: look into a long-term memory store.

Namespaces are written with ``/`` between labels (``memories/ada``); the store is the one
``--db``, ``--postgres`` or ``--redis`` names (Redis by default, from ``$REDIS_URL``).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from checkpoint.store import BaseStore, PostgresStore, RedisStore, SqliteStore
from graphagent.cli._common import CliError

__all__ = ["add_store_command"]


def _namespace(text: str | None, what: str) -> tuple[str, ...]:
    labels = tuple(label for label in (text or "").split("/") if label)
    if not labels and what != "prefix":
        raise CliError(f"store {what} needs a namespace, e.g. memories/ada")
    return labels


def _open(args: argparse.Namespace) -> BaseStore:
    given = [flag for flag in ("db", "postgres", "redis") if getattr(args, flag)]
    if len(given) > 1:
        raise CliError("pass one of --db PATH, --postgres URL or --redis URL")
    store: BaseStore
    if args.db:
        if not Path(args.db).is_file():
            raise CliError(f"no SQLite file {args.db!r}")
        store = SqliteStore(args.db)
    elif args.postgres:
        store = PostgresStore.from_url(args.postgres, schema=args.schema)
    else:
        url = args.redis or os.environ.get("REDIS_URL")
        if not url:
            raise CliError("no store to look in: pass --db PATH, --postgres URL or --redis URL")
        store = RedisStore.from_url(url, prefix=args.prefix)
    args.opened.append(store)
    return store


def _show(item: Any, out: TextIO) -> None:
    score = f"  score={item.score:.3f}" if getattr(item, "score", None) is not None else ""
    value = json.dumps(item.value, ensure_ascii=False)
    print(f"{'/'.join(item.namespace)}  {item.key}  {value}{score}", file=out)


def _store(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    if args.limit < 1:
        raise CliError(f"--limit must be 1 or more (got {args.limit})")
    store = _open(args)
    if args.action == "ls":
        for namespace in store.list_namespaces(
            prefix=_namespace(args.namespace, "prefix") or None, limit=args.limit
        ):
            print("/".join(namespace), file=out)
        return 0
    if args.action == "search":
        try:
            flt = json.loads(args.filter) if args.filter else None
        except json.JSONDecodeError as exc:
            raise CliError(f'--filter must be JSON, e.g. \'{{"kind": "food"}}\' ({exc})') from exc
        prefix = _namespace(args.namespace, "prefix")
        for item in store.search(prefix, query=args.query, filter=flt, limit=args.limit):
            _show(item, out)
        return 0
    namespace = _namespace(args.namespace, args.action)
    if not args.key:
        raise CliError(f"store {args.action} needs a key: graphagent store {args.action} NS KEY")
    if args.action == "get":
        got = store.get(namespace, args.key, refresh_ttl=False)
        if got is None:
            raise CliError(f"no item {args.key!r} in {'/'.join(namespace)}")
        print(json.dumps(got.dict(), ensure_ascii=False, indent=2), file=out)
        return 0
    if not store.delete(namespace, args.key):
        raise CliError(f"no item {args.key!r} in {'/'.join(namespace)}; nothing deleted")
    print(f"deleted {'/'.join(namespace)} {args.key}", file=out)
    return 0


def add_store_command(sub: Any) -> None:
    """Add ``store`` to the ``graphagent`` command's subparsers."""
    store = sub.add_parser("store", help="look into a long-term memory store")
    store.add_argument("action", choices=("ls", "get", "search", "rm"))
    store.add_argument("namespace", nargs="?", help="labels joined by '/', e.g. memories/ada")
    store.add_argument("key", nargs="?", help="the item's key (get, rm)")
    store.add_argument("--query", help="search: text (or meaning, on an indexed store)")
    store.add_argument("--filter", help='search: JSON filter, e.g. \'{"kind": "food"}\'')
    store.add_argument("--limit", type=int, default=20, help="most lines shown (default 20)")
    store.add_argument("--db", help="SQLite file")
    store.add_argument("--postgres", help="PostgreSQL URL")
    store.add_argument("--schema", default=None, help="PostgreSQL schema")
    store.add_argument("--redis", help="Redis URL (default: $REDIS_URL)")
    store.add_argument("--prefix", default="graphagent", help="Redis key prefix")
    store.set_defaults(run=_store)
