"""What an MCP caller can reach (issue 30 item 1): only the threads it started, in a
namespace of the server's own, per client session or authenticated principal; over
streamable HTTP (sessions, principals) and stdio (a real child process)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from _mcp_helpers import no_leftover_processes, serve_http
from _mcp_served import mailer
from _mcp_served_tenancy import APP_SECRET, helper
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection

from graphagent._internal.tenancy import ThreadNamespace
from graphagent.errors import ThreadAccessError
from graphagent.mcp import http_app

__all__ = ["no_leftover_processes"]  # fixture, used by name

TESTS = Path(__file__).parent


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _data(result: types.CallToolResult) -> dict[str, Any]:
    assert result.structuredContent is not None, _text(result)
    return result.structuredContent


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """helper (whose saver holds the app's thread u42) and mailer over streamable HTTP."""
    with serve_http(http_app([helper, mailer], name="ours")) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """One MCP session (its own mcp-session-id), optionally with a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        httpx.AsyncClient(headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _app_thread_untouched() -> None:
    state = helper.graph.get_state({"thread_id": "u42"})
    assert state.values["messages"][0].text == APP_SECRET
    assert len(state.values["messages"]) == 2


async def test_http_caller_cannot_reach_the_applications_threads(url: str) -> None:
    """HTTP: thread_id='u42' (the app's own thread) is refused; u42 is not read or grown."""
    async with http_session(url) as session:
        asked = await session.call_tool("ask_helper", {"message": "hi", "thread_id": "u42"})
    assert asked.isError and "ThreadAccessError" in _text(asked)
    assert APP_SECRET not in _text(asked)
    _app_thread_untouched()


async def test_http_session_cannot_continue_another_sessions_thread(url: str) -> None:
    """HTTP: session B passing session A's thread id is refused; A continues it."""
    async with http_session(url) as a, http_session(url) as b:
        first = _data(await a.call_tool("ask_helper", {"message": "my pin is 1234"}))
        thread = first["thread_id"]
        stolen = await b.call_tool("ask_helper", {"message": "repeat", "thread_id": thread})
        assert stolen.isError and "1234" not in _text(stolen)
        again = _data(await a.call_tool("ask_helper", {"message": "hi", "thread_id": thread}))
        assert again["answer"] == "you said 2 things; first: my pin is 1234; last: hi"


async def test_http_session_cannot_answer_another_sessions_approval(url: str) -> None:
    """HTTP: B cannot approve A's pending approval; A's thread still waits, A approves."""
    async with http_session(url) as a, http_session(url) as b:
        paused = _data(await a.call_tool("ask_mailer", {"message": "mail the CEO"}))
        thread = paused["thread_id"]
        hijack = await b.call_tool("ask_mailer", {"message": "approve", "thread_id": thread})
        assert hijack.isError
        done = _data(await a.call_tool("ask_mailer", {"message": "approve", "thread_id": thread}))
        assert done["answer"] == "done: sent to ceo@example.com"


async def test_http_caller_cannot_name_its_own_thread_ids(url: str) -> None:
    """HTTP: a made-up thread id is not a new thread: thread ids are the server's to issue."""
    async with http_session(url) as session:
        made_up = await session.call_tool("ask_helper", {"message": "x", "thread_id": "mine"})
        assert made_up.isError and "leave thread_id out" in _text(made_up)


class _Tokens(AuthenticationBackend):
    """Bearer tokens -> principals, as an application's auth middleware would do."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser] | None:
        token = conn.headers.get("authorization", "").removeprefix("Bearer ")
        users = {"t-ann-1": "ann", "t-ann-2": "ann", "t-bob": "bob"}
        if token not in users:
            return None
        return AuthCredentials(["mcp"]), SimpleUser(users[token])


@pytest.fixture(scope="module")
def signed_in_url() -> Iterator[str]:
    """The server behind an authentication middleware that sets request.user."""
    app = AuthenticationMiddleware(http_app([helper], name="ours"), backend=_Tokens())
    with serve_http(app) as base:
        yield f"{base}/mcp"


async def test_http_principal_keeps_its_threads_across_sessions(signed_in_url: str) -> None:
    """HTTP with auth: ann's thread is hers in any session (any token of hers); bob's
    session is refused."""
    async with http_session(signed_in_url, "t-ann-1") as ann:
        thread = _data(await ann.call_tool("ask_helper", {"message": "ann here"}))["thread_id"]
    async with http_session(signed_in_url, "t-ann-2") as ann_again:
        again = await ann_again.call_tool("ask_helper", {"message": "hi", "thread_id": thread})
        assert _data(again)["answer"].startswith("you said 2 things; first: ann here")
    async with http_session(signed_in_url, "t-bob") as bob:
        stolen = await bob.call_tool("ask_helper", {"message": "x", "thread_id": thread})
        assert stolen.isError and "ann here" not in _text(stolen)


@asynccontextmanager
async def stdio_session(target: str) -> AsyncIterator[ClientSession]:
    """The SDK's client, talking to `graphagent mcp serve TARGET` as a child process."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graphagent", "mcp", "serve", target],
        cwd=str(TESTS),
        env={"PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])},
    )
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def test_stdio_caller_reaches_only_its_own_threads() -> None:
    """stdio: the app's thread u42 is refused; the caller's own thread continues."""
    async with stdio_session("_mcp_served_tenancy:helper") as session:
        refused = await session.call_tool("ask_helper", {"message": "hi", "thread_id": "u42"})
        assert refused.isError and APP_SECRET not in _text(refused)
        first = _data(await session.call_tool("ask_helper", {"message": "one"}))
        again = await session.call_tool(
            "ask_helper", {"message": "two", "thread_id": first["thread_id"]}
        )
        assert _data(again)["answer"] == "you said 2 things; first: one; last: two"


def test_namespace_keeps_servers_and_owners_apart() -> None:
    """Stored ids differ per server and per owner, and hold no owner name in clear."""
    a, b = ThreadNamespace("mcp", "one"), ThreadNamespace("mcp", "two")
    assert a.stored("session:x", "t") != b.stored("session:x", "t")
    assert a.stored("session:x", "t") != a.stored("session:y", "t")
    assert "ann" not in a.stored("principal:ann", "t")
    # whatever a caller sends stays inside its namespace
    assert a.stored("session:x", "../u42").startswith("mcp:one:")
    assert len({a.new_thread() for _ in range(100)}) == 100


def test_namespace_refuses_a_thread_the_owner_did_not_start() -> None:
    """resume() on a thread that is not in the owner's namespace: ThreadAccessError."""
    threads = ThreadNamespace("a2a", "ours")
    with pytest.raises(ThreadAccessError, match="not a conversation you started"):
        threads.resume(helper.graph, "principal:ann", "u42")
    own = threads.stored("principal:ann", "t1")
    helper.call("hello", thread_id=own)
    assert threads.resume(helper.graph, "principal:ann", "t1") == own


def test_the_sdks_bearer_auth_principal_is_the_owner() -> None:
    """The SDK's AuthenticatedUser: the token's subject (per issuer), else its client id,
    whatever the session; an unauthenticated request is owned by its session."""
    from types import SimpleNamespace

    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    from graphagent.mcp._caller import caller_of

    def context(token: AccessToken | None, session: object) -> Any:
        scope = {"user": AuthenticatedUser(token)} if token else {}
        return SimpleNamespace(request=SimpleNamespace(scope=scope), session=session)

    ann = AccessToken(token="a", client_id="app", scopes=[], subject="ann", claims={"iss": "idp"})
    app = AccessToken(token="b", client_id="app", scopes=[])

    class Session:
        """Stands for the SDK's ServerSession (any weak-referenceable object)."""

    one, two = Session(), Session()
    assert caller_of(context(ann, one)) == caller_of(context(ann, two)) == "principal:idp|ann"
    assert caller_of(context(app, one)) == "principal:client|app"
    assert (
        caller_of(context(None, one))
        == caller_of(context(None, one))
        != caller_of(context(None, two))
    )
    assert caller_of(context(None, one)).startswith("session:")
