"""The programs the test suite runs that a fresh machine may lack, installed before pytest.

``make test`` runs ``python3 tests/_system.py`` first (stdlib only: it runs before the
virtualenv exists). Each need is a program found on ``PATH`` under one of a few names; when
one is missing, on Debian as root the script runs ``apt-get update`` then ``apt-get install
-y`` with the packages that provide them, and checks again. Elsewhere it stops with one line
naming the packages to install. With everything present it only looks on ``PATH`` (fast).

``python3 tests/_system.py --dry-run`` prints what it would do and changes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Need:
    """A program the tests run: any of ``names`` on PATH, else Debian's ``package``."""

    what: str
    names: tuple[str, ...]
    package: str


# the Mermaid checks run mermaid in a headless browser (tests/_mermaid.py)
BROWSER = Need(
    "a Chromium-family browser",
    ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"),
    "chromium",
)
NEEDS = (
    BROWSER,
    # the reference MCP servers and mermaid are npm packages (tests/_npm.py)
    Need("Node.js", ("node",), "nodejs"),
    Need("npm", ("npm",), "npm"),
    # conftest starts private servers (fault tests, the Cluster) when none answers
    Need("redis-server", ("redis-server",), "redis-server"),
    Need("redis-cli", ("redis-cli",), "redis-tools"),
)


class SystemMissing(RuntimeError):
    """A program the tests need is missing and cannot be installed here."""


def missing(which: Callable[[str], str | None] = shutil.which) -> list[Need]:
    """The needs none of whose names is on PATH."""
    return [need for need in NEEDS if not any(which(name) for name in need.names)]


def plan(gaps: Sequence[Need], *, is_root: bool, has_apt: bool) -> list[list[str]]:
    """The commands that install ``gaps``; raises :class:`SystemMissing` naming the packages
    when this machine cannot install them itself (not Debian, or not root)."""
    if not gaps:
        return []
    packages = sorted({need.package for need in gaps})
    if not (is_root and has_apt):
        what = ", ".join(need.what for need in gaps)
        raise SystemMissing(
            f"the tests need {what}: install the package(s) {' '.join(packages)} "
            f"(on Debian: `apt-get install -y {' '.join(packages)}`), then rerun"
        )
    return [["apt-get", "update"], ["apt-get", "install", "-y", *packages]]


def ensure(*, dry_run: bool = False) -> list[Need]:
    """Install what is missing (see the module docstring); returns what was missing."""
    gaps = missing()
    commands = plan(
        gaps,
        is_root=hasattr(os, "geteuid") and os.geteuid() == 0,
        has_apt=shutil.which("apt-get") is not None and Path("/etc/debian_version").is_file(),
    )
    for command in commands:
        print("+", " ".join(command), flush=True)
        if not dry_run:
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            subprocess.run(command, check=True, env=env)
    if commands and not dry_run:
        still = missing()
        if still:
            raise SystemMissing(
                "installed "
                + " ".join(sorted({need.package for need in gaps}))
                + " but still not on PATH: "
                + ", ".join("/".join(need.names) for need in still)
            )
    return gaps


def main(argv: Sequence[str]) -> int:
    """Entry point: ``--dry-run`` prints the plan only."""
    dry_run = "--dry-run" in argv
    try:
        gaps = ensure(dry_run=dry_run)
    except (SystemMissing, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if gaps:
        done = "would install" if dry_run else "installed"
        print(f"{done} for the tests: " + ", ".join(need.what for need in gaps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
