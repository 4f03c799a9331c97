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
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from checkpoint.errors import CheckpointError
from graphagent.cli._chat import add_chat_command
from graphagent.cli._common import CliError, Parser, Run, load_object
from graphagent.cli._draw import add_draw_command
from graphagent.cli._mcp import add_mcp_command
from graphagent.cli._threads import add_threads_command
from graphagent.errors import GraphAgentError

__all__ = ["CliError", "load_object", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="graphagent", description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_draw_command(sub)
    add_chat_command(sub)
    add_threads_command(sub)
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
        command: Run = args.run
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
