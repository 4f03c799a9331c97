"""What every ``graphagent`` command shares: the one-line error, the parser, loading targets."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

from graphagent.graph import CompiledGraph
from graphagent.tools import ToolCallback

__all__ = [
    "CliError",
    "Parser",
    "Run",
    "action_adder",
    "graph_of",
    "load_object",
    "write_text",
]

Run = Callable[[argparse.Namespace, TextIO, Callable[[str], str]], int]
"""A command: its parsed arguments, where output goes, and how to read a typed line."""


class CliError(Exception):
    """A problem with the command line's input; printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse with the command's one-line error rule."""

    def error(self, message: str) -> NoReturn:
        # one line, like every other error of this command; --help shows the usage
        self.exit(2, f"graphagent: error: {message} (see graphagent --help)\n")


def action_adder(
    actions: Any, flags: argparse.ArgumentParser, more_help: str
) -> Callable[[str, str, str, Any], argparse.ArgumentParser]:
    """How a command with actions (``threads list``, ``store get``...) adds one: its help,
    a description ending in ``more_help``, an example, the shared ``flags`` and what it runs.
    """

    def add(name: str, text: str, example: str, run: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name,
            parents=[flags],
            help=text,
            description=f"{text[0].upper()}{text[1:]}. {more_help}",
            epilog=f"example: {example}",
        )
        parser.set_defaults(run=run)
        return parser

    return add


def load_object(spec: str, *, call: bool = True) -> Any:
    """Import ``module:attr`` (or ``path/to/file.py:attr``); call it if it is a factory
    (unless ``call`` is false: a function wanted as itself, such as an auth function).

    Raises:
        CliError: the spec is malformed, the module does not import, or has no such name.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"expected module:object (e.g. graphagent.demo:agent), got {spec!r}")
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
    except SystemExit as exc:
        # a script's `sys.exit()` at import would end the command with its code, silently
        raise CliError(
            f"importing {module_name!r} called sys.exit({exc.code!r}): a module the command "
            "loads must not exit on import (put that code under if __name__ == '__main__':)"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CliError(f"{module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    factory = not isinstance(obj, (CompiledGraph, ToolCallback))  # a @tool is callable too
    if call and callable(obj) and factory and not hasattr(obj, "graph"):
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


def graph_of(obj: Any, spec: str) -> CompiledGraph:
    """The compiled graph of ``obj`` (a graph, or an agent holding one).

    Raises:
        CliError: ``obj`` is neither.
    """
    graph = obj if isinstance(obj, CompiledGraph) else getattr(obj, "graph", None)
    if not isinstance(graph, CompiledGraph):
        raise CliError(
            f"{spec!r} is a {type(obj).__name__}, not a graph or agent; point at a "
            "compiled StateGraph, a ReactAgent, or a function returning one"
        )
    return graph


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path``; an OS error names the path even when the failing call
    (a write or close on a full device) did not."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, path) from exc
        raise
