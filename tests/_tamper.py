"""Write bytes straight into a saver's store, behind its back, as an attacker or a damaged
disk would: records, data fields and pending writes of one thread, on every saver."""

from __future__ import annotations

import sqlite3
from typing import Any

from checkpoint import MemorySaver, PostgresSaver, RedisSaver, SqliteSaver
from checkpoint._sqlschema import decode_text, encode_text
from checkpoint.base import CheckpointSaver
from checkpoint.redis._keys import escape_thread_id


def _sql(saver: CheckpointSaver, query: str, *params: Any) -> list[Any]:
    if isinstance(saver, SqliteSaver):
        with sqlite3.connect(saver.path) as conn:
            return conn.execute(query.replace("{t}", ""), params).fetchall()
    assert isinstance(saver, PostgresSaver)
    with saver.pool.connection() as conn:
        text = query.replace("{t}", f'"{saver.schema}".').replace("?", "%s")
        cursor = conn.execute(text, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def _redis_key(saver: RedisSaver, thread: str, kind: str) -> str:
    return f"{{{saver.prefix}:{escape_thread_id(thread)}}}:{kind}"


def forget(saver: CheckpointSaver) -> None:
    """Drop the saver's caches of decoded records and items, so the next read decodes
    stored bytes (as a reader that never read the thread does: a cache holds what was
    stored once, which the layout never changes in place)."""
    saver.read_cache.clear()  # type: ignore[attr-defined]
    if isinstance(saver, MemorySaver):
        pass  # it keeps its records as built: what is tampered with is read as given
    elif isinstance(saver, RedisSaver):
        saver.logic._records.clear()
    else:
        saver.logic._records.clear()  # type: ignore[attr-defined]


def records(saver: CheckpointSaver, thread: str) -> dict[str, bytes]:
    """Checkpoint id -> stored record blob."""
    if isinstance(saver, MemorySaver):
        # it keeps the records it built, not their bytes: these are the bytes it would store
        return {
            cid: r if isinstance(r, bytes) else saver.serde.dumps(r.to_plain())
            for cid, r in saver._threads[thread].records.items()
        }
    if isinstance(saver, RedisSaver):
        raw = saver.client.hgetall(_redis_key(saver, thread, "cp"))
        return {k.decode(): bytes(v) for k, v in raw.items()}
    rows = _sql(
        saver,
        "SELECT id, record FROM {t}graphagent_checkpoints WHERE thread_id = ?",
        encode_text(thread),
    )
    return {str(cid): bytes(blob) for cid, blob in rows}


def set_record(saver: CheckpointSaver, thread: str, cid: str, blob: bytes) -> None:
    """Overwrite one stored record."""
    if isinstance(saver, MemorySaver):
        saver._threads[thread].records[cid] = blob
    elif isinstance(saver, RedisSaver):
        saver.client.hset(_redis_key(saver, thread, "cp"), cid, blob)
    else:
        _sql(
            saver,
            "UPDATE {t}graphagent_checkpoints SET record = ? WHERE thread_id = ? AND id = ?",
            blob,
            encode_text(thread),
            cid,
        )
    forget(saver)


def data(saver: CheckpointSaver, thread: str) -> dict[str, bytes]:
    """Data field -> stored bytes (values and log items)."""
    if isinstance(saver, MemorySaver):
        return dict(saver._threads[thread].data)
    if isinstance(saver, RedisSaver):
        raw = saver.client.hgetall(_redis_key(saver, thread, "data"))
        return {k.decode("utf-8", "surrogatepass"): bytes(v) for k, v in raw.items()}
    rows = _sql(
        saver,
        "SELECT field, value FROM {t}graphagent_data WHERE thread_id = ?",
        encode_text(thread),
    )
    return {decode_text(f): bytes(v) for f, v in rows}


def set_data(saver: CheckpointSaver, thread: str, field: str, blob: bytes) -> None:
    """Overwrite one stored data field."""
    if isinstance(saver, MemorySaver):
        saver._threads[thread].data[field] = blob
    elif isinstance(saver, RedisSaver):
        key = _redis_key(saver, thread, "data")
        saver.client.hset(key, field.encode("utf-8", "surrogatepass"), blob)
    else:
        _sql(
            saver,
            "UPDATE {t}graphagent_data SET value = ? WHERE thread_id = ? AND field = ?",
            blob,
            encode_text(thread),
            encode_text(field),
        )
    forget(saver)


def set_writes(saver: CheckpointSaver, thread: str, cid: str, task: str, blob: bytes) -> None:
    """Store ``blob`` as the pending writes of ``task`` for checkpoint ``cid``."""
    if isinstance(saver, MemorySaver):
        saver._threads[thread].writes.setdefault(cid, {})[task] = blob
    elif isinstance(saver, RedisSaver):
        saver.client.hset(_redis_key(saver, thread, "writes"), f"{cid}|{task}", blob)
    else:
        _sql(
            saver,
            "INSERT INTO {t}graphagent_writes (thread_id, checkpoint_id, task, value) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (thread_id, checkpoint_id, task) "
            "DO UPDATE SET value = excluded.value",
            encode_text(thread),
            cid,
            encode_text(task),
            blob,
        )
