"""The seams between packages, read from the source of every module: a package reaches a
sibling only through the sibling's face (its ``__init__``) or ``graphagent._internal``,
never through another package's private modules or private names."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PACKAGES = ("graphagent", "checkpoint")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _package(name: str, path: Path) -> str:
    """The package a module belongs to: itself for an ``__init__``, else its parent."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _reaches_own(here: str, owner: str) -> bool:
    """Whether a module of package ``here`` may use the private modules of ``owner``: its
    own, its parents', and those of a subpackage of its own (``graph`` and its ``draw``
    wing); never a sibling's, and the roots are no one's parent here."""
    parent = owner.rpartition(".")[0]
    return _inside(here, owner) or (parent == here and here not in PACKAGES)


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, str]]:
    """``(module, name or "")`` for each thing a module imports from these packages,
    at the top, in functions and under ``TYPE_CHECKING`` alike; ``from a import b`` is the
    module ``a.b`` when that is a module, else the name ``b`` of ``a``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ""
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package(name, path).split(".")
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub, "") if sub in modules else (base, alias.name)


def reaches() -> list[str]:
    """Every import of another package's private module or private name, as
    ``importer -> target``.

    A private module (a ``_x`` part in its path) belongs to the package holding it; any
    module inside that package may import it (so ``graphagent._internal`` is open to all of
    graphagent), and so may the package's parent (not a root). A private name belongs to
    its module's package, and only that package's own modules import it.
    """
    modules = _modules()
    found = []
    for name, path in modules.items():
        here = _package(name, path)
        for target, imported in _imports(name, path, modules):
            if target.split(".")[0] not in PACKAGES:
                continue
            parts = target.split(".")
            private = next((i for i, p in enumerate(parts) if _private(p)), None)
            if private is not None and not _reaches_own(here, ".".join(parts[:private])):
                found.append(f"{name} -> {target}")
            elif imported and _private(imported) and target in modules:
                owner = _package(target, modules[target])
                if here != owner:
                    found.append(f"{name} -> {target}.{imported}")
    return list(dict.fromkeys(found))  # once each, however many names or lines


def test_the_seams_are_read() -> None:
    """The reader sees a module's imports as (module, name) pairs, names of modules and
    modules alike (so the rule below has something to judge)."""
    modules = _modules()
    path = ROOT / "graphagent" / "tools" / "_manager.py"
    seen = set(_imports("graphagent.tools._manager", path, modules))
    assert ("graphagent._internal.calls", "unique_call_ids") in seen  # a name of a module
    assert ("graphagent.tools._definition", "ToolCallback") in seen
    assert ("graphagent._executor", "run_all") in seen
    assert len(modules) > 80


def test_no_package_imports_another_packages_private_parts() -> None:
    """No module imports a private module or a private name of another package: what a
    sibling needs is on its face, or in ``graphagent._internal``."""
    assert sorted(set(reaches())) == []


def test_a_reach_into_a_sibling_would_be_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule flags the three shapes of a reach into a sibling's privates (a private
    module path, a private module imported by name, a private name of a module)."""
    package = tmp_path / "graphagent"
    for folder in ("a", "b"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "b" / "_impl.py").write_text("_secret = 1\nopen_name = 2\n")
    (package / "b" / "face.py").write_text("_hidden = 1\n")
    (package / "a" / "user.py").write_text(
        "from graphagent.b._impl import open_name\n"
        "from graphagent.b import _impl\n"
        "from graphagent.b.face import _hidden\n"
        "from graphagent.b import face\n"
    )
    (package / "b" / "own.py").write_text("from graphagent.b._impl import _secret\n")
    (tmp_path / "checkpoint").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert reaches() == [
        "graphagent.a.user -> graphagent.b._impl",
        "graphagent.a.user -> graphagent.b.face._hidden",
    ]
