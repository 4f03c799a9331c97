"""Public names, and drawing graphs offline."""

from __future__ import annotations

import importlib
import xml.etree.ElementTree as ET

import pytest

import checkpoint
import graphagent
from graphagent.errors import UserError
from graphagent.graph import END, START, StateGraph

MODULES = [
    "graphagent",
    "graphagent.graph",
    "graphagent.errors",
    "graphagent.messages",
    "checkpoint",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    """Each package's __all__ is sorted, and names every public item it defines."""
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=lambda s: (not s.isupper(), s)) or exported == sorted(
        exported
    )
    for item in exported:
        assert hasattr(module, item), item


def test_checkpoint_never_imports_graphagent() -> None:
    """The checkpoint package stands alone."""
    import pathlib

    root = pathlib.Path(checkpoint.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "import graphagent" not in text and "from graphagent" not in text, path


def loop_graph():  # type: ignore[no-untyped-def]
    g = StateGraph().add_node("plan", lambda s: None).add_node("act", lambda s: None)
    g.add_edge(START, "plan").add_edge("plan", "act")
    g.add_conditional_edges("act", lambda s: END, {"again": "plan", "done": END})
    return g.compile(name="looper")


def test_mermaid_dot_ascii() -> None:
    """Text formats show every node and mark conditional edges."""
    app = loop_graph()
    mermaid = app.draw("mermaid")
    assert "flowchart TD" in mermaid and "-.->|again|" in mermaid and "title: looper" in mermaid
    dot = app.draw("dot")
    assert '"act" -> "plan" [style=dashed, label="again"]' in dot
    ascii_art = app.draw("ascii")
    assert "[plan]" in ascii_art and "act -.-> END  (done)" in ascii_art
    with pytest.raises(UserError, match="unknown drawing format"):
        app.draw("png")


def test_svg_is_standalone_and_jupyter_bundle() -> None:
    """SVG parses as XML with one box per node; Jupyter gets SVG, Mermaid and text."""
    app = loop_graph()
    svg = app.draw("svg")
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    for label in ("START", "plan", "act", "END"):
        assert label in texts
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")
    bundle = app._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "text/vnd.mermaid", "text/plain"}


def test_version() -> None:
    """The package has a version."""
    assert graphagent.__version__


def test_demo_runs_and_resumes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README demo builds an agent, calls it, resumes the thread and draws it."""
    from graphagent import demo

    for var in ("REDIS_URL", "GRAPHAGENT_MODEL", "GRAPHAGENT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert demo.main() == 0
    out = capsys.readouterr().out
    assert "the scripted test model" in out
    assert "The weather in Paris is sunny, 21 C." in out
    assert 'you asked: ["What\'s the weather in Paris?"]' in out
    assert "holds 6 messages after 3 model calls" in out
    assert "flowchart TD" in out and "[tools]" in out


def test_state_snapshot_renders_as_html() -> None:
    """A snapshot shows the conversation (tool calls and results), other keys and the step."""
    from checkpoint import MemorySaver
    from graphagent.agent import ReactAgent
    from graphagent.messages import AssistantMessage, ToolCall
    from graphagent.models import FakeChatModel
    from graphagent.tools import tool

    @tool
    def lookup(q: str) -> str:
        """Look <things> up."""
        return "<found>"

    call = ToolCall(id="1", name="lookup", arguments='{"q": "x"}')
    agent = ReactAgent(
        name="a",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "done"]),
        tools=[lookup],
        saver=MemorySaver(),
    )
    agent.call("find <it>", thread_id="h")
    page = agent.get_state(thread_id="h")._repr_html_()
    assert "find &lt;it&gt;" in page and "&lt;found&gt;" in page
    assert "lookup({&quot;q&quot;: &quot;x&quot;})" in page
    assert "<code>model_calls</code>" in page and "next: <code>nothing (finished)</code>" in page
