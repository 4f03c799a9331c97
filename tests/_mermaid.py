"""Mermaid's own parser and renderer, run in headless Chromium, to check our Mermaid output.

The ``mermaid`` npm package is installed once under ``.venv/`` (like the MCP test servers);
the page loads its browser bundle, parses and renders each diagram, and reports what it
drew. Without node, npm or Chromium the tests fail with a message saying what to install:
they never skip. ``python tests/_mermaid.py`` installs the package.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import _npm
import _system

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".venv" / "mermaid-node"
PACKAGES = {"mermaid": "12.3.0"}  # pinned: every run checks against the same parser
BROWSERS = _system.BROWSER.names

_PAGE = """<!doctype html><html><body><pre id="out">pending</pre>
<script src="{script}"></script>
<script>
const diagrams = {diagrams};
(async () => {{
  mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
  const results = [];
  for (const [i, text] of diagrams.entries()) {{
    try {{
      await mermaid.parse(text);
      const {{svg}} = await mermaid.render("check" + i, text);
      const box = document.createElement("div");
      box.innerHTML = svg;
      const nodes = [...box.querySelectorAll("g.node")].map(
        (n) => n.textContent.replace(/\\s+/g, " ").trim());
      const clusters = [...box.querySelectorAll("g.cluster")].map(
        (n) => n.textContent.replace(/\\s+/g, " ").trim());
      const edgeLabels = [...box.querySelectorAll("g.edgeLabel")].map(
        (n) => n.textContent.replace(/\\s+/g, " ").trim()).filter((t) => t);
      const edges = box.querySelectorAll("path.flowchart-link").length;
      results.push({{ok: true, nodes, clusters, edgeLabels, edges}});
    }} catch (e) {{
      results.push({{ok: false, error: String(e && e.message || e)}});
    }}
  }}
  document.getElementById("out").textContent = JSON.stringify(results);
}})();
</script></body></html>
"""


class ToolMissing(RuntimeError):
    """node, npm or Chromium is not installed."""


def _require(tool: str, how: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise ToolMissing(f"the Mermaid checks need {tool!r}: install it ({how}), then rerun")
    return found


def browser() -> str:
    """The path of a Chromium-family browser, or a clear error saying how to get one."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise ToolMissing(
        "the Mermaid and screenshot checks need a headless Chromium: `make test` installs it "
        "on Debian as root; elsewhere install it (e.g. `apt-get install -y chromium`), then rerun"
    )


def install() -> Path:
    """Install the pinned mermaid package into the cache (once); returns its bundle."""
    _require("node", "Node.js 20 or newer, e.g. `apt-get install nodejs npm`")
    bundle = CACHE / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if not (_npm.installed(CACHE, PACKAGES) and bundle.is_file()):
        _npm.install(_require("npm", "`apt-get install npm`"), CACHE, PACKAGES)
    return bundle


def render(diagrams: list[str]) -> list[dict[str, object]]:
    """Parse and render each diagram with mermaid; one result per diagram.

    A result is ``{"ok": False, "error": ...}`` or ``{"ok": True, "nodes": [node texts],
    "clusters": [subgraph texts], "edgeLabels": [...], "edges": count}``.
    """
    bundle = install()
    chrome = browser()
    with tempfile.TemporaryDirectory(prefix="mermaid-check-") as tmp:
        page = Path(tmp) / "check.html"
        # "</" inside the JSON would end the script element early
        data = json.dumps(diagrams).replace("</", "<\\/")
        page.write_text(_PAGE.format(script=bundle.as_uri(), diagrams=data))
        done = subprocess.run(
            [
                chrome,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--allow-file-access-from-files",
                f"--user-data-dir={Path(tmp) / 'profile'}",
                "--virtual-time-budget=60000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    start = done.stdout.find('<pre id="out">')
    end = done.stdout.find("</pre>", start)
    if start < 0 or end < 0:
        raise RuntimeError(f"Chromium did not render the page:\n{done.stderr[-2000:]}")
    text = html.unescape(done.stdout[start + len('<pre id="out">') : end])
    if text == "pending":
        raise RuntimeError(f"mermaid did not finish in the page:\n{done.stderr[-2000:]}")
    results: list[dict[str, object]] = json.loads(text)
    return results


if __name__ == "__main__":
    try:
        print(f"mermaid for the drawing tests in {install()}; browser {browser()}")
    except (ToolMissing, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
