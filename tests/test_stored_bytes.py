"""Stored bytes never crash or exhaust a reader, on every saver: too-deep values, damaged
or tampered records and ranges, and any Python string (lone surrogates included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from _stores import Store, close
from _tamper import data, records, set_data, set_record, set_writes
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from checkpoint import CheckpointError, CheckpointNotFoundError, PendingWrite, serde
from checkpoint import SerializationError as CheckpointSerializationError
from checkpoint.base import CheckpointSaver, CheckpointWrite, new_checkpoint_id
from checkpoint.redis._keys import escape_thread_id, unescape_thread_id
from checkpoint.serde import MAX_DEPTH
from graphagent.agent import ReactAgent
from graphagent.errors import SerializationError
from graphagent.graph import END, START, StateGraph
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel


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
from _stores import Store, close
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
    close(saver)
    tests = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", _READ_TAMPERED.format(tests=tests), *store.argv()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "refused"
    assert issubclass(SerializationError, CheckpointSerializationError)


# what os.listdir gives for a Latin-1 file name on a UTF-8 system, and JSON's escapes
LATIN1_NAME = os.fsdecode(b"caf\xe9.txt")
JSON_SURROGATE = json.loads('"\\ud800 and \\udfff"')


def test_lone_surrogates_in_thread_ids_state_and_tool_results_round_trip(
    saver: CheckpointSaver,
) -> None:
    """A ReactAgent whose tool lists Latin-1 file names, on a thread whose id came from JSON,
    stores every step; the state, the history and the thread list give the strings back."""
    assert LATIN1_NAME == "caf\udce9.txt"

    def list_files() -> str:
        """List the files."""
        return f"{LATIN1_NAME}, {JSON_SURROGATE}"

    call = AssistantMessage(
        "", tool_calls=(ToolCall(id="c\ud800", name="list_files", arguments="{}"),)
    )
    model = FakeChatModel([call, f"found {LATIN1_NAME}"])
    agent = ReactAgent(name="files", model=model, tools=[list_files], saver=saver)
    thread = f"user-{JSON_SURROGATE}"
    out = agent.invoke("which files?", {"thread_id": thread})
    assert out["messages"][-1].text == f"found {LATIN1_NAME}"
    cp = saver.get(thread)
    assert cp is not None and cp.thread_id == thread
    texts = [m.text for m in cp.values["messages"]]
    assert f"{LATIN1_NAME}, {JSON_SURROGATE}" in texts
    assert cp.values["messages"][1].tool_calls[0].id == "c\ud800"
    assert thread in saver.threads()  # type: ignore[attr-defined]
    assert len(saver.list(thread)) >= 3
    saver.delete_thread(thread)
    assert saver.get(thread) is None


def write(parent: str | None, changes: dict[str, Any], metadata: Any = None) -> CheckpointWrite:
    return CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=0,
        changes=changes,
        next=(),
        metadata={"source": "test", "note": metadata},
        created_at=time.time(),
    )


# every code point, lone surrogates included (st.text() leaves them out), often enough
any_text = st.text(
    st.characters(exclude_categories=()) | st.characters(categories=["Cs"]), max_size=12
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(thread="t\ud800", value="\udcff", key="k\x00\udc80")
@example(thread="%u00{", value="", key="")
@given(thread=any_text, value=any_text, key=any_text.filter(lambda k: "|" not in k))
def test_any_str_is_a_thread_id_a_state_key_and_a_value(
    saver: CheckpointSaver, thread: str, value: str, key: str
) -> None:
    """Arbitrary str (lone surrogates, NUL, separators) stores and comes back exactly."""
    first = write(None, {key: ("set", value), "log": ("append", [value, {value: key}])}, value)
    saver.put(thread, first, expected_head=None)
    saver.put_writes(thread, first.id, [PendingWrite(key, "update", value)])
    cp = saver.get(thread)
    assert cp is not None and cp.thread_id == thread
    assert cp.values == {key: value, "log": [value, {value: key}]}
    assert cp.metadata["note"] == value
    assert [(w.task, w.value) for w in cp.pending_writes] == [(key, value)]
    assert thread in saver.threads()  # type: ignore[attr-defined]
    with pytest.raises(CheckpointNotFoundError):
        saver.get(thread, f"no-{value}")
    saver.delete_thread(thread)
    assert saver.get(thread) is None


@given(a=any_text, b=any_text)
def test_redis_thread_id_escaping_is_injective_and_reversible(a: str, b: str) -> None:
    """Distinct thread ids never share Redis keys, and threads() gives each back as it was."""
    assert unescape_thread_id(escape_thread_id(a)) == a
    escape_thread_id(a).encode()  # strict UTF-8, as redis-py encodes keys: never raises
    if a != b:
        assert escape_thread_id(a) != escape_thread_id(b)


def two_steps(saver: CheckpointSaver, thread: str = "t") -> list[str]:
    """A thread of two checkpoints holding a set key and a list; their ids, oldest first."""
    first = write(None, {"x": ("set", 1), "log": ("append", ["a"])})
    saver.put(thread, first, expected_head=None)
    second = write(first.id, {"x": ("set", 2), "log": ("append", ["b"])})
    saver.put(thread, second, expected_head=first.id)
    return [first.id, second.id]


def _edit(plain: list[Any], index: int, value: Any) -> list[Any]:
    edited = list(plain)
    edited[index] = value
    return edited


# record fields: 0 layout, 1 id, 2 parent, 3 step, 4 created, 5 next, 6 metadata, 7 extra,
# 8 vals, 9 logs, 10 own
WRONG_SHAPES: dict[str, Any] = {
    "not a list": lambda rec, other: "a string",
    "too short": lambda rec, other: rec[:4],
    "layout a bool": lambda rec, other: _edit(rec, 0, True),
    "id a number": lambda rec, other: _edit(rec, 1, 7),
    "another's id": lambda rec, other: _edit(rec, 1, other),
    "step text": lambda rec, other: _edit(rec, 3, "1"),
    "next a string": lambda rec, other: _edit(rec, 5, "abc"),
    "metadata a list": lambda rec, other: _edit(rec, 6, []),
    "vals to numbers": lambda rec, other: _edit(rec, 8, {"x": 5}),
    "logs a string": lambda rec, other: _edit(rec, 9, "log"),
    "range a string": lambda rec, other: _edit(rec, 9, {"log": ["b"]}),
    "range start text": lambda rec, other: _edit(rec, 9, {"log": [["b", "0", 1]]}),
    "range backwards": lambda rec, other: _edit(rec, 9, {"log": [["b", 5, 1]]}),
    "range negative": lambda rec, other: _edit(rec, 9, {"log": [["b", -3, 1]]}),
    "own a string": lambda rec, other: _edit(rec, 10, "b"),
}


@pytest.mark.parametrize("shape", sorted(WRONG_SHAPES))
def test_a_record_of_the_wrong_shape_is_a_clear_checkpoint_error(
    saver: CheckpointSaver, shape: str
) -> None:
    """A tampered record written into the store raises CheckpointError saying it is damaged
    and what to do, on get and on list; never a raw ValueError, TypeError or AttributeError."""
    ids = two_steps(saver)
    plain = serde.loads(records(saver, "t")[ids[1]])
    set_record(saver, "t", ids[1], serde.dumps(WRONG_SHAPES[shape](plain, ids[0])))
    for read in (lambda: saver.get("t"), lambda: saver.list("t"), lambda: saver.get("t", ids[1])):
        with pytest.raises(CheckpointError, match=r"damaged: .*earlier checkpoint.*backup"):
            read()
    assert saver.get("t", ids[0]) is not None  # the rest of the thread still reads


def test_undecodable_records_values_and_writes_are_clear_checkpoint_errors(
    saver: CheckpointSaver,
) -> None:
    """Bytes that are not msgpack, a set-values field that is not a map, and pending writes
    of the wrong shape each raise CheckpointError, not a raw exception."""
    ids = two_steps(saver)
    set_writes(saver, "t", ids[1], "node", serde.dumps([["node", "update"]]))
    with pytest.raises(CheckpointError, match="pending writes are damaged"):
        saver.get("t")
    set_writes(saver, "t", ids[1], "node", serde.dumps("junk"))
    with pytest.raises(CheckpointError, match="pending writes are damaged"):
        saver.get("t")
    set_writes(saver, "t", ids[1], "node", serde.dumps([["node", "update", 1]]))
    assert saver.get("t") is not None
    field = next(f for f in data(saver, "t") if f == f"v|{ids[1]}")
    set_data(saver, "t", field, serde.dumps([1, 2]))
    with pytest.raises(CheckpointError, match="not a map"):
        saver.get("t")
    set_record(saver, "t", ids[1], b"\xc1\xc1")
    with pytest.raises(CheckpointError, match="cannot decode"):
        saver.get("t")


_HUGE_CLAIM = """
import resource, sys
sys.path.insert(0, {tests!r})
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a runaway read fails fast
from checkpoint import MemorySaver, SerializationError, serde
from _stores import Store, close
import _tamper, test_stored_bytes as t

if sys.argv[1] == "memory":
    saver = MemorySaver()
    t.two_steps(saver)
else:
    saver = Store(*sys.argv[1:4]).open()
ids = sorted(_tamper.records(saver, "t"))
plain = serde.loads(_tamper.records(saver, "t")[ids[1]])
branch = plain[9]["log"][-1][0]
plain[9] = {{"log": [[branch, 0, 10**9]]}}
blob = serde.dumps(plain)
assert len(blob) < 200, len(blob)
_tamper.set_record(saver, "t", ids[1], blob)
if sys.argv[1] == "memory":
    pruning = saver
    pruning.keep_last = 2
else:
    pruning = Store(*sys.argv[1:4]).open(keep_last=2)
step = t.write(ids[1], {{"x": ("set", 3)}})
for act in (
    lambda: saver.get("t"),
    lambda: saver.list("t"),
    lambda: pruning.put("t", step, expected_head=ids[1]),  # prunes: reads every record
):
    try:
        act()
        print("done")
    except SerializationError as exc:
        print("refused" if "names 1000000001 stored values" in str(exc) else repr(exc))
"""


def _read_with_a_huge_claim(argv: list[str]) -> None:
    tests = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", _HUGE_CLAIM.format(tests=tests), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tests,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["refused"] * 3, done.stdout


def test_a_small_record_claiming_a_billion_items_is_refused_before_allocating() -> None:
    """A record under 200 bytes claiming a 10^9-item range: MemorySaver's reads, and a step
    that prunes, raise CheckpointError at once, checked against what it stores. Runs in a
    child process limited to 1 GiB of memory (before the fix: MemoryError)."""
    _read_with_a_huge_claim(["memory", "", ""])


def test_a_stored_record_claiming_a_billion_items_is_refused_before_allocating(
    store: Store,
) -> None:
    """The same record written into SQLite, PostgreSQL, Redis or a Cluster: the stored data
    is counted before the range is built, and the read raises CheckpointError."""
    saver = store.open()
    two_steps(saver)
    close(saver)
    _read_with_a_huge_claim(store.argv())
