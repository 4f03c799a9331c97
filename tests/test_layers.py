"""The package's import graph, read from the source of every module: no import circles,
no import from a higher layer (DESIGN.md's layer list), and, inside the graph engine, the
plan / core / driver / wing / face order."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).parent.parent
PACKAGES = ("graphagent", "checkpoint")

# DESIGN.md's layers, lowest first: a module imports only from its own layer or below.
# Longest prefix wins; a module matching none fails test_every_module_has_a_layer.
LAYERS: dict[str, int] = {
    "checkpoint": 0,
    "graphagent.errors": 1,
    "graphagent.config": 1,
    # below the engine though DESIGN.md's list does not name them: the worker pool and
    # the observer hooks that nodes, model clients and tools report to
    "graphagent._executor": 2,
    "graphagent.observability": 2,
    "graphagent.messages": 3,
    # what sibling packages share (ids, tool-call and result helpers), beside messages
    "graphagent._internal": 3,
    # the observer hooks everything reports to, below observability that reads them,
    # and the public listener that every observer is (the engine and observability use it)
    "graphagent._internal.observe": 1,
    "graphagent._internal.listen": 1,
    "graphagent.graph": 4,
    # durable functions (@entrypoint, @task): the engine's, offered under their own name
    "graphagent.func": 5,
    "graphagent.models": 5,
    "graphagent.tools": 6,
    "graphagent.agent": 7,
    "graphagent.mcp": 8,
    "graphagent.a2a": 8,
    "graphagent.server": 8,
    # what users run, and the root's re-exports (the root module itself only: a new
    # module under graphagent/ is not placed by it)
    "graphagent.cli": 9,
    "graphagent.demo": 9,
    "graphagent.__main__": 9,
}
ROOTS = {"graphagent": 9}

# Inside graphagent.graph (DESIGN.md, "the shape every engine takes"): what compile()
# freezes, the core that yields effects, the driver that performs them, the wing that
# shows things (reading plans and snapshots handed in), the snapshots, the public face.
GRAPH_LAYERS: dict[str, int] = {
    "graphagent.graph._constants": 0,
    "graphagent.graph._strategies": 0,
    "graphagent.graph._state": 0,
    "graphagent.graph._nodes": 0,
    "graphagent.graph._annotations": 0,
    "graphagent.graph._command": 0,
    "graphagent.graph._namespace": 0,
    "graphagent.graph._control": 0,
    "graphagent.graph._policies": 0,
    "graphagent.graph._validate": 0,
    "graphagent.graph._runtime": 0,
    "graphagent.graph._inject": 0,
    "graphagent.graph._push": 0,
    "graphagent.graph._listen": 0,
    "graphagent.graph._plan": 1,
    "graphagent.graph._effects": 2,
    "graphagent.graph._step": 2,
    "graphagent.graph._debug": 2,
    "graphagent.graph._pause": 2,
    "graphagent.graph._tasks": 2,
    "graphagent.graph._saving": 2,
    "graphagent.graph._update": 2,
    "graphagent.graph._retry": 2,
    "graphagent.graph._savercalls": 2,
    "graphagent.graph._keep": 2,
    "graphagent.graph._call": 2,
    "graphagent.graph._stopping": 2,
    "graphagent.graph._run": 3,
    "graphagent.graph._substream": 3,
    "graphagent.graph._drive": 3,
    "graphagent.graph._race": 3,
    "graphagent.graph._watch": 3,
    "graphagent.graph.draw": 4,
    "graphagent.graph._snapshot": 5,
    "graphagent.graph._inspect": 5,
    "graphagent.graph._maintain": 5,
    "graphagent.graph._compiled": 6,
    "graphagent.graph._builder": 7,
    # durable functions: built on the builder and the compiled graph, offered by the face
    "graphagent.graph._func": 7,
    "graphagent.graph": 8,
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(
    name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]
) -> Iterator[str]:
    """The modules an import statement imports: ``from a import b`` is ``a.b`` when that is
    a module, else ``a``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        yield sub if sub in modules else base


@cache
def import_graph() -> nx.DiGraph[str]:
    """Module -> the modules of these packages it imports, every import counted: at the
    top, inside functions, and under ``TYPE_CHECKING`` (a circle in the types is a circle
    in the design). Importing ``a.b.c`` does not count as importing ``a`` and ``a.b``."""
    modules = _modules()
    graph: nx.DiGraph[str] = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(name, path, node, modules):
                    if target in modules and target != name:
                        graph.add_edge(name, target)
    return graph


def _layer(name: str, layers: dict[str, int]) -> int | None:
    if layers is LAYERS and name in ROOTS:
        return ROOTS[name]
    best: tuple[int, int] | None = None
    for prefix, rank in layers.items():
        inside = name == prefix or name.startswith(prefix + ".")
        if inside and (best is None or len(prefix) > best[0]):
            best = (len(prefix), rank)
    return None if best is None else best[1]


def test_the_import_graph_is_read() -> None:
    """The graph holds the packages' modules and the imports they are known to make (so
    the rules below have something to check)."""
    graph = import_graph()
    assert graph.has_edge("graphagent.graph._compiled", "graphagent.graph._drive")
    assert graph.has_edge("graphagent.agent._base", "graphagent.graph")
    assert graph.has_edge("graphagent.graph._drive", "checkpoint.base")
    assert len(graph) > 80


def test_no_import_circles() -> None:
    """No module reaches itself through its imports, at any depth, in any package."""
    circles = {
        frozenset(scc) for scc in nx.strongly_connected_components(import_graph()) if len(scc) > 1
    }
    assert circles == set()


def test_every_module_has_a_layer() -> None:
    """Each module sits in one of DESIGN.md's layers (a new package is placed there first)."""
    assert [m for m in import_graph() if _layer(m, LAYERS) is None] == []


def test_no_module_imports_from_a_higher_layer() -> None:
    """Each module imports only from its own layer and those below (checkpoint imports
    nothing from graphagent; the engine nothing from models, tools or agents; ...)."""
    graph = import_graph()
    upward = {(a, b) for a, b in graph.edges if (_layer(b, LAYERS) or 0) > (_layer(a, LAYERS) or 0)}
    assert upward == set()


def test_checkpoint_never_imports_graphagent() -> None:
    """The checkpoint package stands alone: no module of it imports graphagent."""
    graph = import_graph()
    reached = {b for a, b in graph.edges if a.split(".")[0] == "checkpoint"}
    assert {b for b in reached if b.split(".")[0] == "graphagent"} == set()


@pytest.mark.parametrize("module", sorted(GRAPH_LAYERS))
def test_graph_engine_layers(module: str) -> None:
    """Inside the graph engine, each module imports only from its own rank and below: the
    core reads its plan, never the compiled graph; the drawing wing reads plans and the
    snapshots handed to it, never the snapshot module or the face."""
    graph = import_graph()
    mine = GRAPH_LAYERS[module]
    members = [m for m in graph if _layer(m, GRAPH_LAYERS) == mine and m.startswith(module)]
    above = {
        (a, b)
        for a in members
        for b in graph.successors(a)
        if b.startswith("graphagent.graph") and (_layer(b, GRAPH_LAYERS) or 0) > mine
    }
    assert above == set()


def test_every_graph_module_has_a_rank() -> None:
    """A new module of the engine is placed in its shape first."""
    graph = import_graph()
    engine = [m for m in graph if m == "graphagent.graph" or m.startswith("graphagent.graph.")]
    assert [m for m in engine if _layer(m, GRAPH_LAYERS) is None] == []
