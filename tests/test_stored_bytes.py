"""Stored bytes never crash or exhaust a reader, on every saver: too-deep values, damaged
or tampered records and ranges, and any Python string (lone surrogates included)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import msgpack
import pytest
from _stores import Store
from _tamper import data, set_data

from checkpoint import SerializationError as CheckpointSerializationError
from checkpoint.base import CheckpointSaver
from checkpoint.serde import MAX_DEPTH
from graphagent.errors import SerializationError
from graphagent.graph import END, START, StateGraph


def deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = (value,)
    return value


def test_a_node_returning_too_deep_a_value_fails_its_step_and_keeps_the_last_checkpoint(
    saver: CheckpointSaver,
) -> None:
    """The step fails naming the depth limit; the thread stays at its last good checkpoint
    and can be read and continued."""
    g = StateGraph()
    g.add_node("a", lambda s: {"x": 1})
    g.add_node("b", lambda s: {"x": 2, "tree": deep(250) if s.get("deep", True) else "ok"})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=saver)
    cfg = {"thread_id": "deep"}
    with pytest.raises(SerializationError, match=rf"more than {MAX_DEPTH} levels deep"):
        app.invoke({"x": 0}, cfg)
    state = app.get_state(cfg)
    assert state.values == {"x": 1} and state.next == ("b",)
    history = app.get_state_history(cfg)
    assert [h.values.get("x") for h in history] == [1, 0]
    app.update_state(cfg, {"deep": False})
    assert app.invoke(None, cfg)["tree"] == "ok"


_READ_TAMPERED = """
import sys
sys.path.insert(0, {tests!r})
from _stores import Store
from checkpoint import SerializationError
saver = Store(*sys.argv[1:4]).open()
try:
    saver.get("t")
    print("loaded")
except SerializationError as exc:
    print("refused" if "100 levels deep" in str(exc) else repr(exc))
"""


def test_tampered_deep_bytes_in_a_store_are_refused_by_a_reader(store: Store) -> None:
    """A 1 KB field nesting 250 frames, written straight into the store, makes the next read
    raise SerializationError; the reader (a child process: the bug was a SIGSEGV) lives."""
    saver = store.open()
    g = StateGraph()
    g.add_node("a", lambda s: {"items": [*s.get("items", []), ("x",)]})
    g.add_edge(START, "a").add_edge("a", END)
    g.compile(saver=saver).invoke({"items": []}, {"thread_id": "t"})
    evil = msgpack.packb([])
    for _ in range(250):
        evil = msgpack.packb(msgpack.ExtType(1, evil))
    assert len(evil) < 1024
    for field in data(saver, "t"):
        set_data(saver, "t", field, evil)
    saver.close()  # type: ignore[attr-defined]
    tests = str(__import__("pathlib").Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", _READ_TAMPERED.format(tests=tests), *store.argv()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "refused"
    assert issubclass(SerializationError, CheckpointSerializationError)
