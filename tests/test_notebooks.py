"""Every notebook in notebooks/ runs top to bottom, offline, without an error."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(
    path: Path, redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Executing the notebook raises nothing (nbclient fails on the first error).

    The kernel inherits the test's Redis and a key prefix that the fixture cleans up.
    """
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("NOTEBOOK_PREFIX", redis_prefix)
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute(cwd=str(path.parent))
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]


def test_there_are_notebooks() -> None:
    """The notebooks folder is not empty (a glob that finds nothing must not pass silently)."""
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_with_its_outputs(path: Path) -> None:
    """The repository shows what each notebook draws: every code cell ran, in order, with no
    error, no timings to churn, no stray results, and SVG (never Mermaid) for the graphs.

    Refresh them with `make notebooks` after changing a notebook or what it shows.
    """
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), (
        f"{path.name} is saved without its outputs: run `make notebooks`"
    )
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert not [c for c in code if "execution" in c.metadata]
    bundles = [o.get("data", {}) for o in outputs]
    assert not [b for b in bundles if "text/vnd.mermaid" in b]
    # a bare number as a cell's result is a write's return value shown by accident
    # (Path.write_text's character count); a cell that means a number prints it with words
    stray = [o for o in outputs if o.get("output_type") == "execute_result"]
    assert not [o for o in stray if o["data"].get("text/plain", "").strip().isdigit()]
    if path.name in ("graphs.ipynb", "quickstart.ipynb"):
        assert len([b for b in bundles if "image/svg+xml" in b]) >= 2
