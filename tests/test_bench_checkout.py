"""The benchmarks measure the checkout they are run from, whatever the virtual env's own
install of graphagent points at (helpers' worktrees share one env)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_benchmark_imports_the_checkout_it_is_run_from(tmp_path: Path) -> None:
    """Run as a script from another folder, bench/_common.py's helpers import this
    checkout's packages and say so in the header every benchmark prints."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from _common import machine; print(machine())"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "bench")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    assert f"code: {ROOT} at " in out
    assert "NOT this checkout" not in out
