"""A cluster's executor never loses a cancel, and a stopping one settles nothing it hands over.

Under load a fresh clone's CI saw both go wrong on Redis: a run asked to stop (multitask
``interrupt``) ran to its end, its cancel's pub/sub message having reached nobody; and a
SIGTERMed worker recorded a run ``interrupted`` that it should have left to the others: one
of its loops outlived its cancel (Python 3.11's ``asyncio.wait_for``) and started the runs
it had just handed over, which asyncio.run's teardown then cancelled with no stop asked.
These tests play each fault on purpose, in this process, on Redis and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from _serving import drop_prefix, drop_schema
from redis.exceptions import ConnectionError as RedisConnectionError

from checkpoint import MemorySaver
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.server import Service, postgres_service, redis_service
from graphagent.server._events import LocalEvents

pytestmark = pytest.mark.ours


class Hold:
    """A graph whose one node runs until cancelled, then takes until ``let_go`` to stop
    (a node cleaning up, a step storing what it did)."""

    def __init__(self, slow_stop: bool = False) -> None:
        self.entered = asyncio.Event()
        self.let_go = asyncio.Event()
        self.stopped = False
        if not slow_stop:
            self.let_go.set()

        async def hold(state: Any) -> dict[str, Any]:
            self.entered.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                await self.let_go.wait()
                self.stopped = True
                raise
            return {"log": ["done"]}

        graph = StateGraph({"log": AppendStrategy()}).add_node("hold", hold)
        self.graph = graph.add_edge(START, "hold").add_edge("hold", END).compile(name="hold")


Make = Callable[..., Service]
_BODY = {"assistant_id": "hold", "input": {"log": []}}


@pytest.fixture(params=["redis", "postgres"])
async def make(request: pytest.FixtureRequest) -> AsyncIterator[Make]:
    """Services of one test cluster (its own Redis prefix or PostgreSQL schema)."""
    prefix = f"stops_{uuid.uuid4().hex[:8]}"
    made: list[Service] = []

    def service(graph: Any, lease_ms: int, **options: Any) -> Service:
        if request.param == "redis":
            url = request.getfixturevalue("redis_url")
            one = redis_service([graph], url, prefix=prefix, lease_ms=lease_ms, **options)
        else:
            url = request.getfixturevalue("postgres_url")
            one = postgres_service([graph], url, schema=prefix, lease_ms=lease_ms, **options)
        made.append(one)
        return one

    yield service
    for one in made:
        if not one.queue._closing:  # type: ignore[attr-defined]
            await one.queue.close()
        await one.events.close()
        await one.docs.close()
        await one.saver.aclose()  # type: ignore[attr-defined]
        if one.store is not None:
            one.store.close()
    if request.param == "redis":
        drop_prefix(request.getfixturevalue("redis_url"), prefix)
    else:
        drop_schema(request.getfixturevalue("postgres_url"), prefix)


async def _start_run(service: Service, hold: Hold) -> dict[str, Any]:
    await service.start()
    thread = await service.threads.create("", {})
    run = await service.runs.create("", thread["thread_id"], _BODY)
    await service.runs.submit(run)
    await asyncio.wait_for(hold.entered.wait(), 30)
    return await _run(service, run["run_id"])


async def _run(service: Service, run_id: str) -> dict[str, Any]:
    doc = await service.docs.get("run", run_id)
    assert doc is not None
    return doc


async def _becomes(service: Service, run_id: str, status: str, within: float = 15) -> str:
    """The run's status once it is ``status``, or what it still is after ``within`` s."""
    doc = await _run(service, run_id)
    for _ in range(int(within / 0.05)):
        if doc["status"] == status:
            break
        await asyncio.sleep(0.05)
        doc = await _run(service, run_id)
    return str(doc["status"])


def _drop_cancel_notices(service: Service) -> None:
    """The cancel's message reaches no executor (a pub/sub connection down, a listener
    gone): only what the cancel stored is left."""
    queue: Any = service.queue
    if hasattr(queue, "client"):

        async def publish(channel: Any, message: Any) -> int:
            return 0

        queue.client.publish = publish
    else:
        notify = queue.db.notify

        async def notify_but_cancels(topic: str, payload: str) -> None:
            if topic != "cancel":
                await notify(topic, payload)

        queue.db.notify = notify_but_cancels


async def test_a_cancel_whose_message_is_lost_still_stops_the_run(make: Make) -> None:
    """The executor reads the cancel again as it renews the run's lease."""
    hold = Hold()
    service = make(hold.graph, lease_ms=900)
    run = await _start_run(service, hold)
    _drop_cancel_notices(service)
    await service.runs.stop(run, "interrupt")
    assert await _becomes(service, run["run_id"], "interrupted") == "interrupted"


def _fail_once(service: Service) -> None:
    """The first read of a cancel after this fails (the connection dropped)."""
    queue: Any = service.queue
    failed = False
    if hasattr(queue, "client"):
        get = queue.client.get

        async def get_or_fail(key: Any) -> Any:
            nonlocal failed
            if ":cancel:" in str(key) and not failed:
                failed = True
                raise RedisConnectionError("dropped")
            return await get(key)

        queue.client.get = get_or_fail
    else:
        sql = queue.db.sql

        async def sql_or_fail(query: str, *args: Any) -> Any:
            nonlocal failed
            if "ANY" in query and "cancels" in query and not failed:
                failed = True
                raise OSError("dropped")
            return await sql(query, *args)

        queue.db.sql = sql_or_fail


async def test_a_cancel_listener_that_fails_listens_on(make: Make) -> None:
    """A failure while handling a cancel's message neither ends the listening (which lost
    every later cancel) nor loses that cancel (long leases: no renewal comes meanwhile)."""
    hold = Hold()
    service = make(hold.graph, lease_ms=120_000)
    run = await _start_run(service, hold)
    _fail_once(service)
    await service.runs.stop(run, "interrupt")
    assert await _becomes(service, run["run_id"], "interrupted") == "interrupted"
    hold.entered.clear()
    run2 = await service.runs.create("", run["thread_id"], _BODY)
    await service.runs.submit(run2)
    await asyncio.wait_for(hold.entered.wait(), 30)
    await service.runs.stop(await _run(service, run2["run_id"]), "interrupt")
    assert await _becomes(service, run2["run_id"], "interrupted") == "interrupted"


async def test_a_stopping_executor_starts_no_run_and_settles_none(make: Make) -> None:
    """Its loops going round once more after their cancel (the race in Python 3.11's
    ``wait_for``) start nothing, and what asyncio.run's teardown cancels then is handed
    over: the run stays ``running`` for another executor to resume."""
    hold = Hold()
    service = make(hold.graph, lease_ms=900)
    run = await _start_run(service, hold)
    queue: Any = service.queue
    loops = [queue._take, *([queue._reclaim] if hasattr(queue, "_reclaim") else [])]
    await queue.close()
    started = []
    execute = service.executor.execute

    async def counted(run_id: str, **options: Any) -> bool:
        started.append(run_id)
        return await execute(run_id, **options)

    service.executor.execute = counted  # type: ignore[method-assign]
    again = [asyncio.ensure_future(loop()) for loop in loops]  # the cancel swallowed
    await asyncio.wait(again, timeout=2)  # past the run's lease: free to take again
    for task in asyncio.all_tasks() - {asyncio.current_task()}:  # asyncio.run's teardown
        if task in again or "execute" in repr(task.get_coro()):
            task.cancel()
    await asyncio.wait(again)
    await asyncio.sleep(0.2)
    assert started == []
    assert (await _run(service, run["run_id"]))["status"] == "running"
    assert not await service.events.ended(run["run_id"])


async def test_a_stopping_executor_frees_the_thread_once_its_run_stopped(make: Make) -> None:
    """A run stopping slowly (its node cleans up) keeps its thread's lease until it has
    stopped writing: the executor that takes the run over never runs beside it."""
    hold = Hold(slow_stop=True)
    service = make(hold.graph, lease_ms=900)
    run = await _start_run(service, hold)
    closing = asyncio.ensure_future(service.queue.close())
    await asyncio.wait({closing}, timeout=1)
    assert not closing.done(), "the stop let the lease go while the run still ran"
    assert not hold.stopped
    hold.let_go.set()
    await closing
    assert hold.stopped
    assert (await _run(service, run["run_id"]))["status"] == "running"  # handed over


async def test_a_run_cancelled_with_no_stop_asked_once_its_executor_stops_is_left() -> None:
    """What asyncio.run's teardown cancels after a shared executor began stopping is left
    to the other executors, not recorded ``interrupted``."""
    hold = Hold()
    service = Service([hold.graph], MemorySaver(), events=LocalEvents())
    service.executor.shared = True
    thread = await service.threads.create("", {})
    run = await service.runs.create("", thread["thread_id"], _BODY)
    task = asyncio.ensure_future(service.executor.execute(run["run_id"]))  # not in tasks
    await asyncio.wait_for(hold.entered.wait(), 30)
    await service.executor.abandon([])
    task.cancel()
    assert await asyncio.gather(task, return_exceptions=True) == [True]
    assert (await _run(service, run["run_id"]))["status"] == "running"
    assert not await service.events.ended(run["run_id"])
    await service.docs.close()
