"""Real MCP servers for the tests, from the npm registry, installed once under ``.venv/``.

``python tests/_mcp_servers.py`` installs them (``make test`` does it first); the tests
call :func:`node_servers`, which installs them when missing. Without node or npm the
tests fail with a message saying what to install: they never skip.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import _npm

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".venv" / "mcp-node"
# pinned, so every run tests against the same servers; the inspector works on Node 20
PACKAGES = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/inspector": "2.12.0",
}


class NodeMissing(RuntimeError):
    """node or npm is not installed."""


def _require(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise NodeMissing(
            f"the MCP tests need {tool!r} (Node.js 20 or newer with npm) to run the reference "
            "MCP servers: install it, e.g. `apt-get install nodejs npm`, then rerun"
        )
    return found


def install() -> Path:
    """Install the pinned packages into the cache (once); returns its ``node_modules``."""
    _require("node")
    if not _npm.installed(CACHE, PACKAGES):
        _npm.install(_require("npm"), CACHE, PACKAGES)
    return CACHE / "node_modules"


def node_servers() -> dict[str, list[str]]:
    """Command lines (``node <script>``) by short name: everything, filesystem, inspector."""
    modules = install() / "@modelcontextprotocol"
    node = _require("node")
    return {
        "everything": [node, str(modules / "server-everything" / "dist" / "index.js")],
        "filesystem": [node, str(modules / "server-filesystem" / "dist" / "index.js")],
        "inspector": [
            node,
            str(modules / "inspector" / "clients" / "launcher" / "build" / "index.js"),
        ],
    }


if __name__ == "__main__":
    try:
        print(f"MCP test servers in {install()}")
    except (NodeMissing, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
