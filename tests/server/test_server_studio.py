"""The studio page at ``/``, in headless Chromium: assistants, graph, threads, a chat that
streams, and a pending interrupt approved with a click."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _browser import Browser
from _serving import TARGETS, free_port, start_server, stop, wait_ready

pytestmark = pytest.mark.ours

SHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "studio.png"


@pytest.fixture(scope="module")
def studio_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of the test targets and the careful (human-in-the-loop) agent."""
    port = free_port()
    db = tmp_path_factory.mktemp("studio") / "server.sqlite"
    targets = [*TARGETS, "tests/server/targets.py:careful"]
    proc = start_server(["serve", *targets, "--port", str(port), "--db", str(db)])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def page() -> Iterator[Browser]:
    browser = Browser()
    try:
        yield browser
    finally:
        browser.close()


def test_chat_interrupt_approve_in_the_page(studio_url: str, page: Browser, tmp_path: Path) -> None:
    """Choosing the careful agent, sending a message pauses at its approval question; the
    Approve button resumes it and the conversation shows the tool's answer and the reply;
    the graph, thread list and history are drawn."""
    page.goto(f"{studio_url}/?assistant=careful")
    page.wait("document.body.dataset.ready === 'yes'")
    names = page.run("[...document.querySelectorAll('#assistants li')].map(li => li.textContent)")
    assert {"assistant", "asker", "slow", "careful"} <= set(names)
    assert page.run("!!document.querySelector('#graph svg')")
    page.run(
        "document.getElementById('say').value = 'weather in Oslo';"
        "document.getElementById('chat').requestSubmit(); true"
    )
    asked = page.wait("document.querySelector('.interrupt pre')?.textContent")
    assert json.loads(asked)["action_requests"][0]["name"] == "get_weather"
    assert page.wait("document.querySelector('#thread-head .status')?.textContent") == "interrupted"
    page.run("document.querySelector('.interrupt .approve').click(); true")
    page.wait(
        "document.getElementById('conversation').textContent.includes('It is sunny in Oslo.')"
    )
    kinds = page.run("[...document.querySelectorAll('#conversation .msg')].map(m => m.className)")
    assert kinds == ["msg human", "msg ai", "msg tool", "msg ai"]
    assert page.run("document.querySelectorAll('.interrupt').length") == 0
    assert page.run("document.querySelectorAll('#threads li').length") >= 1
    page.wait("document.querySelectorAll('#history .step').length >= 4")
    shot = tmp_path / "studio.png"
    page.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_studio_opens_a_thread_from_the_address(studio_url: str, page: Browser) -> None:
    """``/?thread=ID`` opens that thread's conversation."""
    import httpx

    thread = httpx.post(f"{studio_url}/threads", json={}).json()
    httpx.post(
        f"{studio_url}/threads/{thread['thread_id']}/runs/wait",
        json={
            "assistant_id": "assistant",
            "input": {"messages": [{"role": "user", "content": "hi Rome"}]},
        },
        timeout=30,
    )
    page.goto(f"{studio_url}/?thread={thread['thread_id']}")
    page.wait("document.body.dataset.ready === 'yes'")
    assert "It is sunny in Rome." in page.run("document.getElementById('conversation').textContent")
    assert page.run("document.querySelector('#assistants li.on').textContent") == "assistant"
    assert SHOT.parent.is_dir()
