"""``@task(retry=, cache=)``: a failed call retried under the graph engine's RetryPolicy,
a result reused for the same arguments from the entrypoint's cache (memory and Redis)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from checkpoint.cache import MemoryCache, RedisCache
from graphagent.errors import UserError
from graphagent.func import entrypoint, task
from graphagent.graph import (
    END,
    START,
    CachePolicy,
    Command,
    ReplaceStrategy,
    RetryPolicy,
    StateGraph,
    interrupt,
)

QUICK = RetryPolicy(max_attempts=3, initial_interval=0, jitter=False)


def _thread() -> dict[str, Any]:
    return {"thread_id": uuid.uuid4().hex}


def test_a_failing_task_is_retried_and_only_its_last_attempt_is_kept(
    saver: CheckpointSaver,
) -> None:
    """Two connection errors, then a result: the call returns it, and a resume replays
    it without a fourth attempt."""
    attempts: list[int] = []

    @task(retry=QUICK)
    def fetch(x: int) -> int:
        attempts.append(x)
        if len(attempts) < 3:
            raise ConnectionError("reset by peer")
        return x * 10

    @entrypoint(saver=saver)
    def flow(x: int) -> list[Any]:
        return [fetch(x).result(), interrupt("ok?")]

    config = _thread()
    flow.invoke(4, config)
    assert flow.invoke(Command(resume="yes"), config) == [40, "yes"]
    assert attempts == [4, 4, 4]


def test_errors_a_policy_does_not_retry_fail_at_once_and_the_last_attempt_fails() -> None:
    """The default ``retry_on`` leaves a ``ValueError`` alone; a retried error that keeps
    happening fails after ``max_attempts``."""
    attempts = {"value": 0, "conn": 0}

    @task(retry_policy=QUICK)
    def bad(kind: str) -> None:
        attempts[kind] += 1
        raise ValueError("bad input") if kind == "value" else ConnectionError("down")

    @entrypoint()
    def flow(kind: str) -> None:
        bad(kind).result()

    with pytest.raises(ValueError, match="bad input"):
        flow.invoke("value")
    with pytest.raises(ConnectionError):
        flow.invoke("conn")
    assert attempts == {"value": 1, "conn": 3}


async def test_async_tasks_are_retried_too() -> None:
    """An async task under ``ainvoke``: retried the same way."""
    attempts = []

    @task(retry=[RetryPolicy(retry_on=KeyError, max_attempts=2, initial_interval=0)])
    async def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise KeyError("first")
        return "ok"

    @entrypoint()
    async def flow(_: None) -> str:
        return await flaky()  # type: ignore[no-any-return]

    assert await flow.ainvoke(0) == "ok"
    assert len(attempts) == 2


def test_an_interrupt_is_never_retried() -> None:
    """``interrupt()`` in a retried task pauses the run; it is no failure."""
    asked = []

    @task(retry=RetryPolicy(retry_on=lambda e: True, max_attempts=5, initial_interval=0))
    def ask() -> str:
        asked.append(1)
        return interrupt("?")  # type: ignore[no-any-return]

    @entrypoint(saver=MemorySaver())
    def flow(_: int) -> str:
        return ask().result()

    config = _thread()
    assert "__interrupt__" in flow.invoke(0, config)
    assert asked == [1]
    assert flow.invoke(Command(resume="!"), config) == "!"


def test_options_are_checked() -> None:
    """Wrong types and both spellings at once are refused."""
    with pytest.raises(TypeError, match="RetryPolicy"):
        task(lambda: 1, retry="often")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="CachePolicy"):
        task(lambda: 1, cache=60)  # type: ignore[call-overload]
    with pytest.raises(UserError, match="not both"):
        task(lambda: 1, retry=QUICK, retry_policy=QUICK)  # type: ignore[call-overload]


def test_a_retried_task_numbers_its_subtasks_afresh(saver: CheckpointSaver) -> None:
    """A retried task's second attempt calls its sub-tasks from number 0 again: what its
    failed attempt finished is replayed, and a resume replays the same calls in the same
    order (no replay mismatch, nothing run twice)."""
    ran: list[str] = []
    failures = [ConnectionError("reset by peer")]

    @task
    def fetch() -> str:
        ran.append("fetch")
        return "page"

    @task
    def parse(page: str) -> str:
        ran.append("parse")
        return page.upper()

    @task(retry=QUICK)
    def scrape() -> str:
        page = fetch().result()
        if failures:
            raise failures.pop()
        return parse(page).result()

    @entrypoint(saver=saver)
    def flow(_: int) -> list[str]:
        return [scrape().result(), interrupt("ok?")]

    config = _thread()
    assert "__interrupt__" in flow.invoke(0, config)
    assert flow.invoke(Command(resume="yes"), config) == ["PAGE", "yes"]
    assert ran == ["fetch", "parse"]


def test_a_retried_graph_node_numbers_its_tasks_afresh(saver: CheckpointSaver) -> None:
    """A graph node under a ``RetryPolicy`` that calls tasks: its second attempt numbers
    them from 0 again (as its ``interrupt()`` calls), so the finished ones are replayed and
    a resume after a pause replays the same calls (no replay mismatch, nothing run twice)."""
    ran: list[str] = []
    failures = [ConnectionError("reset by peer")]

    @task
    def fetch() -> str:
        ran.append("fetch")
        return "page"

    @task
    def parse(page: str) -> str:
        ran.append("parse")
        return page.upper()

    def scrape(state: dict[str, Any]) -> dict[str, Any]:
        page = fetch().result()
        if failures:
            raise failures.pop()
        return {"out": [parse(page).result(), interrupt("ok?")]}

    g = StateGraph({"out": ReplaceStrategy()})
    g.add_node("scrape", scrape, retry=QUICK).add_edge(START, "scrape").add_edge("scrape", END)
    graph = g.compile(saver)
    config = _thread()
    assert "__interrupt__" in graph.invoke({"out": None}, config)
    assert graph.invoke(Command(resume="yes"), config)["out"] == ["PAGE", "yes"]
    assert ran == ["fetch", "parse"]


@pytest.fixture(params=["memory", "redis"])
def cache(request: pytest.FixtureRequest) -> Any:
    """A node-result cache: in memory, and on Redis under the test's own prefix."""
    if request.param == "memory":
        return MemoryCache()
    url = request.getfixturevalue("redis_url")
    return RedisCache.from_url(url, prefix=request.getfixturevalue("redis_prefix"))


def test_a_cached_task_runs_once_per_argument_across_threads(
    saver: CheckpointSaver, cache: Any
) -> None:
    """Across threads the same arguments hit the cache; the run still keeps the result,
    so a resume replays it; ``clear_cache`` forgets it."""
    calls: list[int] = []

    @task(cache=CachePolicy())
    def slow_square(x: int) -> int:
        calls.append(x)
        return x * x

    @entrypoint(saver=saver, cache=cache)
    def flow(xs: list[int]) -> list[Any]:
        return [*[slow_square(x).result() for x in xs], interrupt("more?")]

    for _ in range(2):
        config = _thread()
        flow.invoke([2, 3, 2], config)
        assert flow.invoke(Command(resume="done"), config) == [4, 9, 4, "done"]
    assert calls == [2, 3]
    flow.clear_cache()
    flow.invoke([2], _thread())
    assert calls == [2, 3, 2]


async def test_a_cached_async_task(cache: Any) -> None:
    """The async path reads and writes the cache with its async methods."""
    calls = []

    @task(cache_policy=CachePolicy(key_func=lambda x, **_: str(x % 2)))
    async def parity(x: int) -> str:
        calls.append(x)
        return "odd" if x % 2 else "even"

    @entrypoint(cache=cache)
    async def flow(xs: list[int]) -> list[str]:
        return [await parity(x) for x in xs]

    assert await flow.ainvoke([1, 3, 2, 4]) == ["odd", "odd", "even", "even"]
    assert calls == [1, 2]
    await parity.aclear_cache(cache)
    assert await flow.ainvoke([5]) == ["odd"]
    assert calls == [1, 2, 5]
