"""McpToolProvider against a server that breaks the rules (issue 30 items 10, 12, 13).

The server is hand-written (``_mcp_raw.py``), so it can send what the SDK never would;
every test runs over stdio (a real child process), streamable HTTP and HTTP+SSE.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from _mcp_helpers import no_leftover_processes, serve_http
from _mcp_raw import GARBLED, HUGE, NAMES
from _mcp_raw import http_app as raw_http_app
from _mcp_raw import sse_app as raw_sse_app

from graphagent.agent import ReactAgent
from graphagent.errors import ToolDefinitionError
from graphagent.mcp import McpServerError, McpToolProvider
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel

__all__ = ["no_leftover_processes"]  # fixture, used by name

TESTS = Path(__file__).parent
Open = Callable[..., AbstractContextManager[McpToolProvider]]
MODEL_SAFE = r"^[a-zA-Z0-9_-]{1,64}$"


@contextmanager
def _stdio(mode: str, **options: Any) -> Iterator[McpToolProvider]:
    script = str(TESTS / "_mcp_raw.py")
    with McpToolProvider.stdio(sys.executable, [script, mode], **options) as provider:
        yield provider


@contextmanager
def _http(mode: str, **options: Any) -> Iterator[McpToolProvider]:
    with (
        serve_http(raw_http_app(mode)) as base,
        McpToolProvider.http(f"{base}/mcp", **options) as provider,
    ):
        yield provider


@contextmanager
def _sse(mode: str, **options: Any) -> Iterator[McpToolProvider]:
    with (
        serve_http(raw_sse_app(mode)) as base,
        McpToolProvider.sse(f"{base}/sse", **options) as provider,
    ):
        yield provider


OPENERS = {"stdio": _stdio, "http": _http, "sse": _sse}


@pytest.fixture(params=list(OPENERS))
def raw(request: pytest.FixtureRequest) -> Open:
    """Opens a provider on the hand-written server in a mode, over each transport."""
    return OPENERS[request.param]  # type: ignore[return-value]


def _tools(provider: McpToolProvider) -> dict[str, Any]:
    return {t.tool.name: t for t in provider.tool_callbacks()}  # type: ignore[attr-defined]


# -- item 13: one error type, naming the server and the tool -------------------------------


@pytest.mark.parametrize("transport", list(OPENERS))
@pytest.mark.parametrize(
    ("tool", "says"),
    [
        ("bad_shape", "does not fit the MCP result shape"),
        ("bad_structured", "does not match the tool's output schema"),
        ("no_structured", "no structured content"),
    ],
)
def test_results_the_sdk_cannot_validate_raise_mcp_server_error(
    transport: str, tool: str, says: str
) -> None:
    """stdio, HTTP and SSE: an invalid result is an McpServerError naming server and tool."""
    opener = OPENERS[transport]
    with opener("faulty", name="raw") as provider:
        with pytest.raises(McpServerError) as info:
            _tools(provider)[tool].call("{}")
        assert "MCP server 'raw'" in str(info.value) and repr(tool) in str(info.value)
        assert says in str(info.value)
        assert info.value.server == "raw" and info.value.tool == tool
        assert _tools(provider)["fine"].call("{}") == "fine"  # the session stays up


async def test_invalid_results_raise_the_same_from_acall(raw: Open) -> None:
    """stdio, HTTP and SSE, async: acall raises the same McpServerError, nothing raw."""
    with raw("faulty", name="raw") as provider, pytest.raises(McpServerError, match="'bad_"):
        await _tools(provider)["bad_shape"].acall("{}")


def test_a_huge_json_rpc_error_is_a_refusal_not_an_exit(raw: Open) -> None:
    """stdio, HTTP and SSE: a 5 MB JSON-RPC error (code -32000) is the server refusing the
    call, shortened; the server did not exit and the next call works."""
    with raw("faulty", name="raw") as provider:
        with pytest.raises(McpServerError) as info:
            _tools(provider)["huge_error"].call("{}")
        message = str(info.value)
        assert "refused tool 'huge_error'" in message and "exited" not in message
        assert len(message) < 2000 and f"{HUGE:,} characters" in message
        assert _tools(provider)["fine"].call("{}") == "fine"


def test_stdio_unreadable_lines_are_logged_without_their_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """stdio: a line that is not JSON-RPC is logged as unreadable, by its error's type
    only (it quotes what the server sent); the call still gets its answer."""
    caplog.set_level(logging.WARNING, logger="graphagent.mcp")
    with _stdio("faulty", name="raw") as provider:
        assert _tools(provider)["garbled"].call("{}") == "fine"
    assert "sent something unreadable: ValidationError" in caplog.text
    assert GARBLED not in caplog.text


def test_an_agent_sees_an_invalid_result_as_a_tool_failure(raw: Open) -> None:
    """stdio, HTTP and SSE: through an agent, the failure is a tool message naming the server."""
    with raw("faulty", name="raw") as provider:
        call = ToolCall(id="c1", name="raw_bad_structured", arguments="{}")
        model = FakeChatModel([AssistantMessage(tool_calls=[call]), "ok"])
        agent = ReactAgent(name="a", model=model, tool_callback_providers=[provider])
        state = agent.invoke("go")
        assert "MCP server 'raw'" in state["messages"][2].text


# -- item 10: a tool list paged for ever ---------------------------------------------------


def test_a_tool_list_paged_for_ever_fails_refresh(raw: Open) -> None:
    """stdio, HTTP and SSE: refresh() on a list that never ends stops at the page bound and
    says so, naming the server; the tools listed before stay."""
    with raw("pages", name="pager") as provider:
        assert [t.definition.name for t in provider.tool_callbacks()] == ["pager_t0"]
        began = time.monotonic()
        with pytest.raises(McpServerError, match=r"MCP server 'pager'.*(pages|cursor)"):
            provider.refresh()
        assert time.monotonic() - began < 30
        assert [t.definition.name for t in provider.tool_callbacks()] == ["pager_t0"]


async def test_a_tool_list_paged_for_ever_fails_arefresh(raw: Open) -> None:
    """stdio, HTTP and SSE: the async refresh stops the same way."""
    with raw("pages", name="pager") as provider, pytest.raises(McpServerError, match="'pager'"):
        await provider.arefresh()


def test_a_server_paging_for_ever_at_start_fails_to_open(raw: Open) -> None:
    """stdio, HTTP and SSE: a first listing that never ends fails open() with the reason."""
    with pytest.raises(McpServerError, match=r"'endless'.*pages"), raw("endless", name="endless"):
        pass


def test_a_slow_endless_list_is_bounded_in_time(raw: Open) -> None:
    """stdio, HTTP and SSE: pages that each take a while are bounded by startup_timeout."""
    began = time.monotonic()
    with (
        pytest.raises(McpServerError, match=r"'slow'.*within 1"),
        raw("slow", name="slow", startup_timeout=1),
    ):
        pass
    assert time.monotonic() - began < 20


# -- item 12: names a model cannot take ----------------------------------------------------


@pytest.mark.parametrize("prefix", [True, False])
def test_names_differing_only_in_unsafe_characters_are_made_unique(raw: Open, prefix: bool) -> None:
    """stdio, HTTP and SSE: Chinese, Korean, `a.b` beside `a b` beside `a_b`: every tool gets
    its own model-safe name, the original is in the description and the mapping, and a
    call reaches the right tool."""
    with raw("names", name="raw", prefix=prefix) as provider:
        tools = provider.tool_callbacks()
        names = [t.definition.name for t in tools]
        assert len(set(names)) == len(NAMES), names
        for name in names:
            assert __import__("re").match(MODEL_SAFE, name), name
        mapping = provider.tool_names
        assert sorted(mapping.values()) == sorted(NAMES)
        for tool in tools:
            original = mapping[tool.definition.name]
            assert tool.call("{}") == f"I am {original}"
            if original != "a_b":
                assert original in tool.definition.description
        # a name already model-safe keeps its name
        assert ("raw_a_b" if prefix else "a_b") in mapping


def test_unique_names_do_not_depend_on_the_listing_order() -> None:
    """The suffix comes from the original name, so reordering the list keeps every name."""
    from graphagent.mcp._names import unique_tool_names

    forward = unique_tool_names("raw", NAMES, prefix=True)
    backward = unique_tool_names("raw", NAMES[::-1], prefix=True)
    assert dict(zip(NAMES, forward, strict=True)) == dict(zip(NAMES[::-1], backward, strict=True))


def test_an_agent_opens_on_colliding_names_and_calls_the_right_tool(raw: Open) -> None:
    """stdio, HTTP and SSE: the agent builds (no clash) and a model's call reaches '검색'."""
    with raw("names", name="raw") as provider:
        by_original = {v: k for k, v in provider.tool_names.items()}
        call = ToolCall(id="c1", name=by_original["검색"], arguments="{}")
        model = FakeChatModel([AssistantMessage(tool_calls=[call]), "done"])
        agent = ReactAgent(name="a", model=model, tool_callback_providers=[provider])
        state = agent.invoke("search")
        assert state["messages"][2].text == "I am 검색"


def test_a_server_listing_one_name_twice_is_refused() -> None:
    """The same original name twice is the server's mistake: a clear error, not a suffix."""
    from graphagent.mcp._names import unique_tool_names

    with pytest.raises(ToolDefinitionError, match="'dup' twice"):
        unique_tool_names("raw", ["dup", "dup"], prefix=True)
    assert json.dumps(unique_tool_names("s", ["ok"], prefix=False)) == '["ok"]'
