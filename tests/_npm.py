"""Pinned npm packages installed once into a cache folder under ``.venv/`` (the test
setup's Node.js tools: the reference MCP servers, mermaid)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path


def installed(cache: Path, packages: Mapping[str, str]) -> bool:
    """Whether ``cache`` already holds exactly these pinned packages."""
    stamp = cache / "installed.json"
    return stamp.is_file() and stamp.read_text() == json.dumps(packages, sort_keys=True)


def install(npm: str, cache: Path, packages: Mapping[str, str]) -> None:
    """``npm install`` the pinned packages into ``cache`` and stamp it; fails with npm's
    own words."""
    cache.mkdir(parents=True, exist_ok=True)
    specs = [f"{name}@{version}" for name, version in packages.items()]
    done = subprocess.run(
        [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--silent", *specs],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"npm install {' '.join(specs)} failed:\n{done.stderr[-2000:]}")
    (cache / "installed.json").write_text(json.dumps(packages, sort_keys=True))
