"""``graphagent mcp serve module:object [--http HOST:PORT]``: serve tools and agents over MCP.

Kept apart from the other commands so that the command line loads without the ``mcp`` extra;
the SDK is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from collections.abc import Callable
from typing import Any, TextIO

from graphagent.cli._common import CliError, load_object

__all__ = ["add_mcp_command"]


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 127.0.0.1:8000), got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _check_free(host: str, port: int) -> None:
    """Refuse a port another server holds, before the server starts (which would log a
    traceback-like error and exit on its own)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except socket.gaierror as exc:
        raise CliError(f"--http {host}:{port}: unknown host ({exc.strerror})") from None
    except OSError as exc:
        busy = exc.errno == errno.EADDRINUSE
        why = "another program listens there; pick another port" if busy else exc.strerror
        raise CliError(f"cannot serve at {host}:{port}: {why}") from None


def _serve(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    try:
        from graphagent.mcp import serve
    except ImportError as exc:
        raise CliError(f"{exc}") from exc
    targets: Any = load_object(args.target)
    name = args.name or args.target.partition(":")[2] or "graphagent"
    if args.http is None:
        # stdout is the protocol channel: say hello on stderr
        print(f"graphagent: serving {args.target} over MCP on stdio", file=sys.stderr)
        serve(targets, name=name, transport="stdio")
    else:
        host, port = args.http
        _check_free(host, port)
        print(f"serving {args.target} over MCP at http://{host}:{port}{args.path}", file=out)
        out.flush()
        serve(targets, name=name, transport="http", host=host, port=port, path=args.path)
    return 0


def add_mcp_command(sub: Any) -> None:
    """Add ``mcp serve`` to the ``graphagent`` command's subparsers."""
    mcp = sub.add_parser("mcp", help="serve tools and agents over MCP")
    actions = mcp.add_subparsers(dest="mcp_command", required=True, parser_class=type(mcp))
    serve = actions.add_parser(
        "serve",
        help="serve a tool, an agent, or a list of them (stdio unless --http)",
        description="Serve module:object over MCP: tools keep their schemas, an agent "
        "becomes one ask_<agent> tool (message + optional thread_id).",
        epilog="example: graphagent mcp serve graphagent.demo:get_weather --http 127.0.0.1:8000",
    )
    serve.add_argument("target", help="module:object (a tool, agent, list, or a factory)")
    serve.add_argument(
        "--http",
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    serve.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    serve.add_argument("--name", help="the server's name shown to clients")
    serve.set_defaults(run=_serve)
