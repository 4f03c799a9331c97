"""Our MCP server, driven by the SDK's client and by the MCP Inspector, over stdio and HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import pytest
from _mcp_helpers import (
    free_port,
    listening,
    no_leftover_processes,
    serve_http,
    servers,
    wait_until,
)
from _mcp_served import served
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from graphagent import cli
from graphagent.errors import ToolDefinitionError, UserError
from graphagent.mcp import McpToolProvider, build_server, http_app
from graphagent.tools import tool

__all__ = ["no_leftover_processes", "servers"]  # fixtures, used by name

TESTS = Path(__file__).parent
SERVED = {"add", "explode", "noisy", "whoami", "ask_helper", "ask_mailer"}
SERVE = [sys.executable, "-m", "graphagent", "mcp", "serve", "_mcp_served:served"]


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@asynccontextmanager
async def stdio_session(errlog: TextIO | None = None) -> AsyncIterator[ClientSession]:
    """The SDK's client, talking to `graphagent mcp serve` started as a child process."""
    # this checkout's graphagent, not the one the shared env's editable install points at
    path = os.pathsep.join([str(TESTS), str(TESTS.parent)])
    params = StdioServerParameters(
        command=SERVE[0], args=SERVE[1:], cwd=str(TESTS), env={"PYTHONPATH": path}
    )
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=errlog or quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@pytest.fixture(scope="module")
def our_url() -> Iterator[str]:
    """Our server's ASGI app over streamable HTTP on a free port, in this process."""
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


async def _checks(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == SERVED
    assert tools["add"].inputSchema["required"] == ["a", "b"]
    assert tools["add"].inputSchema["properties"]["a"]["description"] == "the first number."
    assert _text(await session.call_tool("add", {"a": 2, "b": 3})) == "5"
    failed = await session.call_tool("explode", {"reason": "no fuel"})
    assert failed.isError and "no fuel" in _text(failed)
    invalid = await session.call_tool("add", {"a": "two"})
    assert invalid.isError


async def test_sdk_client_over_stdio() -> None:
    """`graphagent mcp serve` over stdio: tools with their schemas, results, errors."""
    async with stdio_session() as session:
        await _checks(session)


async def test_printing_tools_do_not_break_stdio(tmp_path: Path) -> None:
    """A served tool that prints: its output goes to stderr, never into the protocol."""
    with (tmp_path / "stderr").open("w+") as errlog:
        async with stdio_session(errlog) as session:
            said = await session.call_tool("noisy", {"text": "still fine"})
            assert _text(said) == "still fine"
        errlog.seek(0)
        assert "debugging output: still fine" in errlog.read()


async def test_sdk_client_over_http(our_url: str) -> None:
    """http_app over streamable HTTP: the same answers."""
    async with http_session(our_url) as session:
        await _checks(session)


async def test_served_tools_see_only_the_requests_meta(our_url: str) -> None:
    """A served tool's ToolContext holds the request's _meta (and nothing else)."""
    async with http_session(our_url) as session:
        assert _text(await session.call_tool("whoami", {})) == "nobody"
        asked = await session.call_tool("whoami", {}, meta={"user": "ann"})
        assert _text(asked) == "ann"


async def test_agent_keeps_the_conversation_by_thread_id(our_url: str) -> None:
    """ask_<agent>: the answer carries a thread id; passing it back continues the talk."""
    async with http_session(our_url) as session:
        first = await session.call_tool("ask_helper", {"message": "my name is Ann"})
        data = first.structuredContent
        assert data is not None and data["status"] == "answered"
        assert data["answer"] == "you said 1 things; first: my name is Ann; last: my name is Ann"
        thread = data["thread_id"]
        assert thread in _text(first)
        again = await session.call_tool("ask_helper", {"message": "hi", "thread_id": thread})
        assert again.structuredContent is not None
        assert again.structuredContent["answer"].startswith("you said 2 things; first: my name")
        other = await session.call_tool("ask_helper", {"message": "new"})
        assert other.structuredContent is not None
        assert other.structuredContent["answer"].startswith("you said 1 things")


async def test_agent_pausing_for_a_human_answers_with_the_question(our_url: str) -> None:
    """A human-in-the-loop pause: the question and how to resume; resuming finishes."""
    async with http_session(our_url) as session:
        paused = await session.call_tool("ask_mailer", {"message": "mail the CEO"})
        data = paused.structuredContent
        assert data is not None and data["status"] == "waiting_for_human"
        assert data["question"]["action_requests"][0]["name"] == "send_email"
        assert "thread_id=" in data["how_to_resume"]
        done = await session.call_tool(
            "ask_mailer", {"message": '[{"type": "approve"}]', "thread_id": data["thread_id"]}
        )
        assert done.structuredContent is not None
        assert done.structuredContent["answer"] == "done: sent to ceo@example.com"


def test_our_server_through_our_client(our_url: str) -> None:
    """McpToolProvider on our own server: an agent's tools, served and used again."""
    with McpToolProvider.http(our_url, name="ours") as provider:
        tools = {t.definition.name: t for t in provider.tool_callbacks()}
        assert tools["ours_add"].call('{"a": 1, "b": 2}') == "3"
        answer = json.loads(tools["ours_ask_helper"].call('{"message": "hello"}'))
        assert answer["answer"].endswith("last: hello")


def _inspector(servers: dict[str, list[str]], *target: str, args: list[str]) -> Any:
    # the inspector keeps a catalog and storage under HOME: give it one of its own
    home = TESTS.parent / ".venv" / "mcp-home"
    env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "catalog.json")}
    done = subprocess.run(
        [*servers["inspector"], "--cli", *target, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=TESTS,
        env=env,
        check=False,
    )
    assert done.stdout.strip(), f"inspector printed nothing; stderr: {done.stderr[-2000:]}"
    return json.loads(done.stdout[: done.stdout.rindex("}") + 1])


def test_inspector_over_stdio(servers: dict[str, list[str]]) -> None:
    """The MCP Inspector's CLI lists and calls our tools over stdio."""
    listed = _inspector(servers, *SERVE, args=["--method", "tools/list"])
    assert {t["name"] for t in listed["tools"]} == SERVED
    called = _inspector(
        servers,
        *SERVE,
        args=["--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=20", "b=22"],
    )
    assert called["content"][0]["text"] == "42" and not called["isError"]


def test_inspector_over_http(servers: dict[str, list[str]]) -> None:
    """`graphagent mcp serve --http` answers the Inspector over streamable HTTP."""
    port = free_port()
    server = subprocess.Popen(
        [*SERVE, "--http", f"127.0.0.1:{port}"],
        cwd=TESTS,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert "serving _mcp_served:served over MCP at" in server.stdout.readline()
        url = f"http://127.0.0.1:{port}/mcp"
        assert wait_until(lambda: listening(port))
        listed = _inspector(servers, url, args=["--method", "tools/list"])
        assert "ask_helper" in {t["name"] for t in listed["tools"]}
        asked = _inspector(
            servers,
            url,
            args=[
                "--method",
                "tools/call",
                "--tool-name",
                "ask_helper",
                "--tool-arg",
                "message=hi",
            ],
        )
        assert asked["structuredContent"]["answer"].endswith("last: hi")
    finally:
        server.terminate()
        server.communicate(timeout=20)


def test_cli_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Bad HOST:PORT or a missing object: exit 2 with one line saying what is wrong."""
    with pytest.raises(SystemExit) as info:
        cli.main(["mcp", "serve", "_mcp_served:served", "--http", "nowhere"])
    assert info.value.code == 2
    assert "expected HOST:PORT" in capsys.readouterr().err
    assert cli.main(["mcp", "serve", "_mcp_served:nothing"]) == 2
    assert "has no attribute 'nothing'" in capsys.readouterr().err


def test_build_server_refuses_clashes_and_junk() -> None:
    """Two tools with one name, or something that is not a tool: a clear error."""

    @tool(name="add")
    def other_add(x: int) -> int:
        """Another add."""
        return x

    with pytest.raises(ToolDefinitionError, match="two served tools are named 'add'"):
        build_server([served[0], other_add])
    with pytest.raises(UserError, match="cannot serve 42"):
        build_server([42])  # type: ignore[list-item]


async def test_minimal_hand_written_tool_is_served() -> None:
    """A duck-typed tool with only a definition and call(tool_input) serves over MCP."""
    from graphagent.tools import ToolDefinition

    class Shout:
        definition = ToolDefinition(
            "shout", "Say it louder.", {"type": "object", "properties": {"t": {"type": "string"}}}
        )

        def call(self, tool_input: str) -> str:
            return str(json.loads(tool_input)["t"]).upper()

    with serve_http(http_app([Shout()], name="mini")) as base:
        async with http_session(f"{base}/mcp") as session:
            assert _text(await session.call_tool("shout", {"t": "hey"})) == "HEY"
