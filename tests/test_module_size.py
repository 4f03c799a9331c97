"""No product module grows past 600 lines: a file that holds two jobs becomes a package
whose files name them (DESIGN.md, "Layout as it grows")."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parent.parent
LIMIT = 600


def test_no_product_module_is_over_600_lines() -> None:
    """Every module of graphagent and checkpoint has at most 600 lines."""
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for package in ("graphagent", "checkpoint")
        for path in (ROOT / package).rglob("*.py")
    }
    assert len(sizes) > 50, "the package tree was not found"
    over = {path: n for path, n in sorted(sizes.items()) if n > LIMIT}
    assert not over, f"split these modules by job (over {LIMIT} lines): {over}"
