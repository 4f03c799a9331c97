"""Drawing graphs offline: Mermaid, DOT, ASCII and a laid-out standalone SVG."""

from __future__ import annotations

import copy
import itertools
import operator
import pickle
import re
import xml.etree.ElementTree as ET
from typing import Annotated, Any, Literal, TypedDict

import pytest

from graphagent.agent import ReactAgent
from graphagent.errors import UserError
from graphagent.graph import END, START, CompiledGraph, StateGraph
from graphagent.models import FakeChatModel

SVG = "{http://www.w3.org/2000/svg}"


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def _noop(state: S) -> dict[str, Any]:
    return {}


def loop_graph() -> CompiledGraph:
    g = StateGraph().add_node("plan", lambda s: None).add_node("act", lambda s: None)
    g.add_edge(START, "plan").add_edge("plan", "act")
    g.add_conditional_edges("act", lambda s: END, {"again": "plan", "done": END})
    return g.compile(name="looper")


def editorial() -> CompiledGraph:
    """Thirteen nodes: branches, a fan-out and join, two loops and a subgraph with a loop."""
    sub = StateGraph(S)
    for name in ("plan", "act", "check"):
        sub.add_node(name, _noop)
    sub.add_edge(START, "plan").add_edge("plan", "act").add_edge("act", "check")
    sub.add_conditional_edges("check", lambda s: "done", {"retry": "plan", "done": END})
    b = StateGraph(S)
    names = "intake classify research draft review revise split fan_a fan_b merge publish notify"
    for name in names.split():
        b.add_node(name, _noop)
    b.add_node("worker", sub.compile(name="worker"))
    b.add_edge(START, "intake").add_edge("intake", "classify")
    routes = {"research": "research", "simple": "draft", "job": "worker"}
    b.add_conditional_edges("classify", lambda s: "simple", routes)
    b.add_edge("research", "draft").add_edge("worker", "draft").add_edge("draft", "review")
    b.add_conditional_edges("review", lambda s: "ok", {"ok": "split", "changes": "revise"})
    b.add_edge("revise", "review").add_edge("split", "fan_a").add_edge("split", "fan_b")
    b.add_edge(["fan_a", "fan_b"], "merge").add_edge("merge", "publish")
    b.add_conditional_edges("publish", lambda s: "done", {"again": "intake", "done": "notify"})
    b.add_edge("notify", END)
    return b.compile(name="editorial")


def test_mermaid_dot_ascii() -> None:
    """Text formats show every node and mark conditional edges."""
    app = loop_graph()
    mermaid = app.draw("mermaid")
    assert "flowchart TD" in mermaid and 'title: "looper"' in mermaid
    assert 'n_act -.->|"again"| n_plan' in mermaid
    dot = app.draw("dot")
    assert '"n_act" -> "n_plan" [style=dashed, label="again"]' in dot
    ascii_art = app.draw("ascii")
    assert "[plan]" in ascii_art and "act -.-> END  (done)" in ascii_art
    with pytest.raises(UserError, match="unknown drawing format"):
        app.draw("png")


def test_subgraphs_are_nested_blocks_in_mermaid_dot_and_ascii() -> None:
    """A subgraph node holds its own nodes; parent edges attach to the block."""
    app = editorial()
    mermaid = app.draw("mermaid")
    block = mermaid[mermaid.index('subgraph n_worker["worker"]') : mermaid.index("style n_worker")]
    assert 'n_worker__n_plan("plan")' in block
    assert 'n_worker__n_check -.->|"retry"| n_worker__n_plan' in block
    assert block.rstrip().endswith("end")
    assert 'n_classify -.->|"job"| n_worker' in mermaid and "n_worker --> n_draft" in mermaid
    dot = app.draw("dot")
    assert 'subgraph "cluster_n_worker" {' in dot
    assert '"n_classify" -> "n_worker__ga_start" [lhead="cluster_n_worker", style=dashed' in dot
    assert '"n_worker__ga_end" -> "n_draft" [ltail="cluster_n_worker"]' in dot
    assert "subgraph 'worker':" in app.draw("ascii")


def test_agent_nodes_are_styled_by_kind() -> None:
    """Hook, model and tool nodes get their own class in Mermaid and colour in SVG."""

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    from graphagent.agent import ModelCallLimitHook

    agent = ReactAgent(
        name="w",
        model=FakeChatModel(["hi"]),
        tools=[get_weather],
        hooks=[ModelCallLimitHook(run_limit=2)],
    )
    mermaid = agent.graph.draw("mermaid")
    assert 'n_model("model"):::ga_model' in mermaid
    assert 'n_tools("tools<br><small>get_weather</small>"):::ga_tools' in mermaid
    hook = 'n_model_call_limit_hook("model_call_limit_hook<br><small>hook</small>"):::ga_hook'
    assert hook in mermaid
    root = ET.fromstring(agent.graph.draw("svg"))
    kinds = {g.get("class") for g in root.iter(f"{SVG}g")}
    assert {"node model", "node tools", "node hook", "node start", "node end"} <= kinds


def _boxes(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """Node and subgraph boxes by label: (left, top, right, bottom)."""
    root = ET.fromstring(svg)
    out: dict[str, tuple[float, float, float, float]] = {}
    for i, g in enumerate(root.iter(f"{SVG}g")):
        rect = g.find(f"{SVG}rect")
        text = g.find(f"{SVG}text")
        assert rect is not None and text is not None
        x, y = float(rect.get("x", 0)), float(rect.get("y", 0))
        w, h = float(rect.get("width", 0)), float(rect.get("height", 0))
        out[f"{text.text}#{i}" if text.text in ("START", "END") else str(text.text)] = (
            x,
            y,
            x + w,
            y + h,
        )
    return out


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return b[0] <= a[0] and a[2] <= b[2] and b[1] <= a[1] and a[3] <= b[3]


def test_svg_layout_of_a_thirteen_node_graph_keeps_boxes_apart() -> None:
    """No two boxes overlap, the subgraph's nodes sit inside its block, all in the canvas."""
    svg = editorial().draw("svg")
    root = ET.fromstring(svg)
    width, height = float(root.get("width", 0)), float(root.get("height", 0))
    boxes = _boxes(svg)
    inner = {"plan", "act", "check"}
    assert len(boxes) == 2 + 12 + 1 + 2 + 3
    block = boxes["worker"]
    for name, box in boxes.items():
        assert box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height, name
        if name in inner:
            assert _inside(box, block), name
    inner_ends = [
        n for n, b in boxes.items() if n.startswith(("START#", "END#")) and _inside(b, block)
    ]
    assert len(inner_ends) == 2
    names = sorted(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if "worker" in (a, b) and ({a, b} - {"worker"}) <= inner | set(inner_ends):
                continue
            assert not _overlap(boxes[a], boxes[b]), (a, b)
    # the flow reads top-down: each forward step starts lower than the box before it
    for upper, lower in [("intake", "classify"), ("draft", "review"), ("merge", "publish")]:
        assert boxes[upper][3] < boxes[lower][1]


def test_svg_edges_stay_out_of_other_boxes() -> None:
    """Straight runs of every edge pass beside the boxes they do not connect."""
    app = editorial()
    svg = app.draw("svg")
    boxes = _boxes(svg)
    root = ET.fromstring(svg)
    for path in root.iter(f"{SVG}path"):
        if path.get("class") != "edge":
            continue
        title = path.find(f"{SVG}title")
        assert title is not None and title.text
        ends = set(title.text.split(" → "))
        numbers = [float(n) for n in re.findall(r"-?\d+\.\d+", path.get("d", ""))]
        runs = re.findall(r"L (-?\d+\.\d+) (-?\d+\.\d+)", path.get("d", ""))
        assert numbers
        for x, y in runs:
            px, py = float(x), float(y)
            for name, (left, top, right, bottom) in boxes.items():
                if name in ends or name == "worker" or name.split("#")[0] in ends:
                    continue
                assert not (left + 1 < px < right - 1 and top + 1 < py < bottom - 1), (
                    title.text,
                    name,
                )


def test_svg_is_standalone_and_jupyter_bundle() -> None:
    """SVG parses as XML with one box per node; Jupyter gets SVG and text, never Mermaid.

    JupyterLab ranks text/vnd.mermaid above SVG, so offering it made Mermaid what users saw.
    """
    app = loop_graph()
    svg = app.draw("svg")
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    for label in ("START", "plan", "act", "END"):
        assert label in texts
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")
    bundle = app._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "text/html", "text/plain"}
    agent = ReactAgent(name="w", model=FakeChatModel(["hi"]))
    assert set(agent._repr_mimebundle_()) == {"image/svg+xml", "text/html", "text/plain"}


def test_odd_node_names_are_escaped() -> None:
    """Names with markup or quotes stay text in every format."""
    g = StateGraph().add_node('say "<hi>" & go', lambda s: None)
    g.add_edge(START, 'say "<hi>" & go').add_edge('say "<hi>" & go', END)
    app = g.compile(name="<odd>")
    ET.fromstring(app.draw("svg"))
    assert "&lt;hi&gt;" in app.draw("mermaid")
    assert '\\"<hi>\\"' in app.draw("dot")


KEYWORDS = [
    "end",
    "style",
    "graph",
    "class",
    "subgraph",
    "click",
    "call",
    "href",
    "flowchart",
    "linkStyle",
    "classDef",
    "direction",
    "default",
    "o",
    "x",
]
CLEANED_ALIKE = ["a-b", "a b", "a.b", "a_b"]


def keyword_graph() -> CompiledGraph:
    """A chain through nodes named like Mermaid keywords and names that clean alike."""
    names = [*KEYWORDS, *CLEANED_ALIKE, 'say "<hi>" & go #1; `x`', "two\nlines"]
    g = StateGraph()
    for name in names:
        g.add_node(name, _noop)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_conditional_edges(names[-1], lambda s: END, {'done "#1" | ok': END, "again": "end"})
    return g.compile(name='odd: "names"')


def test_mermaid_output_is_accepted_and_drawn_by_mermaid_itself() -> None:
    """mermaid's own parser, in headless Chromium, draws every node of every graph once.

    Keywords as node names, names that clean to the same id, markup, quotes, '#', a
    subgraph named "end", an agent, and routers drawn as "any node" all render, with the
    names as the labels.
    """
    from _mermaid import render

    inner = StateGraph().add_node("end", _noop).add_node("class", _noop)
    inner.add_edge(START, "end").add_edge("end", "class").add_edge("class", END)
    outer = StateGraph().add_node("style", _noop).add_node("subgraph", inner.compile(name="i"))
    outer.add_edge(START, "style").add_edge("style", "subgraph").add_edge("subgraph", END)

    def get_weather(city: str) -> str:
        """The weather."""
        return "sunny"

    agent = ReactAgent(name="a", model=FakeChatModel(["hi"]), tools=[get_weather])
    graphs = [keyword_graph(), editorial(), outer.compile(name="nest"), agent.graph, routers()]
    results = render([app.draw("mermaid") for app in graphs])
    for app, result in zip(graphs, results, strict=True):
        assert result["ok"], (app.name, result)
    odd = results[0]
    # a line break is a <br>: no character in the label's text
    names = [*KEYWORDS, *CLEANED_ALIKE, 'say "<hi>" & go #1; `x`', "twolines"]
    assert sorted(odd["nodes"]) == sorted(["START", "END", *names])  # type: ignore[arg-type]
    assert odd["edges"] == len(names) + 2 and 'done "#1" | ok' in odd["edgeLabels"]  # type: ignore[operator]
    assert sorted(results[2]["clusters"]) == ["subgraph"]  # type: ignore[arg-type]
    assert {"end", "class", "style"} <= set(results[2]["nodes"])  # type: ignore[arg-type]
    assert "toolsget_weather" in results[3]["nodes"]  # type: ignore[operator]
    assert {"tool calls", "answer"} <= set(results[3]["edgeLabels"])  # type: ignore[arg-type]
    assert "any node" in results[4]["nodes"]  # type: ignore[operator]


def test_dot_ids_are_quoted_unique_and_never_the_bare_name() -> None:
    """Names that clean alike stay distinct DOT nodes; each name is only a label."""
    dot = keyword_graph().draw("dot")
    ids = re.findall(r'^\s*"([^"]+)" \[label=', dot, flags=re.M)
    labels = re.findall(r'\[label="((?:[^"\\]|\\.)*)"', dot)
    assert len(ids) == len(set(ids)) == len(KEYWORDS) + len(CLEANED_ALIKE) + 4
    assert all(re.fullmatch(r"(n|ga)_\w+", i) for i in ids)
    assert {"a-b", "a b", "a.b", "a_b", "two\\nlines"} <= set(labels)


def routers() -> CompiledGraph:
    """One router with a -> Literal[...] return type and one with no annotation."""

    def literal(state: Any) -> Literal["left", "right"]:
        return "left"

    def anything(state):  # type: ignore[no-untyped-def]
        return END

    g = StateGraph().add_node("pick", _noop).add_node("left", _noop).add_node("right", _noop)
    g.add_edge(START, "pick").add_conditional_edges("pick", literal)
    g.add_conditional_edges("left", anything).add_edge("right", END)
    return g.compile(name="routers")


def test_routers_draw_their_targets_or_any_node() -> None:
    """A Literal router's targets are its dashed edges; an unannotated router with no path
    map has one dashed edge to an "any node" pill, in every format."""
    app = routers()
    svg = app.draw("svg")
    root = ET.fromstring(svg)
    titles = [t.text for p in root.iter(f"{SVG}path") for t in p.iter(f"{SVG}title")]
    assert "pick → left" in titles and "pick → right" in titles
    assert [t for t in titles if t and t.startswith("left: a router with no path map")]
    nodes = {g.get("class") for g in root.iter(f"{SVG}g")}
    assert "node any" in nodes
    assert 'n_left -.-> ga_any(["any node"]):::ga_any' not in app.draw("mermaid")
    assert "n_left -.-> ga_any" in app.draw("mermaid")
    assert '"n_left" -> "ga_any" [style=dashed];' in app.draw("dot")
    assert "left -.-> any node  (no path map: may go to any node)" in app.draw("ascii")
    # the public topology is untouched: no pseudo-node in app.graph
    assert len(app.graph.nodes) == 5


def test_svg_has_no_ids_so_hiding_one_drawing_cannot_break_another() -> None:
    """Arrowheads are drawn inline: an SVG <marker> is found by a page-wide id, so a hidden
    first graph took every other graph's arrowheads with it."""
    svg = editorial().draw("svg")
    assert " id=" not in svg and "url(#" not in svg and "<marker" not in svg
    root = ET.fromstring(svg)
    edges = [p for p in root.iter(f"{SVG}path") if p.get("class") == "edge"]
    arrows = [p for p in root.iter(f"{SVG}path") if p.get("class") == "arrow"]
    assert len(edges) == len(arrows) == editorial().graph.number_of_edges() + 5


def test_drawings_show_themselves_in_their_format() -> None:
    """draw() returns a str that Jupyter shows as SVG, as Mermaid only when asked, or text."""
    app = loop_graph()
    svg, mermaid, ascii_art = app.draw(), app.draw("mermaid"), app.draw("ascii")
    assert isinstance(svg, str) and svg.startswith("<svg") and svg == app.draw("svg")
    assert set(svg._repr_mimebundle_()) == {"image/svg+xml", "text/html", "text/plain"}
    assert mermaid._repr_mimebundle_()["text/vnd.mermaid"] == mermaid
    assert ascii_art._repr_mimebundle_() == {"text/plain": ascii_art}
    again = pickle.loads(pickle.dumps(mermaid))
    assert again == mermaid and again.fmt == "mermaid" and copy.copy(svg).fmt == "svg"


def test_missing_node_or_chromium_fails_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Mermaid check never skips: without node or Chromium it says what to install."""
    import _mermaid

    monkeypatch.setattr(_mermaid.shutil, "which", lambda name: None)
    with pytest.raises(_mermaid.ToolMissing, match="apt-get install -y chromium"):
        _mermaid.browser()
    with pytest.raises(_mermaid.ToolMissing, match=r"'node'.*install it"):
        _mermaid.install()
