"""``graphagent threads list|show|history|delete``: look into stored threads."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from graphagent.cli._common import CliError
from graphagent.cli._stores import redis_saver, stored_saver, where
from graphagent.config import RunnableConfig
from graphagent.graph import StateSnapshot
from graphagent.graph._constants import is_private
from graphagent.graph._snapshot import listed_snapshots, message_count
from graphagent.graph.draw.html import conversation, written_by

__all__ = ["add_threads_command"]


def _print_snapshot(snap: StateSnapshot, out: TextIO) -> None:
    print(
        f"step {snap.step}  checkpoint {snap.checkpoint_id}  "
        f"next: {', '.join(snap.next) or 'nothing (finished)'}",
        file=out,
    )
    for role, text, calls in conversation(snap):
        print(f"  {role:>9}: {text}", file=out)
        for call in calls:
            print(f"  {'':>9}  -> {call}", file=out)
    for key, value in snap.values.items():
        if key != "messages" and not is_private(key):
            print(f"  {key} = {value!r}"[:300], file=out)
    for question in snap.interrupts:
        print(f"  waiting for an answer to: {question.value!r}", file=out)


def _threads(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit must be 1 or more (got {args.limit}); leave it out to see all")
    if args.action == "list" and args.thread:
        raise CliError(
            f"threads list takes no thread id (got {args.thread!r}); to look at one thread: "
            f"graphagent threads show {args.thread}"
        )
    if args.action != "list" and not args.thread:
        raise CliError(f"threads {args.action} needs a thread id")
    saver = stored_saver(args, create=False)
    if saver is None:
        saver = redis_saver(None, args.prefix)
        args.opened.append(saver)
    if args.action == "list":
        found = saver.threads()
        for thread in found[: args.limit]:
            print(thread, file=out)
        if not found:
            # on stderr: stdout stays a clean (empty) list for scripts
            print(f"graphagent: no threads {where(args)}", file=sys.stderr)
        return 0
    limit = args.limit if args.action == "history" else 1
    # a history: its rows need no state, so none is built (only "show" builds one)
    history = saver.history(args.thread, limit=limit)
    if not len(history):
        nothing = "; nothing deleted" if args.action == "delete" else ""
        raise CliError(f"no thread {args.thread!r} {where(args)}{nothing}")
    if args.action == "delete":
        saver.delete_thread(args.thread)
        print(f"deleted thread {args.thread!r}", file=out)
        return 0
    snaps = listed_snapshots(history, RunnableConfig(thread_id=args.thread))
    if args.action == "show":
        _print_snapshot(snaps[0], out)
        return 0
    for snap in snaps:
        nodes = written_by(snap)
        when = snap.created_at.isoformat(timespec="seconds") if snap.created_at else ""
        count = message_count(snap)
        print(
            f"{snap.step:>4}  {nodes:<24} next={','.join(snap.next) or '-':<12} "
            f"messages={count:<4} {when}  {snap.checkpoint_id}",
            file=out,
        )
    return 0


def add_threads_command(sub: Any) -> None:
    """Add ``threads`` to the ``graphagent`` command's subparsers."""
    threads = sub.add_parser(
        "threads", help="look into threads stored in Redis, SQLite or PostgreSQL"
    )
    threads.add_argument("action", choices=("list", "show", "history", "delete"))
    threads.add_argument("thread", nargs="?", help="thread id (show, history, delete)")
    threads.add_argument("--db", help="SQLite file (instead of Redis)")
    threads.add_argument("--postgres", help="PostgreSQL URL (instead of Redis)")
    threads.add_argument("--schema", default="public", help="PostgreSQL schema")
    threads.add_argument("--redis", help="Redis URL (default: $REDIS_URL)")
    threads.add_argument("--prefix", default="graphagent", help="Redis key prefix")
    threads.add_argument(
        "--limit", type=int, default=None, help="history: newest N only; list: first N only"
    )
    threads.set_defaults(run=_threads)
