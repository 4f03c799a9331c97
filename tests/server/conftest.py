"""A ``graphagent serve`` subprocess for the server tests, driven by ``langgraph-sdk``.

``GRAPHAGENT_SERVER_URL`` points the same tests at another server instead (``langgraph
dev`` serving ``tests/server/reference/``: see ``tests/server/reference/run.sh``); tests
of what only graphagent serves are marked ``ours``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from _serving import (
    TARGETS,
    cluster_flags,
    free_port,
    start_server,
    stop,
    wait_ready,
)
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

REFERENCE = os.environ.get("GRAPHAGENT_SERVER_URL")

# LangGraph's graphs for `langgraph dev` (reference/run.sh), not tests
collect_ignore = ["reference"]


@pytest.fixture(scope="session", params=["sqlite", "redis", "postgres"])
def server_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The base URL of a ``graphagent serve`` of the test targets: alone on a SQLite file,
    or API-only on Redis or PostgreSQL with a ``graphagent worker`` executing the runs."""
    if REFERENCE:
        if request.param != "sqlite":
            pytest.skip("one reference server")
        yield REFERENCE
        return
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    if request.param == "sqlite":
        db = tmp_path_factory.mktemp("serve") / "server.sqlite"
        procs = [start_server(["serve", *TARGETS, "--port", str(port), "--db", str(db)])]
    else:
        cluster = cluster_flags(request, request.param, f"srvtest_{uuid.uuid4().hex[:8]}")
        procs = [
            start_server(["serve", *TARGETS, "--port", str(port), "--no-run", *cluster]),
            start_server(["worker", *TARGETS, *cluster]),
        ]
    try:
        wait_ready(url, procs[0])
        yield url
    finally:
        for proc in procs:
            stop(proc)


@pytest.fixture
async def client(server_url: str) -> AsyncIterator[LangGraphClient]:
    """A ``langgraph-sdk`` client of the server."""
    client = get_client(url=server_url)
    try:
        yield client
    finally:
        await client.aclose()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Against another server only the calls both serve run."""
    if not REFERENCE:
        return
    skip = pytest.mark.skip(reason="graphagent only")
    for item in items:
        if "ours" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ours: a call only graphagent's server serves")
