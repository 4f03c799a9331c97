"""Run every notebook here and save it with its outputs, so the repository shows the graphs.

``make notebooks`` (or ``python notebooks/execute.py [name.ipynb ...]``). ``make test`` runs
the notebooks again (tests/test_notebooks.py) without writing them. Saved outputs keep only
what a reader needs: no execution timings, and the Redis notebook writes under a fixed key
prefix, so a rerun changes little beyond checkpoint ids and times.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def execute(path: Path) -> None:
    """Execute ``path`` top to bottom in a fresh kernel and write it back with its outputs."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", record_timing=False)
    client.execute(cwd=str(path.parent))
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    # the kernel's exact patch version is not worth a diff on every rerun
    notebook.metadata.get("language_info", {}).pop("version", None)
    nbformat.write(notebook, path)


def main(names: list[str]) -> int:
    """Execute the named notebooks (all of them when none is named)."""
    os.environ.setdefault("NOTEBOOK_PREFIX", "notebook-outputs")
    paths = [HERE / n for n in names] if names else sorted(HERE.glob("*.ipynb"))
    for path in paths:
        execute(path)
        print(f"executed {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
