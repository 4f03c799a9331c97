"""``graphagent serve TARGET...``: the Agent Protocol server; ``graphagent worker``: its workers.

Kept apart from the other commands so that the command line loads without the ``server``
extra; Starlette and uvicorn are imported only when the command runs.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Callable
from typing import Any, TextIO

from graphagent.cli._common import CliError, load_object
from graphagent.cli._mcp import _check_free

__all__ = ["add_serve_commands"]


def _settle_heap() -> None:
    """Leave what was imported and built so far out of the collector's full passes.

    A server keeps tens of thousands of objects from its imports alive for good; each full
    collection (every few hundred runs) walked them all, a pause of tens of milliseconds
    on a busy machine that showed in ``runs.wait``'s p99 (bench/server.py). This process
    is the command's own, so freezing its heap touches nobody else's.
    """
    gc.collect()
    gc.freeze()


DEFAULT_DB = ".graphagent/server.sqlite"


def _targets(specs: list[str]) -> list[Any]:
    out: list[Any] = []
    for spec in specs:
        obj = load_object(spec)
        out.extend(obj if isinstance(obj, (list, tuple)) else [obj])
    return out


def _auth(spec: str | None) -> Any:
    if spec is None:
        return None
    fn = load_object(spec, call=False) if ":" in spec else None
    if not callable(fn):
        raise CliError(f"--auth {spec}: expected module:function, a function of the headers")
    return fn


def _storage(args: argparse.Namespace) -> dict[str, Any]:
    """The saver, store and records the flags name (default: one SQLite file)."""
    given = [flag for flag in ("db", "postgres", "redis") if getattr(args, flag)]
    if len(given) > 1:
        raise CliError("pass one of --db PATH, --postgres URL or --redis URL")
    if args.postgres:
        return {"postgres": args.postgres}
    if args.redis:
        return {"redis": args.redis}
    from graphagent.server import sqlite_options

    return sqlite_options(args.db or DEFAULT_DB)


def _serve(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    try:
        from graphagent.server import create_app
    except ImportError as exc:
        raise CliError(f"{exc}") from exc
    import uvicorn

    targets = _targets(args.target)
    options = _storage(args)
    auth = _auth(args.auth)
    cluster = options.get("redis") or options.get("postgres")
    if args.no_run and not cluster:
        raise CliError("--no-run needs --redis or --postgres: workers take the runs there")
    _check_free(args.host, args.port)
    try:
        if "redis" in options:
            from graphagent.server import redis_service

            service = redis_service(
                targets,
                options["redis"],
                prefix=args.prefix,
                run=not args.no_run,
                auth=auth,
                name=args.name,
            )
            app = create_app(targets, service=service)
        elif "postgres" in options:
            from graphagent.server import postgres_service

            service = postgres_service(
                targets,
                options["postgres"],
                schema=args.prefix,
                run=not args.no_run,
                auth=auth,
                name=args.name,
            )
            app = create_app(targets, service=service)
        else:
            app = create_app(targets, auth=auth, name=args.name, **options)
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    names = ", ".join(a.name for a in app.state.service.assistants)
    print(f"serving {names} at http://{args.host}:{args.port} (API docs at /docs)", file=out)
    out.flush()
    _settle_heap()
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, lifespan="on")
    return 0


def _worker(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    try:
        from graphagent.server import run_worker
    except ImportError as exc:
        raise CliError(f"{exc}") from exc
    if bool(args.postgres) == bool(args.redis):
        raise CliError(
            "a worker takes runs from the cluster's queue: pass --redis URL or --postgres URL"
        )
    targets = _targets(args.target)
    print(f"worker taking runs of {', '.join(args.target)}", file=out)
    out.flush()
    _settle_heap()
    run_worker(
        targets,
        args.redis or args.postgres,
        prefix=args.prefix,
        concurrency=args.concurrency,
        lease_ms=args.lease_ms,
    )
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="+", help="module:object or file.py:object (agent, graph)")
    parser.add_argument("--postgres", metavar="URL", help="PostgreSQL: threads, runs and queue")
    parser.add_argument("--redis", metavar="URL", help="Redis: threads, runs and queue")
    parser.add_argument(
        "--prefix", default="graphagent", help="Redis key prefix, or PostgreSQL schema"
    )


def add_serve_commands(sub: Any) -> None:
    """Add ``serve`` and ``worker`` to the ``graphagent`` command's subparsers."""
    serve = sub.add_parser(
        "serve",
        help="serve agents and graphs over HTTP (the Agent Protocol; langgraph-sdk works)",
        description="Serve agents and compiled graphs over HTTP: assistants, threads, runs "
        "and store, as LangGraph's server does. Threads are kept in a SQLite file unless "
        "--postgres or --redis names a shared store, which workers can then share.",
        epilog="example: graphagent serve graphagent.demo:agent --port 2024",
    )
    _common(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=2024, help="port (default 2024)")
    serve.add_argument("--db", metavar="PATH", help=f"SQLite file (default {DEFAULT_DB})")
    serve.add_argument("--auth", metavar="MODULE:FN", help="fn(headers) -> user id")
    serve.add_argument("--name", default="graphagent", help="the server's name")
    serve.add_argument("--no-run", action="store_true", help="API only: workers run the runs")
    serve.add_argument("--log-level", default="warning", help="uvicorn's log level")
    serve.set_defaults(run=_serve, db=None)
    worker = sub.add_parser(
        "worker",
        help="execute the runs that graphagent serve --redis queues",
        description="Take runs from the queue of a cluster of graphagent serve --redis "
        "servers (any number of workers, on any machines) and execute them.",
        epilog="example: graphagent worker graphagent.demo:agent --redis redis://localhost:6379",
    )
    _common(worker)
    worker.add_argument("--concurrency", type=int, default=16, help="runs at once (default 16)")
    worker.add_argument(
        "--lease-ms",
        type=int,
        default=5000,
        help="a dead worker's runs are taken over after this long (default 5000)",
    )
    worker.set_defaults(run=_worker)
