"""``graphagent threads list|show|history|delete``: look into stored threads."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from graphagent.cli._common import CliError, Parser, action_adder
from graphagent.cli._stores import Stored, add_store_flags, default_saver, stored_saver
from graphagent.config import RunnableConfig
from graphagent.graph import is_private, listed_snapshots, message_count
from graphagent.graph.draw import conversation, written_by

__all__ = ["add_threads_command"]

_STORE_HELP = (
    "With no --db, --postgres or --redis, threads are read where the demo keeps them: "
    "Redis when REDIS_URL is set, else the SQLite file $GRAPHAGENT_DB "
    "(default .graphagent/demo.sqlite)."
)


def _open(args: argparse.Namespace) -> Stored:
    """The store the flags name, else the default one (said on stderr, once)."""
    saver = stored_saver(args, create=False)
    if saver is None:
        saver, name = default_saver(args, create=False)
        # stderr: stdout stays the command's output (thread ids, for scripts)
        print(
            f"graphagent: reading {name} (the default store; --db, --postgres or --redis "
            "read another)",
            file=sys.stderr,
        )
    return saver


def _check_limit(args: argparse.Namespace) -> None:
    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit must be 1 or more (got {args.limit}); leave it out to see all")


def _history_of(args: argparse.Namespace, saver: Stored, limit: int | None) -> Any:
    history = saver.history(args.thread, limit=limit)
    if not len(history):
        nothing = "; nothing deleted" if args.action == "delete" else ""
        raise CliError(f"no thread {args.thread!r} {args.where}{nothing}")
    return history


def _list(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    _check_limit(args)
    if args.stray:
        raise CliError(
            f"threads list takes no thread id (got {args.stray!r}); to look at one thread: "
            f"graphagent threads show {args.stray}"
        )
    found = _open(args).threads()
    for thread in found[: args.limit]:
        print(thread, file=out)
    if not found:
        # on stderr: stdout stays a clean (empty) list for scripts
        print(f"graphagent: no threads {args.where}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    history = _history_of(args, _open(args), 1)
    snap = listed_snapshots(history, RunnableConfig(thread_id=args.thread))[0]
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
    return 0


_COLUMNS = ("STEP", "WRITTEN BY", "NEXT", "MESSAGES", "CREATED", "CHECKPOINT")
_RIGHT = {0, 3}  # numbers align right


def table(rows: Sequence[Sequence[str]], header: Sequence[str] = _COLUMNS) -> list[str]:
    """``rows`` under ``header``, each column as wide as its widest cell."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [
            cell.rjust(width) if i in _RIGHT else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def _history(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    _check_limit(args)
    # its rows need no state, so none is built beyond what each row shows
    history = _history_of(args, _open(args), args.limit)
    rows = [
        (
            str(snap.step),
            written_by(snap) or "-",
            ",".join(snap.next) or "-",
            str(message_count(snap)),
            snap.created_at.isoformat(timespec="seconds") if snap.created_at else "-",
            snap.checkpoint_id or "-",
        )
        for snap in listed_snapshots(history, RunnableConfig(thread_id=args.thread))
    ]
    for line in table(rows):
        print(line, file=out)
    return 0


def _delete(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    saver = _open(args)
    _history_of(args, saver, 1)
    saver.delete_thread(args.thread)
    print(f"deleted thread {args.thread!r}", file=out)
    return 0


def add_threads_command(sub: Any) -> None:
    """Add ``threads list|show|history|delete`` to the ``graphagent`` command."""
    threads = sub.add_parser(
        "threads",
        help="look into threads stored in SQLite, Redis or PostgreSQL",
        description="Look into stored threads. " + _STORE_HELP,
        epilog="example: graphagent threads list",
    )
    actions = threads.add_subparsers(
        dest="action", required=True, parser_class=Parser, metavar="{list,show,history,delete}"
    )
    store = argparse.ArgumentParser(add_help=False)
    add_store_flags(store, verb="read")

    action = action_adder(actions, store, _STORE_HELP)

    listing = action(
        "list",
        "print the stored thread ids, one a line",
        "graphagent threads list --db threads.sqlite --limit 20",
        _list,
    )
    # a thread id here is a slip for "show": caught to say so
    listing.add_argument("stray", nargs="?", help=argparse.SUPPRESS)
    listing.add_argument("--limit", type=int, metavar="N", help="the first N ids only")
    show = action(
        "show",
        "print a thread's latest state: the conversation, other keys, pending questions",
        "graphagent threads show demo-user-42",
        _show,
    )
    show.add_argument("thread", help="the thread id")
    history = action(
        "history",
        "print a thread's checkpoints, newest first, one a row",
        "graphagent threads history demo-user-42 --limit 5",
        _history,
    )
    history.add_argument("thread", help="the thread id")
    history.add_argument("--limit", type=int, metavar="N", help="the newest N checkpoints only")
    delete = action(
        "delete",
        "delete a thread and all its checkpoints",
        "graphagent threads delete demo-user-42",
        _delete,
    )
    delete.add_argument("thread", help="the thread id")
