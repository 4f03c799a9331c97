"""Errors about stored bytes say where and what to do (issue 30 item 17), on every saver.

An undecodable record names its thread, its checkpoint and the way out; a record written
by a newer release says so and advises upgrading, never deleting (a rolling deploy reads
healthy threads written by its newer half); msgpack's timestamp extension (-1), which the
msgpack library decodes on its own, is refused like every other unknown extension.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from _tamper import records, set_data, set_record

from checkpoint import AsyncSqliteSaver, CheckpointWrite, SerializationError, serde
from checkpoint._layout import LAYOUT
from checkpoint.base import CheckpointSaver, new_checkpoint_id
from graphagent.errors import SerializationError as RunSerializationError
from graphagent.graph import END, START, StateGraph


def _write(parent: str | None, changes: dict[str, Any]) -> CheckpointWrite:
    return CheckpointWrite(new_checkpoint_id(), parent, 0, changes, (), {}, time.time())


def _two_steps(saver: CheckpointSaver) -> list[str]:
    first = _write(None, {"x": ("set", 1), "log": ("append", ["a"])})
    saver.put("t", first, expected_head=None)
    second = _write(first.id, {"x": ("set", 2), "log": ("append", ["b"])})
    saver.put("t", second, expected_head=first.id)
    return [first.id, second.id]


def _names_place_and_way_out(text: str, cid: str) -> None:
    assert "thread 't'" in text, text
    assert f"checkpoint {cid!r}" in text, text
    assert "earlier checkpoint" in text and "backup" in text, text


def test_every_saver_names_thread_checkpoint_and_way_out_for_an_undecodable_record(
    saver: CheckpointSaver,
) -> None:
    """Bytes that are not msgpack in a record: get, list and get by id raise naming the
    thread, the checkpoint and the way out (memory, SQLite, PostgreSQL, Redis, Cluster)."""
    ids = _two_steps(saver)
    set_record(saver, "t", ids[1], b"\xc1\xc1")
    for read in (lambda: saver.get("t"), lambda: saver.list("t"), lambda: saver.get("t", ids[1])):
        with pytest.raises(SerializationError) as caught:
            read()
        _names_place_and_way_out(str(caught.value), ids[1])
    assert saver.get("t", ids[0]) is not None  # the way out works: the earlier one reads


def test_every_saver_names_thread_checkpoint_and_way_out_for_an_undecodable_value(
    saver: CheckpointSaver,
) -> None:
    """Bytes that are not msgpack in a value field: the same, on every saver."""
    ids = _two_steps(saver)
    set_data(saver, "t", f"v|{ids[1]}", b"\xc1")
    with pytest.raises(SerializationError) as caught:
        saver.get("t")
    _names_place_and_way_out(str(caught.value), ids[1])


def test_every_saver_says_upgrade_for_a_record_of_a_newer_layout(saver: CheckpointSaver) -> None:
    """A record of layout LAYOUT + 1 (a newer release's) says "written by a newer graphagent
    (layout N): upgrade" and never advises deleting the thread (every saver)."""
    ids = _two_steps(saver)
    plain = serde.loads(records(saver, "t")[ids[1]])
    plain[0] = LAYOUT + 1
    set_record(saver, "t", ids[1], serde.dumps(plain))
    with pytest.raises(SerializationError) as caught:
        saver.get("t")
    text = str(caught.value)
    assert f"written by a newer graphagent (layout {LAYOUT + 1})" in text, text
    assert "upgrade" in text and "delete" not in text, text
    assert "thread 't'" in text and f"checkpoint {ids[1]!r}" in text, text


def test_a_run_on_a_thread_of_a_newer_layout_says_upgrade(saver: CheckpointSaver) -> None:
    """get_state and invoke on such a thread raise the run's SerializationError, same words."""
    g = StateGraph()
    g.add_node("a", lambda s: {"x": 1}).add_edge(START, "a").add_edge("a", END)
    app = g.compile(saver=saver)
    app.invoke({"x": 0}, {"thread_id": "t"})
    head = saver.head("t")
    assert head is not None
    plain = serde.loads(records(saver, "t")[head])
    plain[0] = LAYOUT + 1
    set_record(saver, "t", head, serde.dumps(plain))
    for act in (
        lambda: app.get_state({"thread_id": "t"}),
        lambda: app.invoke(None, {"thread_id": "t"}),
    ):
        with pytest.raises(RunSerializationError, match="written by a newer graphagent"):
            act()


def test_async_sqlite_names_the_thread_of_an_undecodable_record(tmp_path: Path) -> None:
    """AsyncSqliteSaver's a-methods name thread, checkpoint and way out the same way."""

    async def main() -> None:
        saver = AsyncSqliteSaver(tmp_path / "threads.sqlite")
        try:
            ids = _two_steps(saver)
            set_record(saver, "t", ids[1], b"\xc1\xc1")
            with pytest.raises(SerializationError) as caught:
                await saver.aget("t")
            _names_place_and_way_out(str(caught.value), ids[1])
        finally:
            await saver.aclose()

    asyncio.run(main())


TIMESTAMPS = {
    "fixext4": msgpack.packb(msgpack.Timestamp(1)),
    "fixext8": msgpack.packb(msgpack.Timestamp(1, 5)),
    "ext8": msgpack.packb(msgpack.Timestamp(2**40, 5)),
    "in a list": msgpack.packb([1, msgpack.Timestamp(1)]),
    "a map key": msgpack.packb({msgpack.Timestamp(1): 1}),
}


def _in_tuple_frame() -> bytes:
    inner = msgpack.packb(["a", msgpack.Timestamp(1)])
    tuple_code = msgpack.unpackb(serde.dumps(("a", "b")), ext_hook=lambda c, d: c)
    return msgpack.packb(msgpack.ExtType(tuple_code, inner))


TIMESTAMPS["in a tuple frame"] = _in_tuple_frame()


@pytest.mark.parametrize("where", sorted(TIMESTAMPS))
def test_serde_refuses_msgpacks_timestamp_extension(where: str) -> None:
    """Ext type -1 anywhere (top level, list, map key, inside the serde's own frames) is
    refused as an unknown extension, as every other unknown code is."""
    with pytest.raises(SerializationError, match="unknown extension type -1"):
        serde.loads(TIMESTAMPS[where])


def test_serde_still_reads_bytes_that_only_look_like_a_timestamp() -> None:
    """Values whose bytes hold the timestamp's markers (in strings of bytes, in numbers)
    decode as they were stored."""
    values = [b"\xd6\xff\xd7\xff\xc7\x0c\xff", 0xD6FF, -0.0000123, {"k": b"\xd7\xff" * 9}]
    for value in values:
        assert serde.loads(serde.dumps(value)) == value


def test_a_timestamp_in_a_stored_value_is_refused_on_every_saver(saver: CheckpointSaver) -> None:
    """A value field holding a msgpack timestamp reads as an error naming the extension."""
    ids = _two_steps(saver)
    set_data(saver, "t", f"v|{ids[1]}", msgpack.packb({"x": msgpack.Timestamp(1)}))
    with pytest.raises(SerializationError, match="unknown extension type -1"):
        saver.get("t")
