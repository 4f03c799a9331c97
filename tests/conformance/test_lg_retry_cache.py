"""Retry and cache policies, ported from LangGraph's libs/langgraph/tests/test_retry.py and
test_pregel.py (``test_in_one_fan_out_state_graph_waiting_edge_multiple`` with a cache).

Caches run on memory, SQLite and Redis; persistence checks on every saver; runs through
``invoke`` and ``ainvoke``. Deliberate differences (docs/coming-from.md): a policy is
checked when it is made (a bad ``retry_on`` is a ``ValueError`` at once); jitter adds up
to one interval (LangGraph adds up to one second); the node's attempt number is in its
span and the debug stream, not in a runtime object.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypedDict
from unittest.mock import patch

import pytest
import redis
from _support import thread

from checkpoint.base import CheckpointSaver
from checkpoint.cache import BaseCache, MemoryCache, RedisCache, SqliteCache
from graphagent.graph import (
    END,
    START,
    CachePolicy,
    Command,
    GraphLifecycleListener,
    RetryPolicy,
    Send,
    StateGraph,
    default_retry_on,
    interrupt,
)
from graphagent.observability import NodeInfo, listening

Run = Callable[..., Any]


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Run:
    """``invoke`` or ``ainvoke``, by parameter."""
    if request.param == "sync":
        return lambda app, value, config=None: app.invoke(value, config)
    return lambda app, value, config=None: asyncio.run(app.ainvoke(value, config))


@pytest.fixture(params=["memory", "sqlite", "redis"])
def cache(request: pytest.FixtureRequest) -> Iterator[BaseCache]:
    """Each node-result cache in turn."""
    if request.param == "memory":
        yield MemoryCache()
    elif request.param == "sqlite":
        with SqliteCache(request.getfixturevalue("tmp_path") / "cache.sqlite") as c:
            yield c
    else:
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        c = RedisCache(redis.Redis.from_url(url), prefix=prefix)
        yield c
        c.close()


class Foo(TypedDict):
    foo: str


# -- retry_on ----------------------------------------------------------------------------


# origin: langgraph tests/test_retry.py::test_should_retry_on_single_exception,
# test_should_retry_on_sequence_of_exceptions, test_should_retry_on_subclass_of_exception,
# test_should_retry_on_callable, test_should_retry_on_empty_sequence
def test_retry_on_forms() -> None:
    """retry_on takes a class, a sequence of classes (subclasses count) or a predicate."""
    assert RetryPolicy(retry_on=ValueError).retries(ValueError("x"))
    assert not RetryPolicy(retry_on=ValueError).retries(KeyError("x"))
    both = RetryPolicy(retry_on=(ValueError, KeyError))
    assert both.retries(KeyError("x")) and not both.retries(TypeError("x"))

    class Custom(ValueError):
        pass

    assert RetryPolicy(retry_on=ValueError).retries(Custom("x"))
    picky = RetryPolicy(retry_on=lambda e: "retry" in str(e))
    assert picky.retries(RuntimeError("please retry")) and not picky.retries(RuntimeError("no"))
    assert not RetryPolicy(retry_on=()).retries(ValueError("x"))
    assert not RetryPolicy().retries(KeyboardInterrupt())  # type: ignore[arg-type]


# origin: langgraph tests/test_retry.py::test_should_retry_on_invalid_type
def test_retry_policy_refuses_bad_settings_when_made() -> None:
    """A retry_on that is neither classes nor a predicate, or no attempt at all, is a
    ValueError naming the field (graphagent checks at once, not at the first failure)."""
    with pytest.raises(ValueError, match="retry_on"):
        RetryPolicy(retry_on=123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="initial_interval"):
        RetryPolicy(initial_interval=-1)


# origin: langgraph tests/test_retry.py::test_should_retry_default_retry_on
def test_default_retry_on() -> None:
    """Transient failures are retried, programming mistakes are not."""
    import httpx

    from graphagent.errors import ModelHTTPError, ModelTimeoutError, UserError

    request = httpx.Request("GET", "https://example.invalid")
    assert default_retry_on(ConnectionError())
    assert default_retry_on(
        httpx.HTTPStatusError("x", request=request, response=httpx.Response(503))
    )
    assert not default_retry_on(
        httpx.HTTPStatusError("x", request=request, response=httpx.Response(404))
    )
    assert default_retry_on(ModelHTTPError("x", status_code=502))
    assert not default_retry_on(ModelHTTPError("x", status_code=401))
    assert default_retry_on(ModelTimeoutError("x"))
    for exc in (ValueError(), TypeError(), KeyError(), ZeroDivisionError(), RuntimeError()):
        assert not default_retry_on(exc)
    assert not default_retry_on(UserError("x"))

    class Unknown(Exception):
        pass

    assert default_retry_on(Unknown())


# -- retrying nodes ----------------------------------------------------------------------


# origin: langgraph tests/test_retry.py::test_graph_with_single_retry_policy
def test_graph_with_single_retry_policy() -> None:
    """The node is tried max_attempts times with growing pauses; the graph goes on."""
    attempts = 0

    def failing_node(state: Any) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ValueError("Intentional failure")
        return {"foo": "success"}

    policy = RetryPolicy(
        max_attempts=3, initial_interval=0.01, backoff_factor=2.0, jitter=False, retry_on=ValueError
    )
    g = StateGraph(Foo).add_node("failing_node", failing_node, retry_policy=policy)
    g.add_node("other_node", lambda s: {"foo": "other_node"}).add_edge(START, "failing_node")
    app = g.add_edge("failing_node", "other_node").add_edge("other_node", END).compile()
    with patch("time.sleep") as sleep:
        assert app.invoke({"foo": ""}) == {"foo": "other_node"}
    assert attempts == 3
    assert [c.args[0] for c in sleep.call_args_list] == [0.01, 0.02]


# origin: langgraph tests/test_retry.py::test_graph_with_jitter_retry_policy
def test_graph_with_jitter_retry_policy() -> None:
    """Jitter adds a random part of up to one interval (LangGraph: up to one second)."""
    attempts = 0

    def failing_node(state: Any) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        if attempts < 2:
            raise ValueError("Intentional failure")
        return {"foo": "success"}

    policy = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=True, retry_on=ValueError)
    g = StateGraph(Foo).add_node("failing_node", failing_node, retry=policy)
    app = g.add_edge(START, "failing_node").add_edge("failing_node", END).compile()
    with (
        patch("random.uniform", return_value=0.005) as uniform,
        patch("time.sleep") as sleep,
    ):
        assert app.invoke({"foo": ""}) == {"foo": "success"}
    uniform.assert_called_with(0, 0.01)
    sleep.assert_called_with(0.015)


# origin: langgraph tests/test_retry.py::test_graph_with_multiple_retry_policies
def test_graph_with_multiple_retry_policies() -> None:
    """Of several policies, the first whose retry_on takes the error applies."""

    class State(TypedDict):
        foo: str
        error_type: str

    counts = {"value_error": 0, "key_error": 0}

    def failing_node(state: Any) -> dict[str, Any]:
        kind = state["error_type"]
        counts[kind] += 1
        if kind == "value_error" and counts[kind] < 2:
            raise ValueError("Value error")
        if kind == "key_error" and counts[kind] < 3:
            raise KeyError("Key error")
        return {"foo": f"recovered_from_{kind}"}

    policies = (
        RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False, retry_on=ValueError),
        RetryPolicy(max_attempts=3, initial_interval=0.02, jitter=False, retry_on=KeyError),
    )
    g = StateGraph(State).add_node("failing_node", failing_node, retry_policy=policies)
    app = g.add_edge(START, "failing_node").add_edge("failing_node", END).compile()
    with patch("time.sleep"):
        assert app.invoke({"foo": "", "error_type": "value_error"})["foo"] == (
            "recovered_from_value_error"
        )
        assert app.invoke({"foo": "", "error_type": "key_error"})["foo"] == (
            "recovered_from_key_error"
        )
    assert counts == {"value_error": 2, "key_error": 3}


# origin: langgraph tests/test_retry.py::test_graph_with_max_attempts_exceeded
def test_graph_with_max_attempts_exceeded(run: Run) -> None:
    """When attempts run out, the last error ends the run, naming the node."""
    calls = []

    def always_failing(state: Any) -> dict[str, Any]:
        calls.append(1)
        raise ValueError("Always fails")

    policy = RetryPolicy(max_attempts=2, initial_interval=0.001, jitter=False, retry_on=ValueError)
    g = StateGraph(Foo).add_node("always_failing", always_failing, retry=policy)
    app = g.add_edge(START, "always_failing").add_edge("always_failing", END).compile()
    with pytest.raises(ValueError, match="Always fails") as info:
        run(app, {"foo": ""})
    assert info.value.graphagent_node == "always_failing"  # type: ignore[attr-defined]
    assert len(calls) == 2


# origin: langgraph tests/test_retry.py::test_set_node_defaults_retry_policy,
# test_set_node_defaults_retry_policy_per_node_wins
def test_graph_default_retry_policy_and_per_node_override(run: Run) -> None:
    """compile(retry=...) covers every node without a policy of its own."""
    calls = {"a": 0, "b": 0}

    def flaky(name: str, fails: int) -> Callable[[Any], dict[str, Any]]:
        def node(state: Any) -> dict[str, Any]:
            calls[name] += 1
            if calls[name] <= fails:
                raise ConnectionError("reset")
            return {name: calls[name]}

        return node

    g = StateGraph().add_node("a", flaky("a", 2))
    g.add_node("b", flaky("b", 1), retry=RetryPolicy(max_attempts=1))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(retry=RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False))
    with pytest.raises(ConnectionError):
        run(app, {})
    assert calls == {"a": 3, "b": 1}


def test_interrupt_is_never_retried(saver: CheckpointSaver, run: Run) -> None:
    """A node under a retry policy that calls interrupt() pauses once; the resume runs it
    again once, with its answer."""
    calls: list[str] = []

    def ask(state: Any) -> dict[str, Any]:
        calls.append("ask")
        return {"foo": interrupt("name?")}

    policy = RetryPolicy(max_attempts=5, initial_interval=0.001, retry_on=Exception)
    g = StateGraph(Foo).add_node("ask", ask, retry=policy).add_edge(START, "ask")
    app = g.add_edge("ask", END).compile(saver=saver)
    cfg = thread()
    assert run(app, {"foo": ""}, cfg)["__interrupt__"][0].value == "name?"
    assert calls == ["ask"]
    assert run(app, Command(resume="ann"), cfg) == {"foo": "ann"}
    assert calls == ["ask", "ask"]


def test_retried_attempts_are_not_checkpointed(saver: CheckpointSaver, run: Run) -> None:
    """Attempts happen inside their step: the history is that of a run without failures."""
    attempts = []

    def flaky(state: Any) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("reset")
        return {"foo": "ok"}

    policy = RetryPolicy(initial_interval=0.001, jitter=False)
    g = StateGraph(Foo).add_node("flaky", flaky, retry=policy).add_edge(START, "flaky")
    app = g.add_edge("flaky", END).compile(saver=saver)
    cfg = thread()
    assert run(app, {"foo": ""}, cfg) == {"foo": "ok"}
    history = app.get_state_history(cfg)
    assert [s.metadata["source"] for s in history] == ["loop", "input"]
    assert len(attempts) == 3


def test_each_attempt_is_logged_traced_and_streamed(caplog: pytest.LogCaptureFixture) -> None:
    """Each retried attempt is a warning on graphagent.graph, a node span with its attempt
    number, and a task_retry debug event."""
    attempts = []

    def flaky(state: Any) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError(f"reset {len(attempts)}")
        return {"foo": "ok"}

    seen: list[tuple[str, int]] = []

    class Spans(GraphLifecycleListener):
        def on_node_start(self, node: NodeInfo) -> None:
            seen.append((node.name, node.attempt))

    policy = RetryPolicy(initial_interval=0.001, jitter=False)
    g = StateGraph(Foo).add_node("flaky", flaky, retry=policy).add_edge(START, "flaky")
    app = g.add_edge("flaky", END).compile()
    with caplog.at_level(logging.WARNING, logger="graphagent.graph"), listening(Spans()):
        events = list(app.stream({"foo": ""}, mode="debug"))
    retries = [e for e in events if e["type"] == "task_retry"]
    assert [(e["node"], e["attempt"], e["error"]) for e in retries] == [
        ("flaky", 1, "ConnectionError: reset 1"),
        ("flaky", 2, "ConnectionError: reset 2"),
    ]
    assert seen == [("flaky", 1), ("flaky", 2), ("flaky", 3)]
    logged = [r.getMessage() for r in caplog.records if r.name == "graphagent.graph"]
    assert len(logged) == 2 and "attempt 1 of 3" in logged[0] and "'flaky'" in logged[0]


async def test_async_retry_sleeps_without_blocking_the_loop() -> None:
    """Under ainvoke the pause is an asyncio sleep: other tasks run meanwhile."""
    attempts = []

    async def flaky(state: Any) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 2:
            raise ConnectionError("reset")
        return {"foo": "ok"}

    policy = RetryPolicy(initial_interval=0.05, jitter=False)
    g = StateGraph(Foo).add_node("flaky", flaky, retry=policy).add_edge(START, "flaky")
    app = g.add_edge("flaky", END).compile()
    ticks = []

    async def ticker() -> None:
        for _ in range(3):
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    out, _ = await asyncio.gather(app.ainvoke({"foo": ""}), ticker())
    assert out == {"foo": "ok"} and len(ticks) == 3


def test_retry_of_a_send_task_retries_that_task_only(run: Run) -> None:
    """In a fan-out, a failing Send task is retried alone with its own input."""
    calls: list[int] = []

    class S(TypedDict):
        xs: list[int]
        ys: Annotated[list[int], operator.add]

    def square(s: Any) -> dict[str, Any]:
        calls.append(s["x"])
        if s["x"] == 2 and calls.count(2) < 2:
            raise ConnectionError("reset")
        return {"ys": [s["x"] ** 2]}

    policy = RetryPolicy(initial_interval=0.001, jitter=False)
    g = StateGraph(S).add_node("square", square, retry=policy)
    g.add_conditional_edges(START, lambda s: [Send("square", {"x": x}) for x in s["xs"]])
    app = g.add_edge("square", END).compile()
    assert run(app, {"xs": [1, 2, 3]})["ys"] == [1, 4, 9]
    assert sorted(calls) == [1, 2, 2, 3]


# -- caching -----------------------------------------------------------------------------


def sorted_add(x: list[str], y: list[str]) -> list[str]:
    return sorted(operator.add(x, y))


class DocsState(TypedDict, total=False):
    query: str
    answer: str
    docs: Annotated[list[str], sorted_add]


# origin: langgraph tests/test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_multiple
# (with_cache=True)
def test_cached_node_in_a_loop(cache: BaseCache) -> None:
    """A cached node called again with an equal input is not run; its update is streamed
    with LangGraph's ``__metadata__: {"cached": True}`` mark; clear_cache forgets.
    (graphagent streams a step's updates in node-name order, LangGraph as they finish.)"""
    count = 0

    def rewrite_query(data: Any) -> dict[str, Any]:
        nonlocal count
        count += 1
        return {"query": f"query: {data['query']}"}

    def decider_cond(data: Any) -> str:
        return "qa" if data["query"].count("analyzed") > 1 else "rewrite_query"

    g = StateGraph(DocsState)
    g.add_node("rewrite_query", rewrite_query, cache_policy=CachePolicy())
    g.add_node("analyzer_one", lambda d: {"query": f"analyzed: {d['query']}"})
    g.add_node("retriever_one", lambda d: {"docs": ["doc1", "doc2"]})
    g.add_node("retriever_two", lambda d: {"docs": ["doc3", "doc4"]})
    g.add_node("decider", lambda d: None)
    g.add_node("qa", lambda d: {"answer": ",".join(d["docs"])})
    g.set_entry_point("rewrite_query")
    g.add_edge("rewrite_query", "analyzer_one").add_edge("analyzer_one", "retriever_one")
    g.add_edge("rewrite_query", "retriever_two")
    g.add_edge(["retriever_one", "retriever_two"], "decider")
    g.add_conditional_edges("decider", decider_cond, ["qa", "rewrite_query"])
    app = g.set_finish_point("qa").compile(cache=cache)
    final = {
        "query": "analyzed: query: analyzed: query: what is weather in sf",
        "answer": "doc1,doc1,doc2,doc2,doc3,doc3,doc4,doc4",
        "docs": ["doc1", "doc1", "doc2", "doc2", "doc3", "doc3", "doc4", "doc4"],
    }
    assert app.invoke({"query": "what is weather in sf"}) == final
    assert count == 2
    assert [*app.stream({"query": "what is weather in sf"})] == [
        {
            "rewrite_query": {"query": "query: what is weather in sf"},
            "__metadata__": {"cached": True},
        },
        {"analyzer_one": {"query": "analyzed: query: what is weather in sf"}},
        {"retriever_two": {"docs": ["doc3", "doc4"]}},
        {"retriever_one": {"docs": ["doc1", "doc2"]}},
        {"decider": None},
        {
            "rewrite_query": {"query": "query: analyzed: query: what is weather in sf"},
            "__metadata__": {"cached": True},
        },
        {"analyzer_one": {"query": "analyzed: query: analyzed: query: what is weather in sf"}},
        {"retriever_two": {"docs": ["doc3", "doc4"]}},
        {"retriever_one": {"docs": ["doc1", "doc2"]}},
        {"decider": None},
        {"qa": {"answer": "doc1,doc1,doc2,doc2,doc3,doc3,doc4,doc4"}},
    ]
    assert count == 2
    app.clear_cache()
    assert app.invoke({"query": "what is weather in sf"}) == final
    assert count == 4


def test_cache_is_shared_across_threads_and_runs(
    cache: BaseCache, saver: CheckpointSaver, run: Run
) -> None:
    """A result cached on one thread answers another thread's equal input; key_func
    picks what counts as equal; clear_cache(nodes) forgets only those nodes."""
    calls: list[str] = []

    class S(TypedDict, total=False):
        user: str
        noise: int
        greeting: str
        shout: str

    def greet(s: Any) -> dict[str, Any]:
        calls.append("greet")
        return {"greeting": f"hello {s['user']}"}

    def shout(s: Any) -> dict[str, Any]:
        calls.append("shout")
        return {"shout": s["greeting"].upper()}

    by_user = CachePolicy(key_func=lambda s: s["user"])
    g = StateGraph(S).add_node("greet", greet, cache=by_user)
    g.add_node("shout", shout, cache=CachePolicy()).add_edge(START, "greet")
    app = g.add_edge("greet", "shout").add_edge("shout", END).compile(saver=saver, cache=cache)
    assert run(app, {"user": "ann", "noise": 1}, thread())["shout"] == "HELLO ANN"
    assert run(app, {"user": "ann", "noise": 2}, thread())["shout"] == "HELLO ANN"
    assert calls == ["greet", "shout", "shout"]  # shout's input differs (noise)
    assert run(app, {"user": "bob"}, thread())["greeting"] == "hello bob"
    calls.clear()
    app.clear_cache(["greet"])
    run(app, {"user": "ann", "noise": 2}, thread())
    assert calls == ["greet"]  # shout's result for that input is still cached


def test_cache_ttl_expires(cache: BaseCache, run: Run) -> None:
    """A cached result is reused until its ttl has passed."""
    calls = []

    def node(s: Any) -> dict[str, Any]:
        calls.append(1)
        return {"y": s["x"] + 1}

    g = StateGraph().add_node("n", node, cache=CachePolicy(ttl=0.3)).add_edge(START, "n")
    app = g.add_edge("n", END).compile(cache=cache)
    assert run(app, {"x": 1}) == {"x": 1, "y": 2}
    assert run(app, {"x": 1}) == {"x": 1, "y": 2}
    assert len(calls) == 1
    time.sleep(0.4)
    run(app, {"x": 1})
    assert len(calls) == 2


def test_cached_send_tasks_and_commands(cache: BaseCache, run: Run) -> None:
    """Send tasks cache by their own arg; a cached Command keeps its goto."""
    calls: list[int] = []

    class S(TypedDict, total=False):
        xs: list[int]
        ys: Annotated[list[int], operator.add]
        done: bool

    def square(s: Any) -> Command:
        calls.append(s["x"])
        return Command(update={"ys": [s["x"] ** 2]}, goto="finish")

    g = StateGraph(S).add_node("square", square, cache=CachePolicy(), destinations=["finish"])
    g.add_node("finish", lambda s: {"done": True})
    g.add_conditional_edges(START, lambda s: [Send("square", {"x": x}) for x in s["xs"]])
    app = g.add_edge("finish", END).compile(cache=cache)
    assert run(app, {"xs": [1, 2]}) == {"xs": [1, 2], "ys": [1, 4], "done": True}
    assert run(app, {"xs": [2, 3]}) == {"xs": [2, 3], "ys": [4, 9], "done": True}
    assert calls == [1, 2, 3]


def test_cache_refuses_bad_settings() -> None:
    """A bad policy or cache names what to pass instead."""
    from graphagent.errors import GraphValidationError

    with pytest.raises(ValueError, match="ttl"):
        CachePolicy(ttl=0)
    with pytest.raises(ValueError, match="key_func"):
        CachePolicy(key_func="user")  # type: ignore[arg-type]
    g = StateGraph().add_node("n", lambda s: None, cache=CachePolicy()).add_edge(START, "n")
    with pytest.raises(GraphValidationError, match=r"compile\(cache=\.\.\.\) takes a cache"):
        g.add_edge("n", END).compile(cache={})  # type: ignore[arg-type]
    bad = StateGraph().add_node("n", lambda s: None, cache=60)  # type: ignore[arg-type]
    with pytest.raises(GraphValidationError, match="cache= takes a CachePolicy"):
        bad.add_edge(START, "n").add_edge("n", END).compile()


# origin: LangGraph's behaviour (its runtime hands the parent's cache to subgraphs through
# the config); written for graphagent, no single LangGraph test
def test_a_subgraph_uses_its_parents_cache(cache: BaseCache, run: Run) -> None:
    """A subgraph compiled without a cache keeps its cached nodes' results in the
    parent's; clear_cache() on the parent clears them too; a subgraph with a cache of
    its own keeps using that one."""
    calls: list[str] = []

    def double(s: Any) -> dict[str, Any]:
        calls.append("double")
        return {"y": s["x"] * 2}

    sub = StateGraph().add_node("double", double, cache=CachePolicy()).add_edge(START, "double")
    child = sub.add_edge("double", END).compile()
    parent = StateGraph().add_node("child", child).add_edge(START, "child")
    app = parent.add_edge("child", END).compile(cache=cache)
    assert run(app, {"x": 2}) == {"x": 2, "y": 4}
    assert run(app, {"x": 2}) == {"x": 2, "y": 4}
    assert calls == ["double"]  # the second run's subgraph node was a cache hit
    app.clear_cache()
    run(app, {"x": 2})
    assert calls == ["double", "double"]
    own = MemoryCache()
    child_own = sub.compile(cache=own)
    parent2 = StateGraph().add_node("child", child_own).add_edge(START, "child")
    app2 = parent2.add_edge("child", END).compile(cache=cache)
    run(app2, {"x": 5})
    run(app2, {"x": 5})
    assert calls == ["double", "double", "double"]
    child_own.clear_cache()
    run(app2, {"x": 5})
    assert calls == ["double"] * 4  # it was in the subgraph's own cache
