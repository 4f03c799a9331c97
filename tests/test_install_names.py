"""Nothing tells a reader to install ``graphagent`` by name: on the public package index that
name is another project, so docs, notebooks and error messages say how to install from a
clone (``pip install -e '.[extra]'``) or name the real dependency."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# `pip install graphagent`, `pip install 'graphagent[x]'`, `pip install "graphagent[x]"`
BY_NAME = re.compile(r"pip install [^\n`]*?(?<![\w./-])['\"]?graphagent\b(?![\w/-])")
WHERE = ("README.md", "docs", "notebooks", "graphagent", "checkpoint", "bench", "Makefile")


def _files() -> list[Path]:
    found: list[Path] = []
    for name in WHERE:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        else:
            found += [p for p in path.rglob("*") if p.suffix in (".md", ".py", ".ipynb")]
    return found


def test_the_pattern_finds_installs_by_name() -> None:
    """The check matches the ways of naming the package, and not installs from a clone."""
    for bad in (
        "pip install graphagent",
        "pip install 'graphagent[mcp]'",
        'pip install -U "graphagent[otel]" opentelemetry-sdk',
    ):
        assert BY_NAME.search(bad), bad
    for good in ("pip install -e '.[mcp]'", "pip install -e /src/graphagent", "pip install redis"):
        assert not BY_NAME.search(good), good


def test_no_page_or_message_installs_graphagent_by_name() -> None:
    """Docs, notebooks, README and the packages' messages never say `pip install graphagent`."""
    hits = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in _files()
        for match in BY_NAME.finditer(path.read_text(encoding="utf-8"))
    ]
    assert hits == [], "install from a clone instead (pip install -e '.[extra]'):\n" + "\n".join(
        hits
    )
