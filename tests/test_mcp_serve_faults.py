"""Our MCP server under faults: what it logs, how a pause is answered, how it stops
(issue 30 items 3 and 11, issue 23 item 12), over stdio and streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from _mcp_helpers import free_port, listening, no_leftover_processes, serve_http, wait_until
from _mcp_served import served
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from graphagent.mcp import build_server, http_app
from graphagent.observability import capture_content

__all__ = ["no_leftover_processes"]  # fixture, used by name

SECRET = "acct 99-1234 belongs to Ann"
TESTS = Path(__file__).parent
# the child runs this checkout's graphagent, not the one the shared env installed
PYTHONPATH = os.pathsep.join([str(TESTS), str(TESTS.parent)])
SERVE = [sys.executable, "-m", "graphagent", "mcp", "serve", "_mcp_served:served"]


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.fixture
def our_url() -> Iterator[str]:
    """Our server over streamable HTTP on a free port, in this process (its logs too)."""
    with serve_http(http_app(served, name="ours")) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    """The SDK's client over streamable HTTP."""
    async with (
        streamable_http_client(url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def memory_session() -> AsyncIterator[ClientSession]:
    """The SDK's client on our server through in-memory streams (the stdio code path)."""
    async with create_connected_server_and_client_session(build_server(served)) as session:
        yield session


async def test_http_failed_tool_text_is_not_logged(
    our_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP: a served tool's exception text reaches the caller, never the INFO log."""
    caplog.set_level(logging.DEBUG, logger="graphagent")
    async with http_session(our_url) as session:
        failed = await session.call_tool("explode", {"reason": SECRET})
    assert failed.isError and SECRET in _text(failed)
    logged = [r.getMessage() for r in caplog.records if r.name == "graphagent.mcp"]
    assert any("RuntimeError" in m for m in logged), logged
    assert SECRET not in caplog.text


async def test_stdio_failed_tool_text_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    """stdio's server loop: the same rule (the type is logged, the text is not)."""
    caplog.set_level(logging.DEBUG, logger="graphagent")
    async with memory_session() as session:
        failed = await session.call_tool("explode", {"reason": SECRET})
    assert failed.isError
    assert "RuntimeError" in caplog.text
    assert SECRET not in caplog.text


async def test_failed_tool_text_is_logged_with_content_capture(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """capture_content(True), the user's opt-in for message text, logs the text too."""
    caplog.set_level(logging.INFO, logger="graphagent")
    capture_content(True)
    try:
        async with memory_session() as session:
            await session.call_tool("explode", {"reason": SECRET})
    finally:
        capture_content(False)
    assert SECRET in caplog.text


# -- answering a pause in words (issue 23 item 12) -------------------------------------------


async def _paused(session: ClientSession) -> str:
    paused = await session.call_tool("ask_mailer", {"message": "mail the CEO"})
    assert paused.structuredContent is not None
    assert "approve | reject <reason>" in paused.structuredContent["how_to_resume"]
    return str(paused.structuredContent["thread_id"])


@pytest.mark.parametrize(
    ("words", "answer"),
    [
        ("approve", "done: sent to ceo@example.com"),
        ("Approve", "done: sent to ceo@example.com"),
        ('edit {"to": "bob@example.com"}', "done: sent to bob@example.com"),
        ("reject not the CEO again", "not the CEO again"),
        ('[{"type": "approve"}]', "done: sent to ceo@example.com"),
    ],
)
async def test_http_resume_takes_the_words_chat_takes(
    our_url: str, words: str, answer: str
) -> None:
    """HTTP: approve, reject <reason>, edit <json> or JSON resume ask_<agent>'s pause."""
    async with http_session(our_url) as session:
        thread = await _paused(session)
        done = await session.call_tool("ask_mailer", {"message": words, "thread_id": thread})
        assert done.structuredContent is not None, _text(done)
        assert done.structuredContent["status"] == "answered"
        assert answer in done.structuredContent["answer"]


async def test_http_words_that_answer_nothing_keep_the_thread_waiting(our_url: str) -> None:
    """HTTP: 'maybe' is an error naming the words to use; the thread still waits."""
    async with http_session(our_url) as session:
        thread = await _paused(session)
        vague = await session.call_tool("ask_mailer", {"message": "maybe", "thread_id": thread})
        assert vague.isError
        assert "approve | reject <reason> | edit <json arguments> | JSON" in _text(vague)
        assert "Python" not in _text(vague) and "Command(" not in _text(vague)
        done = await session.call_tool("ask_mailer", {"message": "yes", "thread_id": thread})
        assert done.structuredContent is not None
        assert done.structuredContent["answer"] == "done: sent to ceo@example.com"


async def test_stdio_resume_with_approve() -> None:
    """stdio (a real `graphagent mcp serve` child): 'approve' resumes the pause."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graphagent", "mcp", "serve", "_mcp_served:mailer"],
        cwd=str(TESTS),
        env={"PYTHONPATH": PYTHONPATH},
    )
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            thread = await _paused(session)
            done = await session.call_tool(
                "ask_mailer", {"message": "approve", "thread_id": thread}
            )
            assert done.structuredContent is not None
            assert done.structuredContent["answer"] == "done: sent to ceo@example.com"


# -- stopping: the client goes away, Ctrl-C (issue 30 item 11, issue 23 item 12) ----------


class StdioServer:
    """`graphagent mcp serve _mcp_served_slow:served` as a child, spoken to by hand."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graphagent", "mcp", "serve", "_mcp_served_slow:served"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=TESTS,
            env={**os.environ, "PYTHONPATH": PYTHONPATH},
        )
        self.said: list[str] = []
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        self.send(
            "initialize",
            1,
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        assert self.process.stdout is not None
        assert b'"id":1' in self.process.stdout.readline()
        self.send("notifications/initialized")

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.said.append(line.decode(errors="replace"))

    def send(self, method: str, ident: int | None = None, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if ident is not None:
            message["id"] = ident
        if params is not None:
            message["params"] = params
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def call(self, tool: str, seconds: float) -> None:
        """Start a call and wait until the tool says it runs."""
        self.send("tools/call", 2, {"name": tool, "arguments": {"seconds": seconds}})
        assert wait_until(lambda: f"{tool} started\n" in self.said), self.said

    def exited_within(self, seconds: float) -> int | None:
        """The exit code, or None if still running after ``seconds`` (then it is killed)."""
        try:
            return self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None
        finally:
            self._reader.join(5)
            for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()


@pytest.mark.parametrize("tool", ["nap", "snooze"])
def test_stdio_server_exits_when_stdin_closes_mid_call(tool: str) -> None:
    """stdio: the client closes stdin while a tool runs (async, or sync in a thread):
    the server cancels it and exits at once instead of finishing the 60 s call."""
    server = StdioServer()
    server.call(tool, 60)
    assert server.process.stdin is not None
    server.process.stdin.close()
    assert server.exited_within(15) == 0, server.said
    assert f"{tool} finished\n" not in server.said
    if tool == "nap":
        assert "nap cancelled\n" in server.said


def test_stdio_server_exits_on_sigint_when_idle() -> None:
    """stdio: Ctrl-C (SIGINT) with stdin still open ends the server: exit 130, no traceback."""
    server = StdioServer()
    server.process.send_signal(signal.SIGINT)
    assert server.exited_within(15) == 130, server.said
    assert not any("Traceback" in line for line in server.said), server.said


@pytest.mark.parametrize("tool", ["nap", "snooze"])
def test_stdio_server_exits_on_sigint_mid_call(tool: str) -> None:
    """stdio: Ctrl-C while a tool runs cancels it and exits 130 at once."""
    server = StdioServer()
    server.call(tool, 60)
    server.process.send_signal(signal.SIGINT)
    assert server.exited_within(15) == 130, server.said
    assert f"{tool} finished\n" not in server.said
    assert not any("Traceback" in line for line in server.said), server.said


async def test_http_client_disconnects_print_no_traceback() -> None:
    """`mcp serve --http`: clients that come, call and leave leave nothing on stderr."""
    port = free_port()
    process = subprocess.Popen(
        [*SERVE, "--http", f"127.0.0.1:{port}"],
        cwd=TESTS,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )
    try:
        assert wait_until(lambda: listening(port))
        for _ in range(3):
            async with http_session(f"http://127.0.0.1:{port}/mcp") as session:
                assert _text(await session.call_tool("add", {"a": 1, "b": 2})) == "3"
        await anyio.sleep(1)  # the server notices the sessions closing
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    text = err.decode(errors="replace")
    assert "Traceback" not in text and "SSE writer" not in text, text


def test_the_quieting_filter_keeps_other_sdk_errors() -> None:
    """Only a closed or broken stream (a client gone) is dropped; other errors still log."""
    from graphagent.mcp._server import _QUIET

    def record(error: BaseException) -> logging.LogRecord:
        try:
            raise error
        except BaseException:
            return logging.LogRecord(
                "mcp.server.streamable_http", logging.ERROR, "f", 1, "x", None, sys.exc_info()
            )

    assert not _QUIET.filter(record(anyio.ClosedResourceError()))
    assert not _QUIET.filter(record(anyio.BrokenResourceError()))
    assert _QUIET.filter(record(ValueError("a real bug")))
