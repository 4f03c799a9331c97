"""``graphagent draw module:object``: a graph or agent as ASCII, Mermaid, DOT or SVG."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from graphagent.cli._common import graph_of, load_object
from graphagent.graph.draw.formats import FORMATS

__all__ = ["add_draw_command"]


def _draw(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    graph = graph_of(load_object(args.target), args.target)
    text = graph.draw(args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} ({args.format}, {len(graph.nodes)} nodes)", file=out)
    else:
        out.write(text)
    return 0


def add_draw_command(sub: Any) -> None:
    """Add ``draw`` to the ``graphagent`` command's subparsers."""
    draw = sub.add_parser("draw", help="draw a graph or agent")
    draw.add_argument("target", help="module:object (a graph, an agent, or a factory)")
    draw.add_argument("--format", "-f", choices=FORMATS, default="ascii")
    draw.add_argument("-o", "--output", help="write to this file instead of stdout")
    draw.set_defaults(run=_draw)
