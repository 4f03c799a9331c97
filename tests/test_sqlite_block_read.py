"""A long SQLite log read cold: its items come back in order and whole, whatever the log's
length, where it starts, what else is stored under its prefix, and how the file is set up
(the read fetches many items per row: see ``checkpoint/_sql.py``)."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from checkpoint import SqliteSaver
from checkpoint._sqlschema import encode_text
from checkpoint.errors import SerializationError
from checkpoint.serde import default_serde
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import AssistantMessage, UserMessage


def chat(saver: SqliteSaver) -> Any:
    """A one-node chat graph: each turn's user message gets one numbered answer."""

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AssistantMessage(f"answer to {len(state['messages'])}")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    return g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)


def texts(saver: SqliteSaver, thread: str, checkpoint_id: str | None = None) -> list[str]:
    cp = saver.get(thread, checkpoint_id)
    assert cp is not None
    return [m.text for m in cp.values["messages"]]


def fill(app: Any, thread: str, n: int, tag: str = "m") -> list[str]:
    """Start ``thread`` with ``n`` user messages; what its log then holds."""
    app.invoke(
        {"messages": [UserMessage(f"{tag} {i}\x00é") for i in range(n)]}, {"thread_id": thread}
    )
    return [f"{tag} {i}\x00é" for i in range(n)] + [f"answer to {n}"]


def stem_of(saver: SqliteSaver, thread: str) -> tuple[str, int]:
    saver.get(thread)  # decodes the head's record
    record = saver.logic._records[(thread, saver.head(thread))]  # type: ignore[index]
    (branch, _, end), *_ = record.logs["messages"]
    return f"l|messages|{branch}|", end


@pytest.mark.parametrize("n", [500, 501, 999, 1000, 1001, 2345])
def test_a_cold_read_of_any_length_gives_every_item_in_order(tmp_path: Path, n: int) -> None:
    """Logs just over the by-name limit and across 10^k and block boundaries read cold
    exactly as written (items holding NUL and non-ASCII bytes too)."""
    path = tmp_path / "t.sqlite"
    expected = fill(chat(SqliteSaver(path)), "t", n)
    assert texts(SqliteSaver(path), "t") == expected


def test_items_read_after_a_warm_window_start_anywhere(tmp_path: Path) -> None:
    """A warm reader whose thread grew by 1,234 items in another worker reads only those
    (a range that starts mid-block) and gets the whole log right."""
    path = tmp_path / "t.sqlite"
    writer, reader = SqliteSaver(path), SqliteSaver(path)
    expected = fill(chat(writer), "t", 1200)
    assert texts(reader, "t") == expected
    more = [f"more {i}" for i in range(1234)]
    out = chat(writer).invoke({"messages": [UserMessage(t) for t in more]}, {"thread_id": "t"})
    expected += [*more, f"answer to {len(expected) + len(more)}"]
    assert [m.text for m in out["messages"]] == expected
    assert texts(reader, "t") == expected
    reader.read_cache.clear()
    assert texts(reader, "t") == expected


def test_rows_under_the_prefix_that_are_no_items_name_change_nothing(tmp_path: Path) -> None:
    """Names under a long log's prefix that sort among its items but are not an item's own
    name (non-digits of the same length, leading zeros, longer names, other keys) are not
    read as items."""
    path = tmp_path / "t.sqlite"
    expected = fill(chat(SqliteSaver(path)), "t", 1300)
    stem, end = stem_of(SqliteSaver(path), "t")
    junk = default_serde.dumps(UserMessage("junk"))
    names = ["10:0", "1/00", "1a00", "0123", "0999", "1000|x", "10000", "12 4", "99:", "5x", ":"]
    with sqlite3.connect(path) as conn:
        for name in [*names, f"{end + 5}", "-1", "", "01"]:
            conn.execute(
                "INSERT INTO graphagent_data (thread_id, field, value) VALUES (?, ?, ?)",
                (encode_text("t"), encode_text(stem + name), junk),
            )
    assert texts(SqliteSaver(path), "t") == expected


def test_an_item_missing_inside_a_block_is_refused(tmp_path: Path) -> None:
    """A long log with one item deleted from the middle, and the block copy holding it,
    reads as damaged, naming the key, never as a shorter or shifted history; with the
    block still there, the item is read from it."""
    path = tmp_path / "t.sqlite"
    expected = fill(chat(SqliteSaver(path)), "t", 1500)
    stem, _ = stem_of(SqliteSaver(path), "t")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "DELETE FROM graphagent_data WHERE thread_id = ? AND field = ?",
            (encode_text("t"), encode_text(stem + "1234")),
        )
    assert texts(SqliteSaver(path), "t") == expected
    with sqlite3.connect(path) as conn:
        conn.execute(
            "DELETE FROM graphagent_data WHERE thread_id = ? AND field = ?",
            (encode_text("t"), encode_text("k" + stem[1:] + str(1234 // 256))),
        )
    with pytest.raises(SerializationError, match="messages"):
        SqliteSaver(path).get("t")


def test_a_log_over_sqlites_length_limit_is_read_item_by_item(tmp_path: Path) -> None:
    """When the items of a block would make a value longer than SQLite allows, the log is
    read row by row instead, whole."""
    path = tmp_path / "t.sqlite"
    expected = fill(chat(SqliteSaver(path)), "t", 1100)
    reader = SqliteSaver(path)
    reader.head("t")  # opens the connection
    conn = reader._connection()
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 20_000)
    assert texts(reader, "t") == expected


def test_a_utf16_file_reads_long_logs(tmp_path: Path) -> None:
    """A file created in UTF-16 (graphagent's tables beside the file's own) reads a long
    log byte for byte (SQLite converts text, never blobs, between encodings)."""
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA encoding = 'UTF-16le'")
        conn.execute("CREATE TABLE theirs (x)")
    expected = fill(chat(SqliteSaver(path)), "t", 1200)
    assert texts(SqliteSaver(path), "t") == expected


def test_forks_rewinds_and_update_state_on_a_long_log(tmp_path: Path) -> None:
    """On a 1,600-message thread: a rewind reads the older checkpoint's shorter log, a fork
    by update_state shares the history and appends its own branch, and the original line
    goes on; a cold reader sees each exactly as the writer does."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path)
    app = chat(saver)
    first = fill(app, "t", 1600)
    old = saver.head("t")
    app.invoke({"messages": [UserMessage(f"x {i}") for i in range(700)]}, {"thread_id": "t"})
    head, head_id = texts(saver, "t"), saver.head("t")
    assert texts(SqliteSaver(path), "t", old) == first
    app.update_state({"thread_id": "t", "checkpoint_id": old}, {"messages": [UserMessage("fork")]})
    forked = texts(saver, "t")
    assert forked == [*first, "fork"]
    app.invoke({"messages": [UserMessage("after")]}, {"thread_id": "t"})
    after = texts(saver, "t")
    assert after == [*forked, "after", f"answer to {len(forked) + 1}"]
    cold = SqliteSaver(path)
    assert texts(cold, "t") == after
    assert {old, head_id} <= {cp.id for cp in cold.list("t")}
    assert texts(SqliteSaver(path), "t", head_id) == head


def test_a_read_of_a_long_thread_counts_no_rows(tmp_path: Path) -> None:
    """Neither a cold nor a warm read of a 5,000-message thread counts the thread's stored
    rows (a damaged record's claim is counted only when its range comes back short)."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path)
    app = chat(saver)
    fill(app, "t", 5000)
    reader = SqliteSaver(path)
    reader.head("t")
    seen: list[str] = []
    reader._connection().set_trace_callback(seen.append)
    reader.get("t")  # cold
    chat(reader).invoke({"messages": [UserMessage("next")]}, {"thread_id": "t"})  # warm
    assert seen
    assert not [s for s in seen if "count(" in s.lower()]


def blocks_of(path: Path, thread: str) -> list[bytes]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT field FROM graphagent_data WHERE thread_id = ? AND field >= ? AND field < ?",
            (encode_text(thread), b"k|", b"k}"),
        ).fetchall()
    return [bytes(r[0]) for r in rows]


def without_blocks(saver: SqliteSaver) -> SqliteSaver:
    """``saver`` writing as graphagent did before blocks (item fields only)."""
    saver.logic.dialect = dataclasses.replace(saver.logic.dialect, item_blocks=False)
    return saver


def test_a_file_written_before_blocks_reads_whole_and_grows_blocks(tmp_path: Path) -> None:
    """A thread stored without blocks reads whole; turns written by this version on top
    store blocks only for what they complete, and the mixed thread reads whole cold."""
    path = tmp_path / "t.sqlite"
    old = without_blocks(SqliteSaver(path))
    expected = fill(chat(old), "t", 1000)
    assert blocks_of(path, "t") == []
    assert texts(SqliteSaver(path), "t") == expected
    app = chat(SqliteSaver(path))
    for i in range(15):
        out = app.invoke({"messages": [UserMessage(f"t {i}")]}, {"thread_id": "t"})
    expected = [m.text for m in out["messages"]]
    assert len(expected) == 1031
    assert len(blocks_of(path, "t")) == 1  # items 768..1023, completed by a turn
    assert texts(SqliteSaver(path), "t") == expected


def test_turns_of_one_message_seal_blocks_and_read_them(tmp_path: Path) -> None:
    """Turns of two messages each fill blocks from items stored by earlier turns; a
    cold reader reads them (and a damaged block falls back to the items)."""
    path = tmp_path / "t.sqlite"
    app = chat(SqliteSaver(path))
    fill(app, "t", 500)
    for i in range(20):
        out = app.invoke({"messages": [UserMessage(f"t {i}")]}, {"thread_id": "t"})
    expected = [m.text for m in out["messages"]]
    assert len(blocks_of(path, "t")) == 2
    assert texts(SqliteSaver(path), "t") == expected
    with sqlite3.connect(path) as conn:
        for n, junk in enumerate([b"\x09" + bytes(2000), b"\x01" + bytes(100)]):
            conn.execute(
                "UPDATE graphagent_data SET value = ? WHERE thread_id = ? AND field = ?",
                (junk, encode_text("t"), blocks_of(path, "t")[n]),
            )
    assert texts(SqliteSaver(path), "t") == expected


def test_a_prune_deletes_the_blocks_of_the_items_it_deletes(tmp_path: Path) -> None:
    """keep_last drops a fork's abandoned line: its items and the blocks holding them
    go, the kept line's blocks stay, and every kept checkpoint reads whole."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path, keep_last=3)
    app = chat(saver)
    fill(app, "t", 300)
    base = saver.head("t")
    app.invoke({"messages": [UserMessage(f"a {i}") for i in range(600)]}, {"thread_id": "t"})
    before = set(blocks_of(path, "t"))
    app.update_state({"thread_id": "t", "checkpoint_id": base}, {"messages": [UserMessage("b")]})
    for i in range(4):
        app.invoke({"messages": [UserMessage(f"c {i}")]}, {"thread_id": "t"})
    after = set(blocks_of(path, "t"))
    assert after < before  # the blocks of the abandoned line's items are gone
    cold = SqliteSaver(path)
    for cp in cold.list("t"):
        assert texts(SqliteSaver(path), "t", cp.id) == [m.text for m in cp.values["messages"]]


@pytest.mark.parametrize("claim", [10**6, 10**8])
def test_a_record_claiming_millions_of_items_is_refused_naming_few_fields(
    tmp_path: Path, claim: int
) -> None:
    """A damaged head record claiming a million (3,906 blocks) or 10^8 items (more blocks
    than a read names) is refused as damaged, and no statement of the read names more
    than a few thousand fields in all."""
    import _tamper

    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path)
    fill(chat(saver), "t", 600)
    head = saver.head("t")
    assert head is not None
    plain = default_serde.loads(_tamper.records(saver, "t")[head])
    branch = plain[9]["messages"][-1][0]
    plain[9] = {"messages": [[branch, 0, claim]]}
    _tamper.set_record(saver, "t", head, default_serde.dumps(plain))
    reader = SqliteSaver(path)
    reader.head("t")
    seen: list[str] = []
    reader._connection().set_trace_callback(seen.append)
    with pytest.raises(SerializationError, match=f"names {claim} stored values"):
        reader.get("t")
    assert sum(s.count("x'") for s in seen) <= 5000  # blob literals: fields named
