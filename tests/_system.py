"""The programs the test suite runs that a fresh machine may lack, installed before pytest.

``make test`` runs ``python3 tests/_system.py`` first (stdlib only: it runs before the
virtualenv exists). Each need is a program found on ``PATH`` under one of a few names; when
one is missing, on Debian as root the script runs ``apt-get update`` then ``apt-get install
-y`` with the packages that provide them, and checks again. Elsewhere it stops with one line
naming the packages to install. With everything present it only looks on ``PATH`` (fast).

It also installs pgvector into each PostgreSQL server on the machine that lacks it, when
apt knows the package (``postgresql-<major>-pgvector``: Debian 13 has it, Debian 12 does
not). That one is optional and never triggers ``apt-get update`` by itself: where it is not
packaged, the pgvector tests run a private server from the ``pgserver`` dev dependency.

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


# where Debian's PostgreSQL servers and their extensions live
PG_LIB = Path("/usr/lib/postgresql")
PG_SHARE = Path("/usr/share/postgresql")


def pgvector_packages(lib: Path = PG_LIB, share: Path = PG_SHARE) -> list[str]:
    """The Debian packages that would give each installed PostgreSQL server pgvector."""
    if not lib.is_dir():
        return []
    majors = sorted(d.name for d in lib.iterdir() if (d / "bin" / "postgres").is_file())
    return [
        f"postgresql-{major}-pgvector"
        for major in majors
        if not (share / major / "extension" / "vector.control").is_file()
    ]


def packaged(package: str) -> bool:
    """Whether apt's current lists know ``package`` (no update is run to find out)."""
    found = subprocess.run(
        ["apt-cache", "show", package], capture_output=True, text=True, check=False
    )
    return found.returncode == 0 and "Package:" in found.stdout


def optional_plan(
    known: Callable[[str], bool] = packaged, lib: Path = PG_LIB, share: Path = PG_SHARE
) -> list[list[str]]:
    """The command installing the pgvector packages apt knows (none: no command)."""
    wanted = [package for package in pgvector_packages(lib, share) if known(package)]
    return [["apt-get", "install", "-y", *wanted]] if wanted else []


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


def is_root() -> bool:
    """Whether this process may install packages."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def has_apt() -> bool:
    """Whether this is Debian with apt."""
    return shutil.which("apt-get") is not None and Path("/etc/debian_version").is_file()


def is_debian_root() -> bool:
    """Both: packages can be installed here."""
    return is_root() and has_apt()


def ensure(*, dry_run: bool = False) -> list[Need]:
    """Install what is missing (see the module docstring); returns what was missing."""
    gaps = missing()
    commands = plan(gaps, is_root=is_root(), has_apt=has_apt())
    for command in commands:
        print("+", " ".join(command), flush=True)
        if not dry_run:
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            subprocess.run(command, check=True, env=env)
    optional = optional_plan() if is_debian_root() else []
    for command in optional:
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
