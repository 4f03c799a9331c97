"""Drawings show in notebooks opened untrusted (JupyterLab renders no ``image/svg+xml`` of a
notebook it did not run and strips inline ``<svg>`` from HTML): every output that carries SVG
also carries an ``<img>`` form, live and in the committed notebooks."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import nbformat
import pytest

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.graph import END, START, StateGraph
from graphagent.models import FakeChatModel

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
_IMG = re.compile(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')
# JupyterLab's renderers by rank (lower wins), and whether each may render untrusted output
_RANKS = [
    ("text/html", True),
    ("text/markdown", True),
    ("text/latex", True),
    ("image/svg+xml", False),
    ("image/png", True),
    ("image/jpeg", True),
    ("application/javascript", False),
    ("text/plain", True),
]


def untrusted_choice(bundle: dict[str, Any]) -> str | None:
    """The mime type JupyterLab shows for ``bundle`` in a notebook it did not run."""
    return next((mime for mime, safe in _RANKS if safe and mime in bundle), None)


def pictures(page: str) -> list[str]:
    """The SVG documents held by ``<img>`` data URIs in ``page``."""
    return [base64.b64decode(data).decode("utf-8") for data in _IMG.findall(page)]


def has_svg(bundle: dict[str, Any]) -> bool:
    """Whether an output bundle carries a drawing (an SVG output, or inline SVG in HTML)."""
    page = "".join(bundle.get("text/html", ""))
    return "image/svg+xml" in bundle or "<svg" in page or "data:image/svg+xml" in page


def _thread() -> Any:
    g = StateGraph().add_node("a", lambda s: {"x": 1}).add_node("b", lambda s: {"y": 2})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=MemorySaver(), interrupt_before=["b"])
    app.invoke({}, {"thread_id": "t"})
    return app


def test_every_svg_bundle_carries_the_same_picture_as_an_img() -> None:
    """A graph, an agent, draw() and draw(thread_id=) offer text/html whose <img> holds
    exactly their SVG, which an untrusted JupyterLab picks; the SVG stays for live use."""
    app = _thread()
    agent = ReactAgent(name="w", model=FakeChatModel(["hi"]))
    for bundle in (
        app._repr_mimebundle_(),
        agent._repr_mimebundle_(),
        app.draw("svg")._repr_mimebundle_(),
        app.draw(thread_id="t")._repr_mimebundle_(),
    ):
        assert untrusted_choice(bundle) == "text/html"
        assert "<svg" not in bundle["text/html"]
        assert pictures(bundle["text/html"]) == [bundle["image/svg+xml"]]
        ET.fromstring(pictures(bundle["text/html"])[0])  # a whole SVG document


def test_the_state_card_draws_its_run_as_an_img() -> None:
    """The state card holds the run drawn over its graph as an <img> (no inline <svg>, whose
    labels an untrusted front end shows as loose text)."""
    app = _thread()
    page = app.get_state({"thread_id": "t"})._repr_html_()
    assert "<svg" not in page
    assert pictures(page) == [app.draw(thread_id="t")]


def test_the_check_sees_svg_without_an_img() -> None:
    """The notebook check below fails on an SVG-only output and on inline <svg> in HTML."""
    assert untrusted_choice({"image/svg+xml": "<svg/>", "text/plain": "x"}) == "text/plain"
    assert has_svg({"text/html": "<div><svg></svg></div>"})
    assert not pictures("<div><svg></svg></div>")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_drawings_show_untrusted(path: Path) -> None:
    """Every committed output that draws something shows it when the notebook is opened
    without being run: the untrusted choice is HTML with the picture as an <img>, and no
    inline <svg> left to become loose text."""
    notebook = nbformat.read(path, as_version=4)
    bundles = [
        dict(output.get("data", {}))
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    ]
    drawn = [b for b in bundles if has_svg(b)]
    for bundle in drawn:
        page = "".join(bundle.get("text/html", ""))
        assert untrusted_choice(bundle) == "text/html", f"{path.name}: {sorted(bundle)}"
        assert "<svg" not in page, f"{path.name}: inline <svg> in an HTML output"
        assert pictures(page), f"{path.name}: an SVG output without its <img> form"
        for picture in pictures(page):
            ET.fromstring(picture)
    if path.name in ("graphs.ipynb", "quickstart.ipynb"):
        assert len(drawn) >= 2
