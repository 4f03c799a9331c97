"""Public names, the demo, and snapshots in Jupyter."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

import graphagent

MODULES = [
    "graphagent",
    "graphagent.graph",
    "graphagent.errors",
    "graphagent.messages",
    "graphagent.mcp",
    "graphagent.observability",
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


def test_version() -> None:
    """The package has a version."""
    assert graphagent.__version__


def test_demo_runs_and_resumes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """The README demo builds an agent, calls it, resumes the thread and draws it."""
    from graphagent import demo

    for var in ("REDIS_URL", "GRAPHAGENT_MODEL", "GRAPHAGENT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GRAPHAGENT_DB", str(tmp_path / "demo.sqlite"))
    assert demo.main() == 0
    out = capsys.readouterr().out
    assert "the scripted test model" in out
    assert "from an earlier run" not in out
    assert "The weather in Paris is sunny, 21 C." in out
    assert 'you asked: ["What\'s the weather in Paris?"]' in out
    assert "holds 6 messages after 3 model calls" in out
    assert "flowchart TD" in out and "[tools: get_weather" in out


def test_running_the_demo_twice_continues_the_conversation(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """The demo keeps its thread in a SQLite file: a second run continues it and says so."""
    from graphagent import demo

    for var in ("REDIS_URL", "GRAPHAGENT_MODEL", "GRAPHAGENT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # the default file, .graphagent/demo.sqlite, lands here
    assert demo.main() == 0
    first = capsys.readouterr().out
    assert "the SQLite file .graphagent/demo.sqlite" in first
    assert (tmp_path / ".graphagent" / "demo.sqlite").is_file()
    assert demo.main() == 0
    second = capsys.readouterr().out
    assert "holds 6 messages from an earlier run: this run continues that conversation" in second
    assert "holds 12 messages after 6 model calls" in second


def _agent_after_one_lookup(question: str) -> Any:
    """An agent (MemorySaver) that looked something up once on thread "h"."""
    from checkpoint import MemorySaver
    from graphagent.agent import ReactAgent
    from graphagent.messages import AssistantMessage, ToolCall
    from graphagent.models import FakeChatModel

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
    agent.call(question, thread_id="h")
    return agent


def test_state_snapshot_renders_as_html() -> None:
    """A snapshot shows the conversation (tool calls and results) and the step, not the
    agent's private bookkeeping."""
    agent = _agent_after_one_lookup("find <it>")
    page = agent.get_state(thread_id="h")._repr_html_()
    assert "find &lt;it&gt;" in page and "&lt;found&gt;" in page
    assert "lookup({&quot;q&quot;: &quot;x&quot;})" in page
    assert "__agent" not in page and "AgentRecord" not in page  # private bookkeeping
    assert "next: <code>nothing (finished)</code>" in page


def test_history_is_a_list_and_a_timeline() -> None:
    """History stays a list, says which node wrote each checkpoint, and renders as a table."""
    from graphagent.graph import StateHistory

    history = _agent_after_one_lookup("hi").get_state_history(thread_id="h")
    assert isinstance(history, StateHistory) and isinstance(history, list)
    assert [s.metadata.get("nodes") for s in history] == [["model"], ["tools"], ["model"], None]
    page = history._repr_html_()
    assert page.count("<tr>") == 1 + len(history)
    assert "4 checkpoints" in page and "(input)" in page
    for snap in history:
        assert str(snap.checkpoint_id) in page
