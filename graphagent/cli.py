"""The ``graphagent`` command: draw graphs, chat with agents, look into stored threads.

Examples::

    graphagent draw myapp.agents:support --format svg -o support.svg
    graphagent chat myapp.agents:support --thread ticket-42 --db threads.sqlite
    graphagent threads list --redis redis://localhost:6379/0
    graphagent threads show ticket-42 --db threads.sqlite
    graphagent threads history ticket-42 --postgres postgresql://db/app
    graphagent threads history ticket-42 --redis redis://localhost:6379/0
    graphagent mcp serve myapp.agents:support --http 127.0.0.1:8000

``module:object`` names a module (or a ``.py`` file) and an attribute in it: a compiled
graph, an agent, or a function of no arguments that returns one. Errors are one line on
stderr and exit code 2; ``chat -m`` exits 3 when the thread waits for a human.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import importlib.util
import inspect
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import redis

from checkpoint.errors import CheckpointError
from checkpoint.postgres import PostgresSaver
from checkpoint.redis import RedisSaver
from checkpoint.sqlite import SqliteSaver
from graphagent._chat import Chat
from graphagent._mcp_cli import add_mcp_command
from graphagent.config import RunnableConfig
from graphagent.errors import GraphAgentError
from graphagent.graph import CompiledGraph, StateSnapshot
from graphagent.graph._constants import is_private
from graphagent.graph._snapshot import listed_snapshots, message_count
from graphagent.graph.draw.formats import FORMATS
from graphagent.graph.draw.html import conversation, written_by
from graphagent.tools import ToolCallback

__all__ = ["CliError", "load_object", "main"]


class CliError(Exception):
    """A problem with the command line's input; printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # one line, like every other error of this command; --help shows the usage
        self.exit(2, f"graphagent: error: {message} (see graphagent --help)\n")


def load_object(spec: str) -> Any:
    """Import ``module:attr`` (or ``path/to/file.py:attr``); call it if it is a factory.

    Raises:
        CliError: the spec is malformed, the module does not import, or has no such name.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"expected module:object (e.g. myapp.agents:agent), got {spec!r}")
    if str(Path.cwd()) not in sys.path:
        # like `python -m`: modules next to where the command runs are importable
        sys.path.insert(0, str(Path.cwd()))
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise CliError(f"no such file {module_name!r}")
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            assert loader_spec is not None and loader_spec.loader is not None
            module = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except CliError:
        raise
    except ImportError as exc:
        raise CliError(f"cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise CliError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CliError(f"{module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    factory = not isinstance(obj, (CompiledGraph, ToolCallback))  # a @tool is callable too
    if callable(obj) and factory and not hasattr(obj, "graph"):
        obj = _call_factory(obj, spec)
    return obj


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _call_factory(factory: Callable[[], Any], spec: str) -> Any:
    """``factory()``, or a one-line error: it needs arguments, or it raised."""
    try:
        params = inspect.signature(factory).parameters.values()
        needed = [p.name for p in params if p.default is p.empty and p.kind not in _VARIADIC]
    except (TypeError, ValueError):  # builtins without a signature: just call them
        needed = []
    if needed:
        raise CliError(
            f"{spec!r} is a function that needs arguments ({', '.join(needed)}); point at an "
            "object, or a function of no arguments that returns one"
        )
    try:
        return factory()
    except Exception as exc:
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise CliError(
            f"calling {spec!r} failed: {type(exc).__name__}" + (f": {detail}" if detail else "")
        ) from exc


def _graph_of(obj: Any, spec: str) -> CompiledGraph:
    graph = obj if isinstance(obj, CompiledGraph) else getattr(obj, "graph", None)
    if not isinstance(graph, CompiledGraph):
        raise CliError(
            f"{spec!r} is a {type(obj).__name__}, not a graph or agent; point at a "
            "compiled StateGraph, a ReactAgent, or a function returning one"
        )
    return graph


def _draw(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    graph = _graph_of(load_object(args.target), args.target)
    text = graph.draw(args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} ({args.format}, {len(graph.nodes)} nodes)", file=out)
    else:
        out.write(text)
    return 0


def _redis_saver(url: str | None, prefix: str) -> RedisSaver:
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


Stored = SqliteSaver | PostgresSaver | RedisSaver


def _stored_saver(args: argparse.Namespace, *, create: bool) -> Stored | None:
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
        saver = _redis_saver(args.redis, args.prefix)
    if saver is not None and saver not in args.opened:
        args.opened.append(saver)
    return saver


def _chat(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    agent = load_object(args.target)
    if isinstance(agent, CompiledGraph) or not isinstance(
        getattr(agent, "graph", None), CompiledGraph
    ):
        raise CliError(f"{args.target!r} is a {type(agent).__name__}, not an agent; chat needs one")
    stored = _stored_saver(args, create=True)
    if stored is not None:
        # a copy: the user's agent object keeps its own saver
        agent = copy.copy(agent)
        agent.graph = agent.graph.with_saver(stored)
    if agent.graph.saver is None:
        raise CliError(
            f"agent {agent.name!r} has no saver, so thread {args.thread!r} cannot be kept; "
            "build it with saver=..., or pass --db PATH, --postgres URL or --redis URL"
        )
    messages: list[str] | None = list(args.message) if args.message else None
    stop = "" if messages else " (Ctrl-D to stop)"  # -m sends its messages and exits
    print(f"chatting with {agent.name!r} on thread {args.thread!r}{stop}", file=out)
    return Chat(agent, args.thread, out, read, again=_chat_again(args)).run(messages)


def _chat_again(args: argparse.Namespace) -> str:
    """The command that continues this chat (URLs stay out: they may hold passwords)."""
    parts = ["graphagent chat", shlex.quote(args.target), "--thread", shlex.quote(args.thread)]
    if args.db:
        parts += ["--db", shlex.quote(args.db)]
    elif args.postgres:
        parts += ["--postgres URL", "--schema", shlex.quote(args.schema)]
    elif args.redis:
        parts += ["--redis URL", "--prefix", shlex.quote(args.prefix)]
    return " ".join(parts)


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


def _where(args: argparse.Namespace) -> str:
    if args.db:
        return f"in {args.db!r}"
    if args.postgres:
        return f"in schema {args.schema!r}"
    return f"under prefix {args.prefix!r}"


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
    saver = _stored_saver(args, create=False)
    if saver is None:
        saver = _redis_saver(None, args.prefix)
        args.opened.append(saver)
    if args.action == "list":
        found = saver.threads()
        for thread in found[: args.limit]:
            print(thread, file=out)
        if not found:
            # on stderr: stdout stays a clean (empty) list for scripts
            print(f"graphagent: no threads {_where(args)}", file=sys.stderr)
        return 0
    limit = args.limit if args.action == "history" else 1
    # a history: its rows need no state, so none is built (only "show" builds one)
    history = saver.history(args.thread, limit=limit)
    if not len(history):
        nothing = "; nothing deleted" if args.action == "delete" else ""
        raise CliError(f"no thread {args.thread!r} {_where(args)}{nothing}")
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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="graphagent", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    draw = sub.add_parser("draw", help="draw a graph or agent")
    draw.add_argument("target", help="module:object (a graph, an agent, or a factory)")
    draw.add_argument("--format", "-f", choices=FORMATS, default="ascii")
    draw.add_argument("-o", "--output", help="write to this file instead of stdout")
    draw.set_defaults(run=_draw)

    chat = sub.add_parser("chat", help="chat with an agent on a thread (resumes it)")
    chat.add_argument("target", help="module:object (an agent, or a factory)")
    chat.add_argument("--thread", "-t", required=True, help="thread id to start or resume")
    chat.add_argument("--message", "-m", action="append", help="send this, print, exit")
    chat.add_argument("--db", help="keep the thread in this SQLite file (created if missing)")
    chat.add_argument("--postgres", help="keep the thread in PostgreSQL at this URL")
    chat.add_argument("--schema", default="public", help="PostgreSQL schema")
    chat.add_argument("--redis", help="keep the thread in Redis at this URL")
    chat.add_argument("--prefix", default="graphagent", help="Redis key prefix")
    chat.set_defaults(run=_chat)

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

    add_mcp_command(sub)
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, read: Callable[[str], str] = input
) -> int:
    """Run the command line; returns the exit code (2 on any error, after one line)."""
    args = _parser().parse_args(argv)
    args.opened = []  # savers this command opened, closed when it ends
    stream = out or sys.stdout
    try:
        command: Callable[[argparse.Namespace, TextIO, Callable[[str], str]], int] = args.run
        return command(args, stream, read)
    except (CliError, GraphAgentError, CheckpointError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"graphagent: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        for saver in args.opened:
            with contextlib.suppress(Exception):  # the outcome is decided; closing is tidying
                saver.close()


if __name__ == "__main__":
    raise SystemExit(main())
