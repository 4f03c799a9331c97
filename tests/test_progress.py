"""Live progress: which node and tool run, and for how long, updated in place (Jupyter,
a terminal status line, plain lines), with the run's outcome at the end."""

from __future__ import annotations

import io
import textwrap
import time
from typing import Any

import nbformat
from nbclient import NotebookClient

from checkpoint import MemorySaver
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.errors import ModelHTTPError
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel, FunctionChatModel
from graphagent.observability import listening, progress
from graphagent.observability._progress import Tracker
from graphagent.tools import tool


@tool
def slow_search(query: str) -> str:
    """Search, slowly.

    Args:
        query: what to look for.
    """
    time.sleep(0.4)
    return f"found {query}"


def researcher(**kw: Any) -> ReactAgent:
    calls = [
        ToolCall(id="c1", name="slow_search", arguments='{"query": "a"}'),
        ToolCall(id="c2", name="slow_search", arguments='{"query": "b"}'),
    ]
    usage = {"usage": {"prompt_tokens": 100, "completion_tokens": 20}}
    model = FakeChatModel([AssistantMessage(tool_calls=calls, metadata=usage), "All found."])
    return ReactAgent(name="researcher", model=model, tools=[slow_search], **kw)


class Tty(io.StringIO):
    """A terminal, as far as the status line can tell."""

    def isatty(self) -> bool:
        return True


def test_the_tracker_sees_nodes_tools_and_the_outcome() -> None:
    """While the tools run, the line names them with their own times; the end line
    counts model calls, tool calls and tokens."""
    seen: list[str] = []
    tracker = Tracker()
    tracker.on_change = lambda: seen.append(tracker.line())
    with listening(tracker):
        assert researcher().call("go").text == "All found."
    assert any(line.startswith("⏳ researcher · node model") for line in seen)
    running = [line for line in seen if "running slow_search" in line]
    assert running and any(line.count("slow_search (") == 2 for line in running)
    assert tracker.line().startswith("✓ researcher finished in ")
    assert tracker.line().endswith("2 model calls · 2 tool calls · 120 tokens")


def test_a_terminal_gets_one_status_line_rewritten_in_place() -> None:
    """On a TTY the status is redrawn with a carriage return (elapsed time ticking while a
    tool runs), then replaced by the summary on a line of its own."""
    tty = Tty()
    with progress(stream=tty, interval=0.05):
        researcher().call("go")
    text = tty.getvalue()
    frames = text.split("\r\x1b[2K")
    assert "\n" not in "".join(frames[:-1])  # every frame overwrote the one before
    assert any(
        "running slow_search (0.2 s)" in f or "running slow_search (0.3 s)" in f for f in frames
    )
    assert frames[-1].startswith("✓ researcher finished in") and frames[-1].endswith("\n")


def test_not_a_terminal_gets_a_line_per_change() -> None:
    """Logs and pipes get a line when the node or tool changes, no carriage returns."""
    out = io.StringIO()
    with progress(stream=out, interval=0.05):
        researcher().call("go")
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "… researcher · node model"
    assert any(line.startswith("… researcher · running slow_search") for line in lines)
    assert lines[-1].startswith("✓ researcher finished")


def test_call_with_progress_shows_on_stderr(capsys: Any) -> None:
    """agent.call(..., progress=True) outside Jupyter reports on stderr, answer unchanged."""
    assert researcher().call("go", progress=True).text == "All found."
    err = capsys.readouterr().err
    assert "running slow_search" in err and "✓ researcher finished" in err


async def test_acall_with_progress(capsys: Any) -> None:
    """The async run is tracked the same way (tools as asyncio tasks)."""
    assert (await researcher().acall("go", progress=True)).text == "All found."
    err = capsys.readouterr().err
    assert "running slow_search" in err and "✓ researcher finished" in err


def test_a_pause_and_a_failure_say_so() -> None:
    """A human-in-the-loop pause ends as 'waiting for a human'; a failing model as
    'failed after ...: ModelHTTPError'."""
    call = ToolCall(id="m1", name="slow_search", arguments='{"query": "x"}')
    careful = ReactAgent(
        name="careful",
        model=FakeChatModel([AssistantMessage(tool_calls=[call])]),
        tools=[slow_search],
        hooks=[HumanInTheLoopHook(approval_on={"slow_search": "costly"})],
        saver=MemorySaver(),
    )
    out = io.StringIO()
    with progress(stream=out):
        careful.call("go", thread_id="p")
    assert out.getvalue().splitlines()[-1].startswith("⏸ careful is waiting for a human")

    def down(messages: Any, tools: Any) -> str:
        raise ModelHTTPError("http://llm answered HTTP 503", status_code=503)

    out = io.StringIO()
    broken = ReactAgent(name="broken", model=FunctionChatModel(down))
    try:
        with progress(stream=out):
            broken.call("go")
    except ModelHTTPError:
        pass
    assert out.getvalue().splitlines()[-1].startswith("✗ broken failed after")
    assert "ModelHTTPError" in out.getvalue()


CELL = """
import time
from IPython.display import DisplayHandle
updates = []
_update = DisplayHandle.update
def recording(self, obj, **kw):
    updates.append(obj._repr_mimebundle_()["text/plain"])
    return _update(self, obj, **kw)
DisplayHandle.update = recording

from graphagent import ReactAgent, tool
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel

@tool
def slow_search(query: str) -> str:
    "Search, slowly."
    time.sleep(0.6)
    return "found"

calls = [ToolCall(id="c1", name="slow_search", arguments='{"query": "a"}')]
agent = ReactAgent(
    name="researcher",
    model=FakeChatModel([AssistantMessage(tool_calls=calls), "All found."]),
    tools=[slow_search],
)
reply = agent.call("go", progress=True)
"""


def test_jupyter_shows_one_output_updated_in_place() -> None:
    """In a real kernel: one display output (HTML and text), updated through its display
    id while the tool runs (the elapsed time moves), ending with the summary."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(textwrap.dedent(CELL)),
        nbformat.v4.new_code_cell("print(len(updates)); print('\\n'.join(updates))"),
    ]
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"]
    shown = outputs[0].data
    assert shown["text/plain"].startswith("✓ researcher finished in")
    assert 'class="graphagent-progress"' in shown["text/html"]
    printed = notebook.cells[1].outputs[0].text.splitlines()
    count, updates = int(printed[0]), printed[1:]
    assert count == len(updates) >= 3
    ticking = [u for u in updates if "running slow_search" in u]
    assert len(set(ticking)) >= 2  # the tool's time moved while it ran
    assert updates[-1].startswith("✓ researcher finished")
