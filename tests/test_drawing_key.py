"""The key under a drawing: what an edge label means when the picture cannot say (the
ReAct graph's ``model -.-> model (again)`` edge)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.graph import END, START, StateGraph
from graphagent.models import FakeChatModel
from graphagent.tools import tool

SVG = "{http://www.w3.org/2000/svg}"


@tool
def ping(host: str) -> str:
    """Ping a host."""
    return "pong"


def _texts(svg: str, kind: str) -> list[str]:
    root = ET.fromstring(svg)
    return [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == kind]


def test_every_agent_drawing_explains_its_again_edge() -> None:
    """With or without tools, an agent's SVG carries a key line for 'again', and its ASCII
    drawing ends with it."""
    for tools in ([], [ping]):
        agent = ReactAgent(name="a", model=FakeChatModel(["hi"]), tools=tools)
        key = " ".join(_texts(agent.draw("svg"), "key"))
        assert key.startswith("again: the model is asked again after feedback")
        assert "rejected tool call" in key and "output_type" in key
        assert agent.draw("ascii").splitlines()[-1].startswith("again: the model is asked")


def test_the_key_does_not_hide_the_run_legend() -> None:
    """On a thread's drawing the run legend comes first and the key follows, each on its own
    line, and the drawing grows to hold them."""
    agent = ReactAgent(name="a", model=FakeChatModel(["hi"]), saver=MemorySaver())
    agent.call("hello", thread_id="t")
    svg = agent.draw(thread_id="t")
    (legend,) = _texts(svg, "legend")
    assert legend.startswith("thread 't'") and _texts(svg, "key")
    plain = ET.fromstring(agent.draw("svg"))
    run = ET.fromstring(svg)
    assert float(run.get("height", 0)) > float(plain.get("height", 0))


def test_a_graph_without_notes_has_no_key_even_with_an_again_label() -> None:
    """A user's own loop labelled 'again' is not explained with the agent's words."""
    g = StateGraph().add_node("write", lambda s: {}).add_node("check", lambda s: {})
    g.add_edge(START, "write").add_edge("write", "check")
    g.add_conditional_edges("check", lambda s: "done", {"again": "write", "done": END})
    app = g.compile(name="loop")
    assert _texts(app.draw("svg"), "key") == []
    assert "asked again" not in app.draw("ascii")


def test_notes_for_labels_not_drawn_are_left_out() -> None:
    """A note whose label no edge carries adds no key line."""
    g = StateGraph().add_node("a", lambda s: {})
    g.add_edge(START, "a").add_edge("a", END)
    app = g.compile(edge_notes={"again": "never drawn here"})
    assert _texts(app.draw("svg"), "key") == []
