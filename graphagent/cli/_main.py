"""The parser and ``main``: one subcommand per module, errors as one line on stderr."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from graphagent import __version__
from graphagent.cli._a2a import add_a2a_command
from graphagent.cli._chat import add_chat_command
from graphagent.cli._common import Parser, Run
from graphagent.cli._draw import add_draw_command
from graphagent.cli._errors import one_line
from graphagent.cli._mcp import add_mcp_command
from graphagent.cli._serve import add_serve_commands
from graphagent.cli._store import add_store_command
from graphagent.cli._threads import add_threads_command

__all__ = ["main"]

_DESCRIPTION = """\
Draw graphs, chat with agents, look into stored threads, serve over MCP, A2A and HTTP.

module:object names a module (or a path/to/file.py) and an attribute in it: a compiled
graph, an agent, or a function of no arguments that returns one."""

_EPILOG = """\
examples:
  graphagent draw graphagent.demo:agent
  graphagent chat graphagent.demo:agent --thread demo-user-42 -m "Weather in Oslo?"
  graphagent threads history demo-user-42

Errors are one line on stderr with exit code 2; chat -m exits 3 when the thread waits
for a human. graphagent COMMAND --help says more."""


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="graphagent",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"graphagent {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=Parser, metavar="COMMAND"
    )
    add_draw_command(sub)
    add_chat_command(sub)
    add_threads_command(sub)
    add_mcp_command(sub)
    add_a2a_command(sub)
    add_store_command(sub)
    add_serve_commands(sub)
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, read: Callable[[str], str] = input
) -> int:
    """Run the command line; returns the exit code (2 on any error, after one line)."""
    args = _parser().parse_args(argv)
    args.opened = []  # savers this command opened, closed when it ends
    args.where = ""  # where the store is, for messages (set when one is opened)
    stream = out or sys.stdout
    try:
        command: Run = args.run
        return command(args, stream, read)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # the one place a failure becomes a line: commands raise, they never print errors
        message = one_line(exc)
        if message is None:
            raise  # a bug: its traceback is what a report needs
        print(f"graphagent: error: {message}", file=sys.stderr)
        return 2
    finally:
        for saver in args.opened:
            with contextlib.suppress(Exception):  # the outcome is decided; closing is tidying
                saver.close()
