"""MCP against real servers nobody here wrote: the reference servers from npm (over stdio),
the SDK's FastMCP (over streamable HTTP, in this process), and the MCP Inspector."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _mcp_helpers import (
    alive,
    descendants,
    fastmcp_server,
    free_port,
    listening,
    no_leftover_processes,
    process_table,
    serve_http,
    servers,
    wait_until,
)

from graphagent.agent import ReactAgent
from graphagent.errors import ToolExecutionError, UserError
from graphagent.mcp import McpServerError, McpToolProvider, prefixed_tool_name
from graphagent.messages import AssistantMessage, ImagePart, ToolCall, ToolResponseMessage
from graphagent.models import FakeChatModel, FunctionChatModel
from graphagent.tools import (
    DefaultToolExecutionExceptionProcessor,
    ToolCallingManager,
    ToolContext,
    ToolDefinition,
)

EVERYTHING = "mcp-servers_everything_"
__all__ = ["no_leftover_processes", "servers"]  # fixtures, used by name


@pytest.fixture
def everything(servers: dict[str, list[str]]) -> Iterator[McpToolProvider]:
    """server-everything over stdio, open on its own loop thread."""
    node, script = servers["everything"]
    with McpToolProvider.stdio(node, [script]) as provider:
        yield provider


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with two files for the filesystem server."""
    (tmp_path / "notes.txt").write_text("buy milk\n")
    (tmp_path / "todo.md").write_text("# todo\n- ship MCP\n")
    return tmp_path


@pytest.fixture
def files(servers: dict[str, list[str]], folder: Path) -> Iterator[McpToolProvider]:
    """server-filesystem over stdio, allowed to see ``folder`` only."""
    node, script = servers["filesystem"]
    with McpToolProvider.stdio(node, [script, str(folder)], name="files") as provider:
        yield provider


@pytest.fixture(scope="module")
def py_url() -> Iterator[str]:
    """The SDK's FastMCP server over streamable HTTP on a free port, in this process."""
    with serve_http(fastmcp_server().streamable_http_app()) as base:
        yield f"{base}/mcp"


def tools_of(provider: McpToolProvider) -> dict[str, object]:
    return {t.definition.name: t for t in provider.tool_callbacks()}


def call(provider: McpToolProvider, name: str, arguments: object = None) -> Any:
    tool = next(t for t in provider.tool_callbacks() if t.definition.name == name)
    return tool.call(json.dumps(arguments or {}))


# -- client: listing and calling -------------------------------------------------------------


def test_lists_every_tool_prefixed_and_model_safe(everything: McpToolProvider) -> None:
    """One tool per server tool, named <server>_<tool> in [a-zA-Z0-9_-]{1,64}."""
    tools = everything.tool_callbacks()
    assert everything.server_name == "mcp-servers/everything"
    names = {t.definition.name for t in tools}
    assert f"{EVERYTHING}get-sum" in names and f"{EVERYTHING}echo" in names
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)
    assert len(names) == len(tools) >= 10


def test_input_schema_reaches_the_model_unchanged(everything: McpToolProvider) -> None:
    """The definition's schema is the server's inputSchema, as the server sent it."""
    tool = next(t for t in everything.tool_callbacks() if t.definition.name.endswith("get-sum"))
    assert dict(tool.definition.input_schema) == tool.tool.inputSchema  # type: ignore[attr-defined]
    assert set(tool.definition.input_schema["required"]) == {"a", "b"}


def test_prefix_false_keeps_the_server_names(servers: dict[str, list[str]]) -> None:
    """prefix=False: the server's own tool names."""
    node, script = servers["everything"]
    with McpToolProvider.stdio(node, [script], prefix=False) as provider:
        assert "get-sum" in tools_of(provider)


def test_call_with_arguments(everything: McpToolProvider) -> None:
    """Arguments go to the server; its text comes back."""
    assert (
        call(everything, f"{EVERYTHING}get-sum", {"a": 2, "b": 40}) == "The sum of 2 and 40 is 42."
    )


def test_structured_content_is_sent_as_json(everything: McpToolProvider) -> None:
    """structuredContent is the result, as JSON."""
    text = call(everything, f"{EVERYTHING}get-structured-content", {"location": "Chicago"})
    assert set(json.loads(text)) == {"temperature", "conditions", "humidity"}


def test_image_parts_arrive_as_images(everything: McpToolProvider) -> None:
    """The reference server's image reaches us as an ImagePart after the text (the model
    then sees the image itself, not a description of it)."""
    text, image = call(everything, f"{EVERYTHING}get-tiny-image")
    assert isinstance(image, ImagePart) and image.mime_type == "image/png"
    assert image.data is not None and image.data.startswith(b"\x89PNG")
    assert "MCP logo" in text


def test_resource_parts_are_described(everything: McpToolProvider) -> None:
    """Embedded resources and resource links keep their URI and type."""
    text = call(
        everything,
        f"{EVERYTHING}get-resource-reference",
        {"resourceType": "Text", "resourceId": 3},
    )
    assert "[resource demo://resource/dynamic/text/3 (text/plain" in text
    links = call(everything, f"{EVERYTHING}get-resource-links", {"count": 2})
    assert links.count("[resource link") == 2


def test_error_result_is_a_tool_execution_error(files: McpToolProvider, tmp_path: Path) -> None:
    """isError: true raises ToolExecutionError naming server and tool."""
    with pytest.raises(ToolExecutionError, match=r"MCP server 'files' reported an error") as info:
        call(files, "files_read_text_file", {"path": "/etc/hostname"})
    assert info.value.tool_name == "files_read_text_file"
    assert "outside allowed directories" in str(info.value) or "denied" in str(info.value)


def test_error_result_goes_through_the_exception_processor(files: McpToolProvider) -> None:
    """The processor decides: tell the model (default), or throw."""
    asked = AssistantMessage(
        tool_calls=[
            ToolCall(id="c1", name="files_read_text_file", arguments='{"path": "/etc/hostname"}')
        ]
    )
    told = ToolCallingManager().execute_tool_calls([], asked, tools=files.tool_callbacks())
    assert "reported an error" in told.tool_responses[0].content
    strict = ToolCallingManager(
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True)
    )
    with pytest.raises(ToolExecutionError):
        strict.execute_tool_calls([], asked, tools=files.tool_callbacks())


def test_bad_json_arguments_tell_the_model(everything: McpToolProvider) -> None:
    """Arguments that are not a JSON object come back to the model as such."""
    asked = AssistantMessage(
        tool_calls=[ToolCall(id="c1", name=f"{EVERYTHING}get-sum", arguments="[1, 2]")]
    )
    told = ToolCallingManager().execute_tool_calls([], asked, tools=everything.tool_callbacks())
    assert "must be a JSON object" in told.tool_responses[0].content


# -- client: faults ----------------------------------------------------------------------------


def test_server_that_fails_to_start_names_itself(tmp_path: Path) -> None:
    """A server exiting at start-up: the error names it and quotes its stderr."""
    script = tmp_path / "broken.py"
    script.write_text("import sys\nprint('no config file found', file=sys.stderr)\nsys.exit(3)\n")
    provider = McpToolProvider.stdio(sys.executable, [str(script)], name="broken")
    with pytest.raises(McpServerError, match=r"'broken'.*no config file found") as info:
        provider.open()
    assert info.value.server == "broken"
    with pytest.raises(UserError, match="not open"):
        provider.tool_callbacks()


def test_closed_provider_refuses_calls_and_reopens(servers: dict[str, list[str]]) -> None:
    """After close a kept tool raises 'not open'; open() again starts a fresh server."""
    node, script = servers["everything"]
    provider = McpToolProvider.stdio(node, [script], name="again")
    with provider:
        tool = tools_of(provider)["again_get-sum"]
    with pytest.raises(McpServerError, match="'again' is not open"):
        tool.call('{"a": 1, "b": 2}')  # type: ignore[attr-defined]
    with provider:
        assert call(provider, "again_get-sum", {"a": 1, "b": 2}) == "The sum of 1 and 2 is 3."


def test_missing_command_is_named() -> None:
    """A command not on PATH is named, with the fix."""
    with (
        pytest.raises(McpServerError, match=r"'no-such-mcp-server' is not on PATH"),
        McpToolProvider.stdio("no-such-mcp-server"),
    ):
        pass


def test_server_killed_mid_call(everything: McpToolProvider) -> None:
    """Killing the server during a call: a clear error naming it, then 'not running'."""
    long_op = f"{EVERYTHING}trigger-long-running-operation"
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            call(everything, long_op, {"duration": 30, "steps": 30})
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert everything.pid is not None
    server_pids = descendants(everything.pid)
    assert server_pids
    wait_until(lambda: False, 0.3)  # let the call reach the server
    for pid in server_pids:
        subprocess.run(["kill", "-9", str(pid)], check=False)
    worker.join(20)
    assert outcome and isinstance(outcome[0], McpServerError), outcome
    assert "MCP server 'mcp-servers/everything'" in str(outcome[0])
    assert "exited while running tool 'trigger-long-running-operation'" in str(outcome[0])
    with pytest.raises(McpServerError, match="exited"):
        call(everything, f"{EVERYTHING}echo", {"message": "hi"})


HTTP_SERVER = """
import sys
sys.path.insert(0, {tests!r})
from _mcp_helpers import fastmcp_server
server = fastmcp_server()
server.settings.port = {port}
server.settings.log_level = "WARNING"
server.run("streamable-http")
"""


def test_http_server_killed_mid_call() -> None:
    """An HTTP server killed during a call: the call fails naming it, not hangs."""
    port = free_port()
    code = HTTP_SERVER.format(tests=str(Path(__file__).parent), port=port)
    server = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: listening(port))
        url = f"http://127.0.0.1:{port}/mcp"
        with McpToolProvider.http(url, name="remote", timeout=None, ping_interval=0.2) as remote:
            outcome: list[BaseException] = []

            def run() -> None:
                try:
                    call(remote, "remote_meet", {"who": "solo"})  # waits 10 s for a peer
                except BaseException as exc:
                    outcome.append(exc)

            worker = threading.Thread(target=run)
            worker.start()
            wait_until(lambda: False, 0.3)
            server.kill()
            worker.join(30)
            assert outcome and isinstance(outcome[0], McpServerError), outcome
            assert "MCP server 'remote'" in str(outcome[0])
            assert "while running tool 'meet'" in str(outcome[0])
    finally:
        server.kill()
        server.wait()


def test_timeout_per_call(servers: dict[str, list[str]]) -> None:
    """A call longer than timeout= fails with an error naming server, tool and limit."""
    node, script = servers["everything"]
    with McpToolProvider.stdio(node, [script], name="slow", timeout=0.5) as provider:
        with pytest.raises(McpServerError, match=r"'slow' did not answer tool .* within 0.5 s"):
            call(provider, "slow_trigger-long-running-operation", {"duration": 20, "steps": 2})
        assert call(provider, "slow_get-sum", {"a": 1, "b": 1}) == "The sum of 1 and 1 is 2."


def test_close_reaps_the_server(servers: dict[str, list[str]]) -> None:
    """After close, neither the guard nor the server exists (not even as a zombie)."""
    node, script = servers["everything"]
    with McpToolProvider.stdio(node, [script]) as provider:
        assert provider.pid is not None
        pids = [provider.pid, *descendants(provider.pid)]
        assert len(pids) == 2
    assert not [p for p in pids if alive(p)]


SIGTERM_SCRIPT = """
import signal, sys, time
sys.path.insert(0, {tests!r})
if {own_handler!r}:
    signal.signal(signal.SIGTERM, lambda *_: (print("own handler ran", flush=True), sys.exit(7)))
from _mcp_helpers import descendants
from graphagent.mcp import McpToolProvider
provider = McpToolProvider.stdio({node!r}, [{script!r}]).open()
print(provider.pid, *descendants(provider.pid), flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_agent_process_killed_leaves_no_server(servers: dict[str, list[str]], sig: int) -> None:
    """The agent's process gets SIGTERM (or SIGKILL): its servers go too, none a zombie."""
    node, script = servers["everything"]
    code = SIGTERM_SCRIPT.format(
        tests=str(Path(__file__).parent), node=node, script=script, own_handler=False
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )
    with proc:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        proc.send_signal(sig)
        assert proc.wait(20) == -sig
    if sig == signal.SIGKILL:
        # nobody is left to reap the guard: the kernel makes it our orphan's business,
        # but the server itself must be gone
        server = pids[1]
        assert wait_until(lambda: process_table().get(server, (0, "Z", ""))[1] == "Z")
        return
    assert not [p for p in pids if alive(p)]


def test_exit_without_close_leaves_no_server(servers: dict[str, list[str]]) -> None:
    """A script that never closes its provider: the server stops when Python exits."""
    node, script = servers["everything"]
    code = SIGTERM_SCRIPT.format(
        tests=str(Path(__file__).parent), node=node, script=script, own_handler=False
    ).replace("time.sleep(60)", "")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2 and not [p for p in pids if alive(p)]


def test_sigterm_runs_the_applications_own_handler_too(servers: dict[str, list[str]]) -> None:
    """An app with its own SIGTERM handler: servers are stopped, then its handler runs."""
    node, script = servers["everything"]
    code = SIGTERM_SCRIPT.format(
        tests=str(Path(__file__).parent), node=node, script=script, own_handler=True
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )
    with proc:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 7
        assert proc.stdout.read().strip() == "own handler ran"
    assert not [p for p in pids if alive(p)]


# -- client: HTTP, async, concurrency, meta, list changes --------------------------------------


def test_http_tools_and_headers(py_url: str) -> None:
    """Streamable HTTP: tools listed and called; headers sent with every request."""
    auth = {"Authorization": "Bearer t0k"}
    with McpToolProvider.http(py_url, headers=auth, name="py") as provider:
        assert {"py_add", "py_meet", "py_show_meta"} <= set(tools_of(provider))
        assert call(provider, "py_add", {"a": 2, "b": 3}) == '{"result": 5}'  # structured
        assert call(provider, "py_show_meta") == "meta=None auth=Bearer t0k"


def test_legacy_sse_transport() -> None:
    """The older HTTP+SSE transport: same tools, same results, headers sent."""
    with (
        serve_http(fastmcp_server().sse_app()) as base,
        McpToolProvider.sse(
            f"{base}/sse", headers={"Authorization": "Bearer s"}, name="old"
        ) as old,
    ):
        assert call(old, "old_add", {"a": 1, "b": 2}) == '{"result": 3}'
        assert call(old, "old_show_meta") == "meta=None auth=Bearer s"


def test_tool_failure_on_fastmcp(py_url: str) -> None:
    """A Python tool raising on the server is an error result: ToolExecutionError."""
    with (
        McpToolProvider.http(py_url, name="py") as provider,
        pytest.raises(ToolExecutionError, match="disk full"),
    ):
        call(provider, "py_fail", {"reason": "disk full"})


def test_context_is_sent_only_through_meta(py_url: str) -> None:
    """ToolContext/config/metadata never reach the server unless meta= maps them."""
    ctx = ToolContext(config={"metadata": {"user_id": "u7", "api_key": "secret"}})
    with McpToolProvider.http(py_url, name="py") as plain:
        tool = tools_of(plain)["py_show_meta"]
        assert tool.call("{}", ctx) == "meta=None auth=None"  # type: ignore[attr-defined]
    with McpToolProvider.http(
        py_url, name="py", meta=lambda c: {"user": c.metadata["user_id"]}
    ) as mapped:
        tool = tools_of(mapped)["py_show_meta"]
        assert tool.call("{}", ctx) == "meta={'user': 'u7'} auth=None"  # type: ignore[attr-defined]


def test_tool_list_changed_refreshes(py_url: str) -> None:
    """notifications/tools/list_changed: the new tool shows up in tool_callbacks()."""
    with McpToolProvider.http(py_url, name="py") as provider:
        assert "py_late" not in tools_of(provider)
        assert call(provider, "py_add_tool", {"name": "late"}) == "added late"
        assert wait_until(lambda: "py_late" in tools_of(provider))
        assert call(provider, "py_late") == "I am late"


def test_agent_offers_tools_added_after_it_was_built(py_url: str) -> None:
    """An agent asks its providers on every model call: a tool added later is offered."""
    seen: list[list[str]] = []

    def model(messages: list[object], tools: list[ToolDefinition]) -> AssistantMessage | str:
        seen.append([t.name for t in tools])
        if len(seen) == 1:
            return AssistantMessage(
                tool_calls=[ToolCall(id="1", name="py_add_tool", arguments='{"name": "fresh"}')]
            )
        if len(seen) == 2:
            # the list_changed refresh runs beside this call; the next tools step sees it
            assert wait_until(lambda: "py_fresh" in tools_of(provider))
            return AssistantMessage(tool_calls=[ToolCall(id="2", name="py_fresh", arguments="{}")])
        return "done"

    with McpToolProvider.http(py_url, name="py") as provider:
        agent = ReactAgent(
            name="grower", model=FunctionChatModel(model), tool_callback_providers=[provider]
        )
        state = agent.invoke("grow")
    assert "py_fresh" not in seen[0] and "py_fresh" in seen[2]
    results = [m.content for m in state["messages"] if isinstance(m, ToolResponseMessage)]
    assert results == ["added fresh", "I am fresh"]


async def test_async_with_on_the_running_loop(py_url: str) -> None:
    """`async with` runs the session on the caller's loop; acall works, call refuses."""
    async with McpToolProvider.http(py_url, name="py") as provider:
        tool = tools_of(provider)["py_add"]
        assert await tool.acall('{"a": 1, "b": 1}') == '{"result": 2}'  # type: ignore[attr-defined]
        with pytest.raises(UserError, match="acall"):
            tool.call('{"a": 1, "b": 1}')  # type: ignore[attr-defined]


def _meet_calls() -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[
            ToolCall(id="c1", name="py_meet", arguments='{"who": "ann"}'),
            ToolCall(id="c2", name="py_meet", arguments='{"who": "bob"}'),
        ]
    )


def test_parallel_tool_calls_are_concurrent_sync(py_url: str) -> None:
    """Two calls in one message are in flight together (each waits for the other)."""
    with McpToolProvider.http(py_url, name="py") as provider:
        agent = ReactAgent(
            name="pair",
            model=FakeChatModel([_meet_calls(), "done"]),
            tools=[],
            tool_callback_providers=[provider],
        )
        state = agent.invoke("meet")
    results = [m.content for m in state["messages"] if isinstance(m, ToolResponseMessage)]
    assert results == ["ann: together", "bob: together"]


async def test_parallel_tool_calls_are_concurrent_async(py_url: str) -> None:
    """Same from ainvoke, with the provider on the running loop."""
    async with McpToolProvider.http(py_url, name="py") as provider:
        agent = ReactAgent(
            name="pair",
            model=FakeChatModel([_meet_calls(), "done"]),
            tool_callback_providers=[provider],
        )
        state = await agent.ainvoke("meet")
    results = [m.content for m in state["messages"] if isinstance(m, ToolResponseMessage)]
    assert results == ["ann: together", "bob: together"]


# -- client: a ReactAgent on the npm servers ---------------------------------------------------


def test_react_agent_uses_both_npm_servers(
    everything: McpToolProvider, files: McpToolProvider, folder: Path
) -> None:
    """A scripted model calls tools on two servers; their answers reach the model."""
    first = AssistantMessage(
        tool_calls=[
            ToolCall(id="c1", name=f"{EVERYTHING}get-sum", arguments='{"a": 20, "b": 22}'),
            ToolCall(
                id="c2", name="files_list_directory", arguments=json.dumps({"path": str(folder)})
            ),
        ]
    )
    second = AssistantMessage(
        tool_calls=[
            ToolCall(
                id="c3",
                name="files_read_text_file",
                arguments=json.dumps({"path": str(folder / "todo.md")}),
            )
        ]
    )
    agent = ReactAgent(
        name="helper",
        model=FakeChatModel([first, second, "42, and you must ship MCP."]),
        tool_callback_providers=[everything, files],
    )
    state = agent.invoke("What is 20+22, and what is in my folder?")
    results = {
        m.tool_call_id: m.content for m in state["messages"] if isinstance(m, ToolResponseMessage)
    }
    assert results["c1"] == "The sum of 20 and 22 is 42."
    assert "notes.txt" in results["c2"] and "todo.md" in results["c2"]
    assert "ship MCP" in results["c3"]
    assert state["messages"][-1].text == "42, and you must ship MCP."


def test_prefixed_tool_name_is_model_safe() -> None:
    """Spring AI's rule: <server>_<tool>, [a-zA-Z0-9_-]{1,64}, long names stay distinct."""
    assert prefixed_tool_name("my server", "read.file") == "my_server_read_file"
    long_a = prefixed_tool_name("s" * 70, "a")
    long_b = prefixed_tool_name("s" * 70, "b")
    assert len(long_a) == 64 and long_a != long_b
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", prefixed_tool_name("日本", "ツール"))


def test_every_constructor_takes_and_passes_on_the_providers_options() -> None:
    """stdio, http and sse accept each of __init__'s options, with its default, and the
    provider they make keeps the values given."""
    init = inspect.signature(McpToolProvider.__init__).parameters
    options = {n: p.default for n, p in init.items() if p.kind is p.KEYWORD_ONLY}
    given = {"name": "n", "prefix": False, "timeout": 1.5, "startup_timeout": 2.5}
    for make, target in (
        (McpToolProvider.stdio, "node"),
        (McpToolProvider.http, "http://127.0.0.1:1/mcp"),
        (McpToolProvider.sse, "http://127.0.0.1:1/sse"),
    ):
        params = inspect.signature(make).parameters
        assert {n: params[n].default for n in options} == options, make.__name__
        provider = make(target, **given)  # type: ignore[operator]
        assert (provider.name, provider.prefix, provider.timeout) == ("n", False, 1.5)
        assert (provider.label, provider._live.startup_timeout) == ("n", 2.5)


def test_async_loop_is_not_blocked_by_sync_provider(py_url: str) -> None:
    """A `with`-opened provider serves acall from another loop too."""
    with McpToolProvider.http(py_url, name="py") as provider:
        tool = tools_of(provider)["py_add"]
        assert asyncio.run(tool.acall('{"a": 3, "b": 4}')) == '{"result": 7}'  # type: ignore[attr-defined]


def test_every_content_kind_is_described() -> None:
    """Audio, blobs, links without a type: each part leaves a trace; errors keep theirs."""
    from mcp import types

    from graphagent.mcp._results import result_text

    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="here"),
            types.AudioContent(type="audio", data="AAAA", mimeType="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(uri="file:///a.bin", blob="AAAAAA=="),
            ),
            types.ResourceLink(type="resource_link", uri="file:///b", name="b"),
        ]
    )
    assert result_text(result, tool="t", server="s").splitlines() == [
        "here",
        "[audio (audio/wav, 3 bytes)]",
        "[resource file:///a.bin (unknown type, 4 bytes)]",
        "[resource link b: file:///b]",
    ]
    silent = types.CallToolResult(content=[], isError=True)
    with pytest.raises(ToolExecutionError, match="from tool 't': no details given"):
        result_text(silent, tool="t", server="s")


def test_missing_node_fails_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without node/npm the MCP tests fail (never skip) with what to install."""
    import _mcp_servers

    monkeypatch.setattr(_mcp_servers.shutil, "which", lambda name: None)
    with pytest.raises(_mcp_servers.NodeMissing, match=r"'node' \(Node.js 20 or newer with npm\)"):
        _mcp_servers.node_servers()
