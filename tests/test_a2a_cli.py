"""``graphagent a2a serve`` in a process of its own, reached over real HTTP by the SDK's
client and by ``A2aRemoteAgent``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from _a2a_helpers import chunks, final_state, send, user
from _mcp_helpers import free_port, listening, wait_until
from a2a.client import ClientConfig, create_client
from a2a.types import TaskState

from graphagent import cli
from graphagent.a2a import A2aRemoteAgent

ROOT = Path(__file__).parent.parent
AGENTS = """
from graphagent.agent import ReactAgent
from graphagent.models import FunctionChatModel


def count(messages, tools):
    said = [m.text for m in messages if m.role == "user"]
    return f"turn {len(said)}: {said[-1]}"


agent = ReactAgent(name="counter", description="Counts turns.", model=FunctionChatModel(count))
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`graphagent a2a serve agents:agent --port P` running; yields its URL."""
    (tmp_path / "a2a_agents.py").write_text(textwrap.dedent(AGENTS))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "graphagent",
            "a2a",
            "serve",
            "a2a_agents:agent",
            "--port",
            str(port),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{port}"
        first = server.stdout.readline()
        assert first.startswith(f"serving a2a_agents:agent over A2A at {url}"), first
        assert wait_until(lambda: listening(port))
        yield url
    finally:
        server.terminate()
        _, err = server.communicate(timeout=20)
    # uvicorn shuts down gracefully, then re-raises the signal it caught
    assert server.returncode in (0, -15) and "Traceback" not in err, err[-2000:]


async def test_the_sdk_client_talks_to_the_served_agent_over_http(served: str) -> None:
    """The SDK's client reads the card (naming 127.0.0.1:P) and streams an answer."""
    client = await create_client(served, ClientConfig(streaming=True))
    try:
        events = await send(client, user("hello", context_id="c1"))
        again = await send(client, user("more", context_id="c1"))
    finally:
        await client.close()
    assert final_state(events) == TaskState.TASK_STATE_COMPLETED
    assert "".join(chunks(events)) == "turn 1: hello"
    assert "".join(chunks(again)) == "turn 2: more"


def test_a_remote_agent_continues_a_conversation_by_thread(served: str) -> None:
    """A2aRemoteAgent over real HTTP: the name from the card, the thread as contextId."""
    with A2aRemoteAgent(served) as remote:
        assert (remote.name, remote.description) == ("counter", "Counts turns.")
        assert remote.call("one", thread_id="t").text == "turn 1: one"
        assert remote.call("two", thread_id="t").text == "turn 2: two"
        assert remote.call("other", thread_id="u").text == "turn 1: other"


def test_serve_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Serving what is not an agent, or on a busy port: exit 2 with one line."""
    (tmp_path / "a2a_junk.py").write_text("thing = 42\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert cli.main(["a2a", "serve", "a2a_junk:thing"]) == 2
        assert "a2a serves an agent" in capsys.readouterr().err
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("a2a_junk", None)


REMOTE = """
import httpx

from graphagent.a2a import A2aRemoteAgent, a2a_app
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel


def send_email(to: str) -> str:
    "Send an email."
    return f"sent to {to}"


call = ToolCall(id="c1", name="send_email", arguments='{"to": "bob"}')
mailer = ReactAgent(
    name="mailer",
    model=FakeChatModel([AssistantMessage(tool_calls=[call]), "Mailed bob."]),
    tools=[send_email],
    hooks=[HumanInTheLoopHook(approval_on={"send_email": "mail leaves the company"})],
)
app = a2a_app(mailer, "http://mailer.test")
remote = A2aRemoteAgent(
    "http://mailer.test", httpx_client=httpx.AsyncClient(transport=httpx.ASGITransport(app))
)
"""


def test_chat_with_a_remote_agent_answers_its_remote_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`graphagent chat` on an A2aRemoteAgent: the remote approval question is shown as a
    local one, and `-m approve` on the thread finishes the remote task."""
    import io

    name = "a2a_remote_chat"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(REMOTE))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        out = io.StringIO()
        code = cli.main(["chat", f"{name}:remote", "--thread", "h", "-m", "mail bob"], out=out)
        assert code == 3, capsys.readouterr().err
        shown = out.getvalue()
        assert '1. send_email({"to": "bob"})' in shown and "why: mail leaves the company" in shown
        out = io.StringIO()
        code = cli.main(["chat", f"{name}:remote", "--thread", "h", "-m", "approve"], out=out)
        assert code == 0, capsys.readouterr().err
        assert "mailer> Mailed bob." in out.getvalue()
    finally:
        sys.modules[name].remote.close()
        sys.modules.pop(name, None)
