"""The OpenAPI document at ``/openapi.json`` and the page at ``/docs``: every served call,
none of the refusals."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient
from targets import agent

from graphagent.server import create_app

pytestmark = pytest.mark.ours

CALLS = {
    ("post", "/threads"),
    ("post", "/threads/{thread_id}/copy"),
    ("get", "/threads/{thread_id}/stream"),
    ("post", "/threads/{thread_id}/runs/wait"),
    ("post", "/threads/{thread_id}/runs/stream"),
    ("get", "/threads/{thread_id}/runs/{run_id}/stream"),
    ("post", "/runs/wait"),
    ("post", "/assistants/search"),
    ("get", "/assistants/{assistant_id}/graph"),
    ("put", "/store/items"),
    ("post", "/store/namespaces"),
}


def test_openapi_lists_every_served_call_and_no_refusal() -> None:
    """/openapi.json is OpenAPI 3.1 with each call the SDK makes (a summary and a tag
    each); crons and threads.prune, which only say why they are not served, are absent."""
    with TestClient(create_app(agent)) as http:
        doc = http.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    operations = {(m, p): op for p, ops in doc["paths"].items() for m, op in ops.items()}
    assert set(operations) >= CALLS
    assert all(op["summary"] and op["tags"] for op in operations.values())
    assert not [p for p in doc["paths"] if "crons" in p or p.endswith("/prune")]


def test_docs_page_shows_the_calls() -> None:
    """/docs is an HTML page naming each path of the document."""
    with TestClient(create_app(agent)) as http:
        page = http.get("/docs")
        doc = http.get("/openapi.json").json()
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert all(path in page.text for path in doc["paths"])
