"""The least-privilege Redis user of docs/production.md runs a whole thread's life
(issue 13 item 12), on Redis and on Cluster.

The user is made from the ``ACL SETUSER`` line the docs give, so the docs cannot drift from
what works. It may run scripts (``EVALSHA``, ``EVAL``) but not load them (no ``SCRIPT``):
after ``SCRIPT FLUSH`` the saver must fall back to ``EVAL``.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from redis.exceptions import NoPermissionError

from checkpoint import AsyncRedisSaver, RedisSaver
from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, AppendStrategy, Command, StateGraph, interrupt

DOCS = Path(__file__).resolve().parent.parent / "docs" / "production.md"
CLUSTER_EXTRA = ["+cluster|slots", "+command"]


def documented_acl(prefix: str, user: str, password: str) -> list[str]:
    """The docs' ``ACL SETUSER`` rule, for this test's user, password and prefix."""
    lines = [ln for ln in DOCS.read_text().splitlines() if ln.startswith("ACL SETUSER ")]
    assert len(lines) == 1, "docs/production.md must give exactly one ACL SETUSER line"
    words = lines[0].split()[2:]
    assert words[0] == "graphagent" and ">CHANGE-ME" in words and "~{support-bot:*" in words
    swap = {"graphagent": user, ">CHANGE-ME": f">{password}", "~{support-bot:*": f"~{{{prefix}:*"}
    return [swap.get(w, w) for w in words]


def _run_a_thread(saver: CheckpointSaver) -> None:
    """Start, pause on a question, resume, list, prune, list threads, delete."""

    def ask(state: Any) -> dict[str, Any]:
        return {"log": [interrupt("name?")]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("ask", ask).add_node("echo", lambda state: {"log": ["echo"]})
    g.add_edge(START, "ask").add_edge("ask", "echo").add_edge("echo", END)
    app = g.compile(saver=saver)
    config = {"thread_id": "acl{thread}"}
    app.invoke({"log": ["hi"]}, config)
    assert [i.value for i in app.get_state(config).interrupts] == ["name?"]
    assert app.invoke(Command(resume="Ada"), config) == {"log": ["hi", "Ada", "echo"]}
    assert len(app.get_state_history(config)) == 3  # keep_last
    assert saver.threads() == ["acl{thread}"]  # type: ignore[attr-defined]
    app.delete_thread(config)
    assert app.get_state(config).values == {}


@pytest.fixture
def acl_user(redis_client: redis.Redis, redis_prefix: str) -> Iterator[tuple[str, str]]:
    """The documented user on the test Redis (unique name), deleted afterwards."""
    user, password = f"gatest-{uuid.uuid4().hex[:12]}", secrets.token_hex(16)
    redis_client.acl_setuser(user, reset=True)  # fails early if ACLs are off
    redis_client.execute_command("ACL", "SETUSER", *documented_acl(redis_prefix, user, password))
    yield user, password
    redis_client.acl_deluser(user)


def test_the_documented_user_runs_a_thread_without_script_load(
    redis_url: str, redis_client: redis.Redis, redis_prefix: str, acl_user: tuple[str, str]
) -> None:
    """As the documented user, after SCRIPT FLUSH: everything works through EVAL."""
    user, password = acl_user
    client = redis.Redis.from_url(redis_url, username=user, password=password)
    try:
        with pytest.raises(NoPermissionError):
            client.script_load("return 1")
        with pytest.raises(NoPermissionError):  # and it stays inside its prefix
            client.get("{someone-else:t}:head")
        redis_client.script_flush()  # the saver's scripts are unknown to Redis now
        saver = RedisSaver(client, prefix=redis_prefix, ttl=60, keep_last=3, lock_timeout=5)
        _run_a_thread(saver)
    finally:
        client.close()


async def test_the_documented_user_on_the_async_saver(
    redis_url: str, redis_client: redis.Redis, redis_prefix: str, acl_user: tuple[str, str]
) -> None:
    """The same fallback on AsyncRedisSaver."""
    user, password = acl_user
    client = aredis.Redis.from_url(redis_url, username=user, password=password)
    saver = AsyncRedisSaver(client, prefix=redis_prefix, ttl=60, lock_timeout=5)
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("n", lambda state: {"log": ["n"]}).add_edge(START, "n").add_edge("n", END)
    app = g.compile(saver=saver)
    try:
        redis_client.script_flush()
        assert await app.ainvoke({"log": ["hi"]}, {"thread_id": "a"}) == {"log": ["hi", "n"]}
        assert len(await app.aget_state_history({"thread_id": "a"})) == 2
    finally:
        await client.aclose()


def test_the_documented_user_on_cluster(
    redis_cluster_url: str, cluster_client: redis.RedisCluster, cluster_prefix: str
) -> None:
    """On Cluster, with the discovery commands the docs add for Cluster clients."""
    user, password = f"gatest-{uuid.uuid4().hex[:12]}", secrets.token_hex(16)
    rule = [*documented_acl(cluster_prefix, user, password), *CLUSTER_EXTRA]
    nodes = cluster_client.get_primaries()
    for node in nodes:
        node.redis_connection.execute_command("ACL", "SETUSER", *rule)
    client = redis.RedisCluster.from_url(redis_cluster_url, username=user, password=password)
    try:
        for node in nodes:
            node.redis_connection.script_flush()
        _run_a_thread(RedisSaver(client, prefix=cluster_prefix, keep_last=3, lock_timeout=5))
    finally:
        client.close()
        for node in nodes:
            node.redis_connection.acl_deluser(user)
