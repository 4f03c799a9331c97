"""The savers' read cache (checkpoint/_cache.py): a warm turn decodes only what was written
since the last read, sees every write another saver or process made, and hands out nothing
a caller can change to reach what is stored or cached."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _stores import Store, close

from checkpoint import MemorySaver, ReadCache, SqliteSaver
from checkpoint.base import CheckpointSaver
from checkpoint.serde import Serde, default_serde
from graphagent.graph import END, START, AppendStrategy, ReplaceStrategy, StateGraph
from graphagent.messages import AssistantMessage, ToolCall, UserMessage


def chat(saver: CheckpointSaver, *, extras: bool = True) -> Any:
    """A one-node chat graph: each turn's user message gets one numbered answer (and, with
    ``extras``, a dict appended to ``events`` and a dict set as ``summary``)."""

    def reply(state: Any) -> dict[str, Any]:
        n = len(state["messages"])
        if not extras:
            return {"messages": [AssistantMessage(f"answer to {n}", metadata={"n": n})]}
        return {
            "messages": [
                AssistantMessage(
                    f"answer to {n}",
                    metadata={"usage": {"in": n, "out": 1}, "tags": ["a", n]},
                )
            ],
            "events": [{"turn": n, "seen": [n]}],
            "summary": {"turns": n, "last": [n]},
        }

    g = StateGraph(
        {"messages": AppendStrategy(), "events": AppendStrategy(), "summary": ReplaceStrategy()}
    )
    return (
        g.add_node("reply", reply)
        .add_edge(START, "reply")
        .add_edge("reply", END)
        .compile(saver=saver)
    )


def turn(app: Any, thread: str, text: str) -> dict[str, Any]:
    out: dict[str, Any] = app.invoke({"messages": [UserMessage(text)]}, {"thread_id": thread})
    return out


def plain(values: dict[str, Any]) -> Any:
    """A state as comparable plain data (messages by their fields)."""
    return {
        key: [m.model_dump() if hasattr(m, "model_dump") else m for m in value]
        if isinstance(value, list)
        else value
        for key, value in values.items()
    }


def cold_values(saver: CheckpointSaver, thread: str) -> Any:
    """The thread's head state as a reader that holds nothing decodes it."""
    saver.read_cache.clear()  # type: ignore[attr-defined]
    cp = saver.get(thread)
    assert cp is not None
    return plain(cp.values)


class CountingSerde(Serde):
    """The default codec, counting the values it decodes."""

    def __init__(self) -> None:
        super().__init__()
        self.decoded = 0

    def loads(self, data: bytes) -> Any:
        self.decoded += 1
        return super().loads(data)

    def loads_all(self, blobs: Sequence[bytes]) -> list[Any]:
        self.decoded += len(blobs)
        return [super(CountingSerde, self).loads(b) for b in blobs]


def test_a_warm_turn_decodes_only_what_was_written_since_the_last() -> None:
    """After the first read of a 400-message thread, each turn decodes a handful of values
    (the last turn's items, its value map, the record), never the history."""
    counting = CountingSerde()
    saver = MemorySaver(serde=counting)
    app = chat(saver, extras=False)
    history = [UserMessage(f"old {i}") for i in range(400)]
    app.invoke({"messages": history}, {"thread_id": "t"})
    turn(app, "t", "first")  # reads the whole history once
    counts = []
    for i in range(5):
        before = counting.decoded
        turn(app, "t", f"again {i}")
        counts.append(counting.decoded - before)
    assert max(counts) <= 4, counts
    cp = saver.get("t")
    assert cp is not None and len(cp.values["messages"]) == 401 + 2 * 6
    assert plain(cp.values) == cold_values(saver, "t")


def test_each_saver_serves_warm_reads_equal_to_cold_ones(saver: CheckpointSaver) -> None:
    """On every saver a warm read (cache held) builds exactly the state a cold one does,
    turn after turn, forks and update_state included."""
    app = chat(saver)
    for i in range(4):
        turn(app, "t", f"hi {i}")
        warm = plain(saver.get("t").values)  # type: ignore[union-attr]
        assert warm == cold_values(saver, "t")
    first = saver.list("t")[-2].id  # the first run's finished checkpoint
    app.update_state(
        {"thread_id": "t", "checkpoint_id": first}, {"messages": [UserMessage("fork")]}
    )
    turn(app, "t", "on the fork")
    cp = saver.get("t")
    assert cp is not None
    texts = [m.text for m in cp.values["messages"]]
    assert texts == ["hi 0", "answer to 1", "fork", "on the fork", "answer to 4"]
    assert plain(cp.values) == cold_values(saver, "t")
    saver.delete_thread("t")
    assert "t" not in saver.read_cache  # type: ignore[attr-defined]
    assert saver.get("t") is None


SECOND_WORKER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from _stores import Store, close
    from graphagent.messages import UserMessage
    from test_read_cache import chat, turn

    store = Store(*sys.argv[2:5])
    saver = store.open()
    app = chat(saver)
    turn(app, "t", "from the other worker")
    old = saver.list("t")[-2].id  # the first turn's answer
    fork = {"messages": [UserMessage("forked")]}
    app.update_state({"thread_id": "t", "checkpoint_id": old}, fork)
    turn(app, "t", "after the fork")
    close(saver)
    """
)


def test_writes_of_another_process_are_seen_by_the_next_turn(store: Store) -> None:
    """A second worker process takes a turn, forks the thread with update_state and takes
    another turn on the fork; the first worker's cached thread then reads exactly that."""
    saver = store.open()
    try:
        app = chat(saver)
        for i in range(3):
            turn(app, "t", f"hi {i}")
        assert "t" in saver.read_cache  # type: ignore[attr-defined]
        tests = str(Path(__file__).parent)
        done = subprocess.run(
            [sys.executable, "-c", SECOND_WORKER, tests, *store.argv()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        cp = saver.get("t")
        assert cp is not None
        texts = [m.text for m in cp.values["messages"]]
        assert texts == ["hi 0", "answer to 1", "forked", "after the fork", "answer to 4"]
        out = turn(app, "t", "back here")
        assert [m.text for m in out["messages"]][-2:] == ["back here", "answer to 6"]
        assert plain(saver.get("t").values) == cold_values(saver, "t")  # type: ignore[union-attr]
    finally:
        saver.delete_thread("t")
        close(saver)


def test_a_second_saver_on_the_same_store_is_seen_turn_by_turn(store: Store) -> None:
    """Two workers in one process take turns on one thread; each one's warm cache extends
    with the other's turns and never serves a stale history."""
    one, two = store.open(), store.open()
    try:
        apps = [chat(one), chat(two)]
        for i in range(6):
            out = turn(apps[i % 2], "t", f"turn {i}")
            assert [m.text for m in out["messages"] if m.role == "user"] == [
                f"turn {j}" for j in range(i + 1)
            ]
        for saver in (one, two):
            assert plain(saver.get("t").values) == cold_values(saver, "t")  # type: ignore[union-attr]
    finally:
        one.delete_thread("t")
        close(one)
        close(two)


def test_what_a_caller_changes_in_a_read_state_changes_nothing_stored_or_cached(
    saver: CheckpointSaver,
) -> None:
    """Lists, dict items, value maps and message metadata read from a saver are the
    caller's own or read-only: changing them, then reading again (warm and cold), gives
    the stored state back."""
    app = chat(saver)
    turn(app, "t", "hello")
    turn(app, "t", "again")
    expected = cold_values(saver, "t")
    for _ in range(2):  # the first read fills the cache, the second is served from it
        cp = saver.get("t")
        assert cp is not None
        values = cp.values
        message = values["messages"][1]
        with pytest.raises(TypeError, match="read-only"):
            message.metadata["usage"] = {}
        with pytest.raises(TypeError, match="read-only"):
            message.metadata["usage"]["in"] = 99
        with pytest.raises(TypeError, match="read-only"):
            message.metadata["tags"].append("x")
        with pytest.raises(Exception, match="frozen"):
            message.content = "changed"
        values["messages"].append(UserMessage("sneaked in"))
        values["messages"].pop(0)
        values["events"][0]["turn"] = -1
        values["events"][0]["seen"].append(-1)
        values["events"].clear()
        values["summary"]["turns"] = -1
        values["summary"]["last"].append(-1)
        cp.metadata["source"] = "changed"
        values["new key"] = 1
        ids = getattr(values["messages"], "ids", None)
        if ids is not None:  # the message index is the reader's own too
            ids.clear()
        again = saver.get("t")
        assert again is not None and plain(again.values) == expected
        assert again.metadata["source"] != "changed"
    assert cold_values(saver, "t") == expected


def test_read_only_metadata_copies_and_dumps_as_plain_data() -> None:
    """A loaded message's metadata reads, compares, dumps, copies and pickles as a dict;
    copies are plain and changeable; the message stores again as it was."""
    stored = AssistantMessage(
        "x",
        metadata={"usage": {"in": 1}, "tags": ["a", ("b", 1)], "n": None},
        tool_calls=[ToolCall(id="c1", name="f", arguments="{}")],
    )
    loaded = default_serde.loads(default_serde.dumps(stored))
    assert loaded == stored and loaded.metadata == stored.metadata
    assert loaded.model_dump() == stored.model_dump()
    assert json.loads(loaded.model_dump_json()) == json.loads(stored.model_dump_json())
    assert json.dumps(loaded.metadata) == json.dumps(stored.metadata)
    for made in (
        dict(loaded.metadata),
        loaded.metadata.copy(),
        copy.copy(loaded.metadata),
        copy.deepcopy(loaded.metadata),
        pickle.loads(pickle.dumps(loaded.metadata)),
    ):
        made["k"] = 1  # a copy is the caller's
    deep = copy.deepcopy(loaded.metadata)
    deep["usage"]["in"] = 2
    deep["tags"].append(3)
    assert loaded.metadata["usage"] == {"in": 1}
    changed = loaded.model_copy(update={"metadata": {**loaded.metadata, "k": 1}})
    assert changed.metadata["k"] == 1 and "k" not in loaded.metadata
    assert default_serde.loads(default_serde.dumps(loaded)) == stored
    assert default_serde.shareable(loaded) and not default_serde.shareable(stored)


@pytest.mark.parametrize(
    "fields",
    [
        [1, "id", {}],  # content not text
        ["x", 2, {}],  # id not text
        ["x", "id", {1: "a"}],  # metadata keys not text
        ["x", "id", []],  # metadata not a map
    ],
)
def test_stored_messages_of_the_wrong_shape_are_still_refused(fields: list[Any]) -> None:
    """The fast decode builds only what this library stores; other shapes go through
    pydantic's validation and are refused with the same clear error."""
    import msgpack

    from checkpoint.errors import SerializationError
    from checkpoint.serde import _ENCODED, _ext

    blob = _ext(_ENCODED, msgpack.packb(["graphagent.UserMessage", fields]))
    with pytest.raises(SerializationError, match="no longer fits its class"):
        default_serde.loads(blob)
    calls = ["x", "id", {}, [["c1", "f", 3]]]  # arguments not text
    blob = _ext(_ENCODED, msgpack.packb(["graphagent.AssistantMessage", calls]))
    with pytest.raises(SerializationError, match="no longer fits its class"):
        default_serde.loads(blob)


def test_metadata_holding_a_changeable_object_is_decoded_for_each_read() -> None:
    """A message whose metadata holds a registered (changeable) object is not shared: each
    read decodes its own, so changing one changes no other read."""
    from dataclasses import dataclass

    @dataclass
    class Note:
        text: str

    mine = Serde()
    mine.register(Note, name="tests.Note")
    saver = MemorySaver(serde=mine)
    app = chat(saver)
    app.invoke(
        {"messages": [AssistantMessage("n", metadata={"note": Note("keep")})]},
        {"thread_id": "t"},
    )
    first = saver.get("t")
    assert first is not None
    note = first.values["messages"][0].metadata["note"]
    assert not mine.shareable(first.values["messages"][0])
    note.text = "changed"
    again = saver.get("t")
    assert again is not None and again.values["messages"][0].metadata["note"].text == "keep"


def test_the_cache_is_bounded_by_threads_and_bytes() -> None:
    """The least recently read threads go first past max_threads or max_bytes; a thread
    larger than max_bytes alone is not held; max_bytes=0 holds nothing."""
    saver = MemorySaver()
    app = chat(saver)
    for name in ("a", "b", "c"):
        app.invoke(
            {"messages": [UserMessage(f"{name} {i}") for i in range(20)]}, {"thread_id": name}
        )
    saver.read_cache = cache = ReadCache(saver.serde, max_threads=2)
    for name in ("a", "b", "a", "c"):
        saver.get(name)
    assert "a" in cache and "c" in cache and "b" not in cache and len(cache) == 2
    one = cache.size // 2
    saver.read_cache = cache = ReadCache(saver.serde, max_bytes=one + one // 2)
    saver.get("a")
    saver.get("b")
    assert "b" in cache and "a" not in cache and cache.size <= one + one // 2
    saver.read_cache = cache = ReadCache(saver.serde, max_bytes=one // 2)
    saver.get("a")
    assert len(cache) == 0 and cache.size == 0
    saver.read_cache = cache = ReadCache(saver.serde, max_bytes=0)
    assert plain(saver.get("a").values)["messages"][0]["content"] == "a 0"  # type: ignore[union-attr]
    assert len(cache) == 0


def test_the_byte_bound_counts_the_id_index_too() -> None:
    """What a thread holds is counted with its message-id index (an entry per message,
    as large as a short message's stored bytes), not the items' stored bytes alone."""
    saver = MemorySaver()
    app = chat(saver)
    app.invoke({"messages": [UserMessage(f"{i}") for i in range(200)]}, {"thread_id": "t"})
    state = saver.get("t")
    assert state is not None
    stored = sum(len(saver.serde.dumps(m)) for m in state.values["messages"])
    saver.read_cache = cache = ReadCache(saver.serde)
    saver.get("t")
    assert cache.size >= stored + 200 * ReadCache.ID_ENTRY_BYTES
    saver.read_cache = cache = ReadCache(saver.serde, max_bytes=stored + 1000)
    saver.get("t")
    assert len(cache) == 0  # the index does not fit beside the items


def test_sqlite_reader_in_another_process_sees_a_pruned_and_regrown_thread(tmp_path: Path) -> None:
    """keep_last prunes under a warm reader: the reader's next read is the stored state."""
    path = tmp_path / "t.sqlite"
    writer, reader = SqliteSaver(path, keep_last=2), SqliteSaver(path, keep_last=2)
    app_w, app_r = chat(writer), chat(reader)
    turn(app_w, "t", "one")
    turn(app_r, "t", "two")
    for i in range(3):
        turn(app_w, "t", f"more {i}")
    out = turn(app_r, "t", "last")
    assert [m.text for m in out["messages"] if m.role == "user"] == [
        "one",
        "two",
        "more 0",
        "more 1",
        "more 2",
        "last",
    ]
    assert plain(reader.get("t").values) == cold_values(reader, "t")  # type: ignore[union-attr]


def test_a_long_log_is_read_by_range_and_strangers_under_its_prefix_are_not_items(
    tmp_path: Path,
) -> None:
    """A cold SQL read of a 1,200-item log (one range scan) gives every item in order; rows
    under the log's prefix that are not an item's own name ("007", "x") change nothing."""
    import sqlite3

    from checkpoint._sqlschema import encode_text

    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path)
    app = chat(saver, extras=False)
    app.invoke({"messages": [UserMessage(f"m {i}") for i in range(1200)]}, {"thread_id": "t"})
    record = saver.logic._records[("t", saver.head("t"))]  # type: ignore[index]
    (branch, _, end), *_ = record.logs["messages"]
    stem = f"l|messages|{branch}|"
    junk = default_serde.dumps(UserMessage("junk"))
    with sqlite3.connect(path) as conn:
        for name in ("007", "x", f"{end + 5}", "-1"):
            conn.execute(
                "INSERT INTO graphagent_data (thread_id, field, value) VALUES (?, ?, ?)",
                (encode_text("t"), encode_text(stem + name), junk),
            )
    other = SqliteSaver(path)
    cp = other.get("t")
    assert cp is not None
    assert [m.text for m in cp.values["messages"]] == [f"m {i}" for i in range(1200)] + [
        "answer to 1200"
    ]


def test_loads_all_decodes_as_loads_does_and_refuses_what_it_refuses() -> None:
    """A batch decodes to exactly what loads gives one by one (long, short, non-message
    values mixed in); a damaged frame anywhere in it raises loads' error for that frame."""
    import msgpack

    from checkpoint.errors import SerializationError
    from checkpoint.serde import _ENCODED, _ext

    values: list[Any] = [
        UserMessage("short"),
        AssistantMessage("long " * 100, metadata={"usage": {"in": 1}, "tags": ["a"]}),
        AssistantMessage("", tool_calls=[ToolCall(id="c", name="f", arguments="{}")]),
    ]
    blobs = [default_serde.dumps(v) for v in values]
    assert default_serde.loads_all(blobs) == values
    mixed = [*blobs, default_serde.dumps({"not": "a message"}), blobs[0]]
    assert default_serde.loads_all(mixed) == [default_serde.loads(b) for b in mixed]
    frame = msgpack.packb(["graphagent.UserMessage", ["x", "id", {}]])
    trailing = _ext(_ENCODED, frame + b"\xc0")  # one frame and a stray byte
    wrong = _ext(_ENCODED, msgpack.packb(["graphagent.UserMessage", ["x", 1, {}]]))
    for bad, error in ((trailing, "extra|cannot decode"), (wrong, "no longer fits")):
        with pytest.raises(SerializationError, match=error):
            default_serde.loads(bad)
        with pytest.raises(SerializationError, match=error):
            default_serde.loads_all([*blobs, bad, *blobs])


def test_message_frames_of_the_wrong_shape_are_refused_by_both_decodes() -> None:
    """A message frame whose stored fields are not a list of the class's fields (a text or
    a map of as many items, a list too short or too long, texts of the wrong type) is
    refused by loads and by the batch decode with the same error; a list of the right
    shape whose metadata is not a plain map of texts is validated, not built inline."""
    import msgpack

    from checkpoint.errors import SerializationError
    from checkpoint.serde import _ENCODED, _ext

    def frame(name: str, stored: Any) -> bytes:
        return _ext(_ENCODED, msgpack.packb([f"graphagent.{name}", stored]))

    good = default_serde.dumps(UserMessage("fine"))
    bad = [
        frame("UserMessage", "abc"),
        frame("UserMessage", {"a": 1, "b": 2, "c": 3}),
        frame("UserMessage", ["x", "id"]),
        frame("UserMessage", ["x", 7, {}]),
        frame("AssistantMessage", "abcd"),
        frame("AssistantMessage", ["x", "id", {}, "no calls"]),
        frame("AssistantMessage", ["x", "id", {}, [], "", "extra"]),
        frame("SystemMessage", ["x", "id", {1: "int key"}]),
    ]
    for blob in bad:
        with pytest.raises(SerializationError) as one:
            default_serde.loads(blob)
        with pytest.raises(SerializationError) as batch:
            default_serde.loads_all([good, blob, good])
        assert str(batch.value) == str(one.value)
    nested = frame("AssistantMessage", ["x", "id", {"usage": {"in": 1}}, []])
    got = default_serde.loads_all([good, nested])
    assert got[1] == AssistantMessage("x", id="id", metadata={"usage": {"in": 1}})
    assert got[1] == default_serde.loads(nested)


def test_a_long_batch_pauses_the_collector_and_leaves_it_as_it_found_it() -> None:
    """The collector waits while a long batch is decoded (no pass runs meanwhile) and is
    on again afterwards, also when the batch is refused; a caller that turned it off
    finds it off."""
    import gc

    from checkpoint.errors import SerializationError

    blobs = [default_serde.dumps(UserMessage(f"m {i}")) for i in range(600)]
    passes: list[str] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            passes.append(phase)

    gc.callbacks.append(seen)
    try:
        assert gc.isenabled()
        values = default_serde.loads_all(blobs)
        assert len(values) == 600 and passes == []  # ~2,400 objects made, no pass
        assert gc.isenabled()
        with pytest.raises(SerializationError):
            default_serde.loads_all([*blobs, b"\xc1"])
        assert gc.isenabled()
        gc.disable()
        try:
            default_serde.loads_all(blobs)
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(seen)


def test_a_thread_that_sets_a_key_every_step_holds_only_its_latest_values() -> None:
    """Value maps (``set`` keys) are held for the record last read only: a thread whose
    every step sets a key does not grow the cache by a map per step."""
    saver = MemorySaver()
    app = chat(saver)  # each turn sets "summary"
    for i in range(30):
        turn(app, "t", f"turn {i}")
        saver.get("t")
    held = saver.read_cache._threads["t"]
    assert len(held.sets) <= 2, sorted(held.sets)


def test_loads_all_refuses_a_msgpack_timestamp_inside_a_message_as_loads_does() -> None:
    """A message frame holding msgpack's own timestamp extension (which msgpack decodes
    without asking the serde) is refused by the batch decode exactly as by loads."""
    import msgpack

    from checkpoint.errors import SerializationError
    from checkpoint.serde import _ENCODED, _ext

    stamp = msgpack.Timestamp(1)
    frame = msgpack.packb(["graphagent.UserMessage", ["x", "id", {"at": stamp}]])
    bad = _ext(_ENCODED, frame)
    good = default_serde.dumps(UserMessage("fine"))
    with pytest.raises(SerializationError) as one:
        default_serde.loads(bad)
    with pytest.raises(SerializationError) as batch:
        default_serde.loads_all([good, bad, good])
    assert str(batch.value) == str(one.value)


def test_a_message_id_seen_before_replaces_on_a_warm_turn_on_every_saver(
    saver: CheckpointSaver,
) -> None:
    """The message log a saver reads carries its id index (so a turn does not index the
    whole history again): a message whose id is already in the history replaces that
    one, warm and cold, and a new id is appended; including after a caller cleared the
    index of a list it read, and on a fork."""
    app = chat(saver, extras=False)
    for i in range(3):
        turn(app, "t", f"hi {i}")
    for cold in (False, True):
        if cold:
            saver.read_cache.clear()  # type: ignore[attr-defined]
        read = saver.get("t")
        assert read is not None
        getattr(read.values["messages"], "ids", {}).clear()  # changes nothing held
        first = read.values["messages"][0]
        cfg = {"thread_id": "t"}
        out = app.invoke({"messages": [UserMessage(f"edited {cold}", id=first.id)]}, cfg)
        texts = [m.text for m in out["messages"]]
        assert texts[0] == f"edited {cold}" and texts.count(f"edited {cold}") == 1
        assert len({m.id for m in out["messages"]}) == len(texts)
        assert plain(saver.get("t").values) == cold_values(saver, "t")  # type: ignore[union-attr]
    old = saver.list("t")[-2].id
    fork = {"thread_id": "t", "checkpoint_id": old}
    app.update_state(fork, {"messages": [UserMessage("forked")]})
    forked = saver.get("t")
    assert forked is not None
    again = forked.values["messages"][-1]
    out = app.invoke({"messages": [UserMessage("forked again", id=again.id)]}, {"thread_id": "t"})
    texts = [m.text for m in out["messages"]]
    assert texts.count("forked again") == 1 and "forked" not in texts
    saver.delete_thread("t")


@pytest.mark.parametrize("with_parts", [False, True], ids=["all-batch-built", "one-validated"])
def test_the_id_index_of_a_cold_and_a_warm_read_names_every_message_at_its_position(
    with_parts: bool,
) -> None:
    """The read cache indexes a log's messages by the ids the batch decoder gives (not by
    asking each message): the index of a cold read, and of a warm read extending it, is
    exactly ``{m.id: position}``, whatever mix of classes the batch built (and with a
    message it left to validation, user parts, among them)."""
    from graphagent.messages import ImagePart, SystemMessage, ToolResponseMessage

    mixed: list[Any] = [SystemMessage("be brief", id="s0")]
    for i in range(300):  # more than one decoder batch (256 frames)
        mixed.append(UserMessage(f"q{i}", id=f"u{i}", metadata={"n": i} if i % 3 else {}))
        calls = (ToolCall(id=f"c{i}", name="t", arguments="{}"),) if i % 2 else ()
        mixed.append(AssistantMessage(f"a{i}", id=f"a{i}", tool_calls=calls))
        if calls:
            mixed.append(ToolResponseMessage("ok", id=f"t{i}", tool_call_id=f"c{i}", name="t"))
    if with_parts:
        mixed.insert(7, UserMessage("look", id="p0", parts=(ImagePart(url="http://x/y.png"),)))
    saver = MemorySaver()
    app = chat(saver, extras=False)
    app.invoke({"messages": mixed}, {"thread_id": "t"})
    for fresh in (True, False):  # a cold read, then a warm one extending its window
        if fresh:
            saver.read_cache = ReadCache(saver.serde)
        else:
            turn(app, "t", "one more")
        got = saver.get("t")
        assert got is not None
        log = got.values["messages"]
        assert log.ids == {m.id: i for i, m in enumerate(log)}
        assert [m.id for m in log[: len(mixed)]] == [m.id for m in mixed]
