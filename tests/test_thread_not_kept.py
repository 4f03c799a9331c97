"""A thread_id given to an agent without a saver is warned of once, at the caller's line."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.errors import ThreadNotKeptWarning
from graphagent.models import FakeChatModel


def test_once_per_agent_at_the_callers_line() -> None:
    """call/invoke/stream/acall on one saverless agent warn once, pointing at this file;
    another agent warns again; without a thread_id, or with a saver, nothing is said."""
    agent = ReactAgent(name="forgetful", model=FakeChatModel(["a"] * 6))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        agent.call("one", thread_id="t")
        agent.invoke("two", thread_id="t")
        list(agent.stream("three", thread_id="t"))
        asyncio.run(agent.acall("four", thread_id="t"))
        agent.call("no thread")
    assert [w.category for w in seen] == [ThreadNotKeptWarning]
    assert seen[0].filename == __file__  # the user's call, not graphagent's insides
    assert "agent 'forgetful' has no saver, so thread 't' is not kept" in str(seen[0].message)
    assert "saver=" in str(seen[0].message)

    other = ReactAgent(name="other", model=FakeChatModel(["a"]))
    with pytest.warns(ThreadNotKeptWarning, match="'other'"):
        list(other.stream("hi", config={"thread_id": "via-config"}))

    kept = ReactAgent(name="kept", model=FakeChatModel(["a"]), saver=MemorySaver())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept.call("hi", thread_id="t")


def test_it_is_a_user_warning_that_can_be_filtered() -> None:
    """The category is a UserWarning subclass, so one filter line silences it."""
    assert issubclass(ThreadNotKeptWarning, UserWarning)
    agent = ReactAgent(name="quiet", model=FakeChatModel(["a"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=ThreadNotKeptWarning)
        agent.call("hi", thread_id="t")
