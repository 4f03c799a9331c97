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
from graphagent.cli._common import CliError, Parser, action_adder

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


def _ls(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    store = _open(args)
    prefix = _namespace(args.namespace, "prefix") or None
    for namespace in store.list_namespaces(prefix=prefix, limit=_limit(args)):
        print("/".join(namespace), file=out)
    return 0


def _search(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    try:
        flt = json.loads(args.filter) if args.filter else None
    except json.JSONDecodeError as exc:
        raise CliError(f'--filter must be JSON, e.g. \'{{"kind": "food"}}\' ({exc})') from exc
    limit = _limit(args)
    store = _open(args)
    prefix = _namespace(args.namespace, "prefix")
    for item in store.search(prefix, query=args.query, filter=flt, limit=limit):
        _show(item, out)
    return 0


def _get(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    namespace = _namespace(args.namespace, "get")
    got = _open(args).get(namespace, args.key, refresh_ttl=False)
    if got is None:
        raise CliError(f"no item {args.key!r} in {'/'.join(namespace)}")
    print(json.dumps(got.dict(), ensure_ascii=False, indent=2), file=out)
    return 0


def _rm(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    namespace = _namespace(args.namespace, "rm")
    if not _open(args).delete(namespace, args.key):
        raise CliError(f"no item {args.key!r} in {'/'.join(namespace)}; nothing deleted")
    print(f"deleted {'/'.join(namespace)} {args.key}", file=out)
    return 0


def _limit(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise CliError(f"--limit must be 1 or more (got {args.limit})")
    return int(args.limit)


_HELP = (
    "The store is the one --db PATH, --postgres URL or --redis URL names (Redis from "
    "$REDIS_URL by default); a namespace is written with / between labels."
)


def add_store_command(sub: Any) -> None:
    """Add ``store ls|get|search|rm`` to the ``graphagent`` command."""
    store = sub.add_parser(
        "store",
        help="look into a long-term memory store",
        description="Look into a long-term memory store. " + _HELP,
        epilog="example: graphagent store ls --db memory.sqlite",
    )
    actions = store.add_subparsers(
        dest="action", required=True, parser_class=Parser, metavar="{ls,get,search,rm}"
    )
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--db", help="SQLite file")
    flags.add_argument("--postgres", help="PostgreSQL URL")
    flags.add_argument("--schema", default=None, help="PostgreSQL schema")
    flags.add_argument("--redis", help="Redis URL (default: $REDIS_URL)")
    flags.add_argument("--prefix", default="graphagent", help="Redis key prefix")

    action = action_adder(actions, flags, _HELP)

    ls = action(
        "ls",
        "print the namespaces that hold items, one a line",
        "graphagent store ls memories --db memory.sqlite",
        _ls,
    )
    ls.add_argument("namespace", nargs="?", help="only namespaces under this one")
    ls.add_argument("--limit", type=int, default=100, metavar="N", help="at most N lines")
    get = action(
        "get",
        "print one item as JSON",
        "graphagent store get memories/ada tea --db memory.sqlite",
        _get,
    )
    get.add_argument("namespace", help="labels joined by /, e.g. memories/ada")
    get.add_argument("key", help="the item's key")
    search = action(
        "search",
        "print the items under a namespace, newest first or by a query",
        "graphagent store search memories --query tea --db memory.sqlite",
        _search,
    )
    search.add_argument("namespace", nargs="?", help="labels joined by /, e.g. memories")
    search.add_argument("--query", help="text to match (by meaning, on an indexed store)")
    search.add_argument("--filter", help='JSON filter on value fields, e.g. {"kind": "food"}')
    search.add_argument("--limit", type=int, default=20, metavar="N", help="at most N items")
    rm = action(
        "rm",
        "delete one item",
        "graphagent store rm memories/ada tea --db memory.sqlite",
        _rm,
    )
    rm.add_argument("namespace", help="labels joined by /, e.g. memories/ada")
    rm.add_argument("key", help="the item's key")
