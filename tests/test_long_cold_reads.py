"""A long history read cold on every durable store: whole and in order, and an item
missing from it refused (Redis returns a long read as one string cut by lengths; SQLite
reads blocks: see tests/test_sqlite_block_read.py)."""

from __future__ import annotations

from typing import Any

import _tamper
import pytest
from _stores import Store, close

from checkpoint import RedisSaver
from checkpoint._sqlschema import encode_text
from checkpoint.errors import SerializationError
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import AssistantMessage, UserMessage


def chat(saver: Any) -> Any:
    """A one-node chat graph: each turn's user message gets one numbered answer."""

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AssistantMessage(f"answer to {len(state['messages'])}")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    return g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)


@pytest.mark.parametrize("n", [256, 300, 1500])
def test_a_long_history_reads_whole_cold(store: Store, n: int) -> None:
    """A history of n messages (plus its answer and a later turn) read by a saver that
    never read it is exactly what was written, empty and binary-looking texts included."""
    writer = store.open()
    try:
        app = chat(writer)
        texts = ["" if i % 7 == 0 else f"m {i}\x00\xff" for i in range(n)]
        app.invoke({"messages": [UserMessage(t) for t in texts]}, {"thread_id": "t"})
        out = app.invoke({"messages": [UserMessage("again")]}, {"thread_id": "t"})
        expected = [m.text for m in out["messages"]]
        reader = store.open()
        try:
            cp = reader.get("t")
            assert cp is not None
            assert [m.text for m in cp.values["messages"]] == expected
        finally:
            close(reader)
    finally:
        writer.delete_thread("t")
        close(writer)


def _delete(saver: Any, thread: str, field: str) -> None:
    """Remove one stored data field behind the saver's back."""
    if isinstance(saver, RedisSaver):
        key = _tamper._redis_key(saver, thread, "data")
        saver.client.hdel(key, field.encode("utf-8", "surrogatepass"))
    else:
        _tamper._sql(
            saver,
            "DELETE FROM {t}graphagent_data WHERE thread_id = ? AND field = ?",
            encode_text(thread),
            encode_text(field),
        )


def test_an_item_missing_from_a_long_history_is_refused(store: Store) -> None:
    """Delete one stored item (and, on SQLite, the block copy holding it) of a
    700-message history: a cold read raises SerializationError (Redis sends the missing
    item's length as -1 in a long read)."""
    writer = store.open()
    try:
        chat(writer).invoke(
            {"messages": [UserMessage(f"m {i}") for i in range(700)]}, {"thread_id": "t"}
        )
        fields = _tamper.data(writer, "t")
        doomed = [f for f in fields if f.endswith("|345") or f.endswith(f"|{345 // 256}")]
        assert any(f.startswith("l|") for f in doomed)
        for f in doomed:
            if f.startswith(("l|", "k|")):
                _delete(writer, "t", f)
        reader = store.open()
        try:
            with pytest.raises(SerializationError):
                reader.get("t")
        finally:
            close(reader)
    finally:
        writer.delete_thread("t")
        close(writer)
