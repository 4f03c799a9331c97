"""``--auth``: each user's threads, runs and store items are theirs alone."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from _serving import TARGETS, free_port, start_server, stop, wait_ready
from langgraph_sdk import get_client

pytestmark = pytest.mark.ours

HI = {"messages": [{"role": "user", "content": "weather in Oslo"}]}


@pytest.fixture(scope="module")
def guarded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose users sign in with ``Authorization: Bearer <user>``."""
    port = free_port()
    db = tmp_path_factory.mktemp("auth") / "server.sqlite"
    args = ["serve", *TARGETS, "--port", str(port), "--db", str(db)]
    proc = start_server([*args, "--auth", "tests/server/targets.py:user_of"])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        yield url
    finally:
        stop(proc)


def _as(url: str, user: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {user}"}, timeout=30)


async def test_another_users_thread_is_404_on_every_endpoint(guarded_url: str) -> None:
    """Bob gets 404 for Alice's thread and run on every thread and run endpoint, and sees
    none of her threads or items in searches."""
    alice = get_client(url=guarded_url, headers={"Authorization": "Bearer alice"})
    thread = await alice.threads.create(metadata={"owner": "alice"})
    tid = thread["thread_id"]
    await alice.runs.wait(tid, "assistant", input=HI)
    run = (await alice.runs.list(tid))[0]
    rid = run["run_id"]
    await alice.store.put_item(["notes"], "secret", {"text": "alice's"})
    graph_meta = {
        k: v for k, v in (await alice.threads.get(tid))["metadata"].items() if k != "owner"
    }
    await alice.aclose()
    t, r = f"/threads/{tid}", f"/threads/{tid}/runs/{rid}"
    calls = [
        ("GET", t, None),
        ("PATCH", t, {"metadata": {"x": 1}}),
        ("DELETE", t, None),
        ("GET", f"{t}/state", None),
        ("POST", f"{t}/state", {"values": {"messages": []}}),
        ("POST", f"{t}/history", {"limit": 10}),
        ("GET", f"{t}/runs", None),
        ("POST", f"{t}/runs", {"assistant_id": "assistant", "input": HI}),
        ("POST", f"{t}/runs/wait", {"assistant_id": "assistant", "input": HI}),
        ("POST", f"{t}/runs/stream", {"assistant_id": "assistant", "input": HI}),
        ("GET", r, None),
        ("GET", f"{r}/join", None),
        ("GET", f"{r}/stream", None),
        ("POST", f"{r}/cancel", None),
        ("DELETE", r, None),
        ("GET", f"/runs/{rid}", None),
        ("POST", f"{t}/copy", None),
        ("GET", f"{t}/stream", None),
        ("GET", f"/assistants/assistant/graph?format=svg&thread_id={tid}", None),
    ]
    with _as(guarded_url, "bob") as bob:
        for method, path, body in calls:
            answer = bob.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.status_code, answer.text)
            assert "alice" not in answer.text
        assert bob.post("/threads/search", json={}).json() == []
        assert (
            bob.get("/store/items", params={"namespace": "notes", "key": "secret"}).json() is None
        )
        assert bob.post("/store/items/search", json={"namespace_prefix": []}).json()["items"] == []
        assert bob.post("/store/namespaces", json={}).json()["namespaces"] == []
    # and nothing of Bob's touched it
    with _as(guarded_url, "alice") as alice_http:
        state = alice_http.get(f"{t}/state").json()
        assert len(state["values"]["messages"]) == 4
        assert alice_http.get(t).json()["metadata"] == {"owner": "alice", **graph_meta}
        assert alice_http.get(r).json()["status"] == "success"


async def test_same_thread_id_for_two_users_are_two_threads(guarded_url: str) -> None:
    """Two users may each create a thread with the same id; each sees only their own."""
    with _as(guarded_url, "carol") as carol, _as(guarded_url, "dave") as dave:
        assert (
            carol.post("/threads", json={"thread_id": "shared", "metadata": {"u": "c"}}).status_code
            == 200
        )
        assert (
            dave.post("/threads", json={"thread_id": "shared", "metadata": {"u": "d"}}).status_code
            == 200
        )
        assert carol.get("/threads/shared").json()["metadata"]["u"] == "c"
        assert dave.get("/threads/shared").json()["metadata"]["u"] == "d"


def test_no_credentials_is_401_and_refused_ones_403(guarded_url: str) -> None:
    """No Authorization header: 401; one the auth function refuses: 403."""
    assert httpx.post(f"{guarded_url}/threads", json={}).status_code == 401
    refused = httpx.post(f"{guarded_url}/threads", json={}, headers={"Authorization": "Basic x"})
    assert refused.status_code == 403
    assert "Bearer" in refused.json()["detail"]
