"""``graphagent draw module:object``: a graph or agent as ASCII, Mermaid, DOT, PlantUML or
SVG."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TextIO

from graphagent.cli._common import graph_of, load_object, write_text
from graphagent.graph.draw import FORMATS

__all__ = ["add_draw_command"]


def _draw(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    graph = graph_of(load_object(args.target), args.target)
    text = graph.draw(args.format)
    if args.output:
        write_text(args.output, text)
        print(f"wrote {args.output} ({args.format}, {len(graph.nodes)} nodes)", file=out)
    else:
        out.write(text)
    return 0


def add_draw_command(sub: Any) -> None:
    """Add ``draw`` to the ``graphagent`` command's subparsers."""
    draw = sub.add_parser(
        "draw",
        help="draw a graph or agent",
        description=(
            "Draw a graph or agent: ASCII to the terminal, or Mermaid, DOT, PlantUML or SVG."
        ),
        epilog="example: graphagent draw graphagent.demo:agent -f svg -o agent.svg",
    )
    draw.add_argument("target", help="module:object (a graph, an agent, or a factory)")
    draw.add_argument("--format", "-f", choices=FORMATS, default="ascii", help="default ascii")
    draw.add_argument("-o", "--output", help="write to this file instead of stdout")
    draw.set_defaults(run=_draw)
