"""A ``graphagent serve`` subprocess for the server tests, driven by ``langgraph-sdk``.

``GRAPHAGENT_SERVER_URL`` points the same tests at another server instead (``langgraph
dev`` serving ``tests/server/reference/``: see ``tests/server/reference/run.sh``); tests
of what only graphagent serves are marked ``ours``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest
from _serving import TARGETS, free_port, start_server, stop, wait_ready
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

REFERENCE = os.environ.get("GRAPHAGENT_SERVER_URL")


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a ``graphagent serve`` of the test targets on a SQLite file."""
    if REFERENCE:
        yield REFERENCE
        return
    port = free_port()
    db = tmp_path_factory.mktemp("serve") / "server.sqlite"
    proc = start_server(["serve", *TARGETS, "--port", str(port), "--db", str(db)])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        yield url
    finally:
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
