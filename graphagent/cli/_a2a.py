"""``graphagent a2a serve module:agent --port P``: serve an agent over A2A.

Kept apart from the other commands so that the command line loads without the ``a2a``
extra; the SDK is imported only when the command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TextIO

from graphagent.cli._common import CliError, load_object
from graphagent.cli._mcp import _check_free

__all__ = ["add_a2a_command"]


def _serve(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    try:
        from graphagent.a2a import a2a_app
    except ImportError as exc:
        raise CliError(f"{exc}") from exc
    import uvicorn

    agent: Any = load_object(args.target)
    url = args.url or f"http://{args.host}:{args.port}"
    options = {"version": args.agent_version}
    if args.name:
        options["name"] = args.name
    app = a2a_app(agent, url, **options)
    _check_free(args.host, args.port)
    print(
        f"serving {args.target} over A2A at {url} (card: {url}/.well-known/agent-card.json)",
        file=out,
    )
    out.flush()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def add_a2a_command(sub: Any) -> None:
    """Add ``a2a serve`` to the ``graphagent`` command's subparsers."""
    a2a = sub.add_parser("a2a", help="serve an agent over A2A (Agent2Agent)")
    actions = a2a.add_subparsers(dest="a2a_command", required=True, parser_class=type(a2a))
    serve = actions.add_parser(
        "serve",
        help="serve an agent to A2A clients (JSON-RPC and HTTP+JSON, streaming, the agent card)",
        description="Serve module:agent over A2A: each contextId is a thread of the agent; "
        "answers stream as artifact chunks; a pause for a human asks for input.",
        epilog="example: graphagent a2a serve graphagent.demo:agent --port 9999",
    )
    serve.add_argument("target", help="module:agent (an agent, or a factory of one)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    serve.add_argument(
        "--host", default="127.0.0.1", help="the interface (default 127.0.0.1: this machine)"
    )
    serve.add_argument("--url", help="the URL the card names (default http://HOST:PORT)")
    serve.add_argument("--name", help="the server's name in stored thread ids")
    serve.add_argument(
        "--agent-version", default="1.0.0", help="the version the card tells (default 1.0.0)"
    )
    serve.set_defaults(run=_serve)
