"""``RedisSaver``: checkpoints on plain Redis (>= 6, no modules), Redis Cluster included.

Keys of one thread share the hash tag ``{<prefix>:<thread>}`` so they live in one
cluster slot::

    {p:t}:head     string  id of the newest checkpoint
    {p:t}:cp       hash    checkpoint id -> record (bookkeeping, see ``_layout``);
                           ids are time-ordered, so history is the sorted field names
    {p:t}:data     hash    values and log items
    {p:t}:writes   hash    "<checkpoint id>|<task>" -> pending writes

A step is one ``EVALSHA``: it checks the head (optimistic concurrency), writes the
record, the changed values and the appended items, moves the head, drops the
parent's pending writes and refreshes the TTL of every key, atomically.
Only ordinary data commands and ``EVALSHA``/``EVAL`` are used.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis
import redis.asyncio as aredis
from redis.exceptions import NoScriptError, RedisError

from checkpoint import _layout as layout
from checkpoint.base import Checkpoint, CheckpointSaver, CheckpointWrite, PendingWrite
from checkpoint.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStorageError,
)
from checkpoint.serde import Serde, default_serde

__all__ = ["AsyncRedisSaver", "RedisSaver"]

_PUT = """
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return {0, cur} end
local n = tonumber(ARGV[6])
local i = 8
while n > 0 do
  local batch = math.min(n, 256)
  local args = {}
  for j = 1, batch * 2 do args[j] = ARGV[i + j - 1] end
  redis.call('HSET', KEYS[3], unpack(args))
  i = i + batch * 2
  n = n - batch
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[5] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then
  local prefix = ARGV[5] .. '|'
  for _, f in ipairs(redis.call('HKEYS', KEYS[4])) do
    if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', KEYS[4], f) end
  end
end
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ttl) end
end
if ARGV[7] == '1' then return {1, redis.call('HLEN', KEYS[2])} end
return {1, 0}
"""

_READ = """
local id = ARGV[1]
if id == '' then
  id = redis.call('GET', KEYS[1])
  if not id then return nil end
end
return {id, redis.call('HGET', KEYS[2], id)}
"""


def escape_thread_id(thread_id: str) -> str:
    """Make a thread id safe inside a hash-tagged key (``{``, ``}`` and ``%`` escaped)."""
    return thread_id.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


def unescape_thread_id(escaped: str) -> str:
    """Reverse :func:`escape_thread_id`."""
    return escaped.replace("%7D", "}").replace("%7B", "{").replace("%25", "%")


@contextmanager
def _redis_errors(action: str) -> Iterator[None]:
    """Translate redis-py errors into ``CheckpointStorageError`` at the boundary."""
    try:
        yield
    except CheckpointError:
        raise
    except RedisError as exc:
        raise CheckpointStorageError(
            f"Redis failed while {action}: {type(exc).__name__}: {exc}"
        ) from exc
    except OSError as exc:
        raise CheckpointStorageError(f"Redis unreachable while {action}: {exc}") from exc


class _Keys:
    __slots__ = ("cp", "data", "head", "writes")

    def __init__(self, prefix: str, thread_id: str) -> None:
        tag = f"{{{prefix}:{escape_thread_id(thread_id)}}}"
        self.head = f"{tag}:head"
        self.cp = f"{tag}:cp"
        self.data = f"{tag}:data"
        self.writes = f"{tag}:writes"

    def all(self) -> list[str]:
        return [self.head, self.cp, self.data, self.writes]


class _RedisLogic:
    """What sync and async savers share: key layout, script arguments, decoding."""

    def __init__(
        self,
        *,
        prefix: str,
        ttl: float | None,
        keep_last: int | None,
        serde: Serde | None,
    ) -> None:
        if not prefix or any(c in prefix for c in "{}"):
            raise ValueError(f"invalid key prefix {prefix!r}: it must be non-empty, without braces")
        if keep_last is not None and keep_last < 1:
            raise ValueError("keep_last must be at least 1 (or None to keep everything)")
        self.prefix = prefix
        self.ttl_ms = int(ttl * 1000) if ttl else 0
        self.keep_last = keep_last
        self.serde = serde or default_serde
        self._records: dict[tuple[str, str], layout.Record] = {}

    def keys(self, thread_id: str) -> _Keys:
        return _Keys(self.prefix, thread_id)

    def cached(self, thread_id: str, checkpoint_id: str) -> layout.Record | None:
        # Records never change once written, so caching them by id is always safe.
        return self._records.get((thread_id, checkpoint_id))

    def remember(self, thread_id: str, record: layout.Record) -> layout.Record:
        if len(self._records) > 4096:
            self._records.clear()
        self._records[(thread_id, record.id)] = record
        return record

    def decode_record(self, thread_id: str, blob: bytes) -> layout.Record:
        return self.remember(thread_id, layout.decode_record(blob, self.serde.loads))

    def put_args(
        self,
        thread_id: str,
        write: CheckpointWrite,
        expected_head: str | None,
        parent: layout.Record | None,
    ) -> tuple[list[str], list[Any], layout.Record]:
        plan = layout.plan_put(
            parent, write, on_head=write.parent_id == expected_head, dumps=self.serde.dumps
        )
        args: list[Any] = [
            expected_head or "",
            write.id,
            plan.record_blob,
            self.ttl_ms,
            write.parent_id or "",
            len(plan.data),
            "1" if self.keep_last is not None else "0",
        ]
        for f, v in plan.data.items():
            args.append(f)
            args.append(v)
        return self.keys(thread_id).all(), args, plan.record

    def check_put(
        self, thread_id: str, result: Any, expected_head: str | None, record: layout.Record
    ) -> bool:
        ok, info = result
        if not ok:
            current = info.decode() if isinstance(info, bytes) else info
            raise CheckpointConflictError(
                f"thread {thread_id!r} moved to checkpoint {current or None!r} while this run "
                f"expected {expected_head!r}; nothing was written. Reload the thread and run "
                "again, or serialise runs per thread"
            )
        self.remember(thread_id, record)
        return self.keep_last is not None and int(info) > self.keep_last

    def writes_mapping(
        self, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> dict[str, bytes]:
        by_task: dict[str, list[PendingWrite]] = {}
        for w in writes:
            by_task.setdefault(w.task, []).append(w)
        return {
            f"{checkpoint_id}|{task}": layout.encode_writes(group, self.serde.dumps)
            for task, group in by_task.items()
        }

    def pending(self, checkpoint_id: str, all_writes: dict[bytes, bytes]) -> list[PendingWrite]:
        prefix = f"{checkpoint_id}|".encode()
        mine = {k.decode()[len(prefix) :]: v for k, v in all_writes.items() if k.startswith(prefix)}
        return layout.group_writes(mine, self.serde.loads)

    @staticmethod
    def history_ids(raw: Any, limit: int | None, before: str | None) -> list[str]:
        ids = sorted((i.decode() if isinstance(i, bytes) else str(i) for i in raw), reverse=True)
        if before is not None:
            ids = [i for i in ids if i < before]
        return ids if limit is None else ids[:limit]

    def not_found(self, thread_id: str, checkpoint_id: str) -> CheckpointNotFoundError:
        return CheckpointNotFoundError(f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}")


class RedisSaver(CheckpointSaver):
    """Keep threads in Redis, so any process that reaches it can resume them.

    Args:
        client: a ``redis.Redis`` (sync) client. The async twins run its calls in a
            worker thread; for a native ``redis.asyncio`` client use
            :class:`AsyncRedisSaver`.
        prefix: first part of every key; threads of different prefixes never meet.
        ttl: seconds after the last write that a thread's keys expire (``None``: never).
        keep_last: keep only this many newest checkpoints per thread (costs an extra
            round trip on steps that prune).
        serde: the codec (default: the process-wide one).

    Example:
        >>> saver = RedisSaver.from_url("redis://localhost:6379/0", ttl=7 * 86400)  # doctest: +SKIP
        >>> app = graph.compile(saver=saver)                                       # doctest: +SKIP
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "graphagent",
        ttl: float | None = None,
        keep_last: int | None = None,
        serde: Serde | None = None,
    ) -> None:
        self.client = client
        self.logic = _RedisLogic(prefix=prefix, ttl=ttl, keep_last=keep_last, serde=serde)
        self._shas: dict[str, str] = {}

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        ttl: float | None = None,
        prefix: str = "graphagent",
        keep_last: int | None = None,
        serde: Serde | None = None,
        **client_options: Any,
    ) -> RedisSaver:
        """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``).

        The connection is made lazily; a wrong URL fails on first use with a
        :class:`CheckpointStorageError`.
        """
        client = redis.Redis.from_url(url, **client_options)
        return cls(client, prefix=prefix, ttl=ttl, keep_last=keep_last, serde=serde)

    @property
    def prefix(self) -> str:
        """The key prefix."""
        return self.logic.prefix

    def _eval(self, script: str, keys: list[str], args: list[Any]) -> Any:
        # EVALSHA straight on the client: redis-py's Script wrapper costs ~10 us a call.
        sha = self._shas.get(script)
        if sha is not None:
            try:
                return self.client.evalsha(sha, len(keys), *keys, *args)
            except NoScriptError:
                pass
        self._shas[script] = sha = str(self.client.script_load(script))
        return self.client.evalsha(sha, len(keys), *keys, *args)

    def _record(self, thread_id: str, checkpoint_id: str) -> layout.Record:
        record = self.logic.cached(thread_id, checkpoint_id)
        if record is not None:
            return record
        blob = self.client.hget(self.logic.keys(thread_id).cp, checkpoint_id)
        if blob is None:
            raise self.logic.not_found(thread_id, checkpoint_id)
        return self.logic.decode_record(thread_id, bytes(blob))  # type: ignore[arg-type]

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the new head in one round trip (see ``CheckpointSaver.put``)."""
        with _redis_errors(f"writing checkpoint {write.id} of thread {thread_id!r}"):
            parent = (
                self._record(thread_id, write.parent_id) if write.parent_id is not None else None
            )
            keys, args, record = self.logic.put_args(thread_id, write, expected_head, parent)
            result = self._eval(_PUT, keys, args)
            if self.logic.check_put(thread_id, result, expected_head, record):
                self._prune(thread_id)

    def _prune(self, thread_id: str) -> None:
        assert self.logic.keep_last is not None
        k = self.logic.keys(thread_id)
        ids = self.logic.history_ids(self.client.hkeys(k.cp), None, None)[::-1]
        if len(ids) <= self.logic.keep_last:
            return
        records = [self._record(thread_id, i) for i in ids]
        cut = len(ids) - self.logic.keep_last
        drop, fields = layout.plan_prune(records[:cut], records[cut:])
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(k.cp, *drop)
        if fields:
            pipe.hdel(k.data, *fields)
        pipe.execute()

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        if not writes:
            return
        k = self.logic.keys(thread_id)
        with _redis_errors(f"saving pending writes of thread {thread_id!r}"):
            pipe = self.client.pipeline(transaction=True)
            pipe.hset(k.writes, mapping=self.logic.writes_mapping(checkpoint_id, writes))  # type: ignore[arg-type]
            if self.logic.ttl_ms:
                pipe.pexpire(k.writes, self.logic.ttl_ms)
            pipe.execute()

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state; two round trips."""
        k = self.logic.keys(thread_id)
        with _redis_errors(f"reading thread {thread_id!r}"):
            found = self._eval(_READ, [k.head, k.cp], [checkpoint_id or ""])
            if found is None:
                if checkpoint_id is not None:
                    raise self.logic.not_found(thread_id, checkpoint_id)
                return None
            cid, blob = found[0].decode(), found[1]
            if blob is None:
                raise self.logic.not_found(thread_id, cid)
            record = self.logic.cached(thread_id, cid) or self.logic.decode_record(thread_id, blob)
            return self._load(thread_id, record)

    def _load(self, thread_id: str, record: layout.Record) -> Checkpoint:
        k = self.logic.keys(thread_id)
        fields = layout.read_fields(record)
        pipe = self.client.pipeline(transaction=False)
        if fields:
            pipe.hmget(k.data, fields)
        pipe.hgetall(k.writes)
        results = pipe.execute()
        blobs = results[0] if fields else []
        values = layout.rebuild(record, blobs, self.logic.serde.loads)
        pending = self.logic.pending(record.id, results[-1])
        return layout.to_checkpoint(thread_id, record, values, pending)

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        k = self.logic.keys(thread_id)
        with _redis_errors(f"listing thread {thread_id!r}"):
            ids = self.logic.history_ids(self.client.hkeys(k.cp), limit, before)
            return [self._load(thread_id, self._record(thread_id, i)) for i in ids]

    def delete_thread(self, thread_id: str) -> None:
        """Remove every key of the thread."""
        with _redis_errors(f"deleting thread {thread_id!r}"):
            self.client.delete(*self.logic.keys(thread_id).all())

    def head(self, thread_id: str) -> str | None:
        """The thread's head id (one round trip)."""
        with _redis_errors(f"reading thread {thread_id!r}"):
            raw = self.client.get(self.logic.keys(thread_id).head)
        return raw.decode() if isinstance(raw, bytes) else None

    def threads(self) -> builtins.list[str]:
        """Every thread id under this prefix (uses SCAN; for tools, not hot paths)."""
        with _redis_errors("listing threads"):
            pattern = f"{{{self.prefix}:*}}:head"
            found = {
                unescape_thread_id(key.decode()[len(self.prefix) + 2 : -len("}:head")])
                for key in self.client.scan_iter(match=pattern, count=500)
            }
        return sorted(found)

    def close(self) -> None:
        """Close the sync client's connections."""
        self.client.close()


class AsyncRedisSaver(CheckpointSaver):
    """``RedisSaver`` over a ``redis.asyncio.Redis`` client, for async services.

    Same keys and layout as :class:`RedisSaver` (the two read each other's threads).
    Its sync methods raise ``TypeError``; use the ``a``-twins and ``aclose()``.
    """

    def __init__(
        self,
        client: aredis.Redis,
        *,
        prefix: str = "graphagent",
        ttl: float | None = None,
        keep_last: int | None = None,
        serde: Serde | None = None,
    ) -> None:
        self.client = client
        self.logic = _RedisLogic(prefix=prefix, ttl=ttl, keep_last=keep_last, serde=serde)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        ttl: float | None = None,
        prefix: str = "graphagent",
        keep_last: int | None = None,
        serde: Serde | None = None,
    ) -> AsyncRedisSaver:
        """Connect to ``url`` lazily."""
        return cls(
            aredis.Redis.from_url(url), prefix=prefix, ttl=ttl, keep_last=keep_last, serde=serde
        )

    async def _eval(self, script: str, keys: list[str], args: list[Any]) -> Any:
        # EVALSHA first; the script is loaded once per server on NOSCRIPT.
        sha = _SHAS.get(script)
        if sha is not None:
            try:
                return await self.client.evalsha(sha, len(keys), *keys, *args)
            except NoScriptError:
                pass
        _SHAS[script] = await self.client.script_load(script)
        return await self.client.evalsha(_SHAS[script], len(keys), *keys, *args)

    async def _record(self, thread_id: str, checkpoint_id: str) -> layout.Record:
        record = self.logic.cached(thread_id, checkpoint_id)
        if record is not None:
            return record
        blob: Any = await self.client.hget(self.logic.keys(thread_id).cp, checkpoint_id)
        if blob is None:
            raise self.logic.not_found(thread_id, checkpoint_id)
        return self.logic.decode_record(thread_id, blob)

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Store ``write`` as the new head in one round trip."""
        with _redis_errors(f"writing checkpoint {write.id} of thread {thread_id!r}"):
            parent = (
                await self._record(thread_id, write.parent_id)
                if write.parent_id is not None
                else None
            )
            keys, args, record = self.logic.put_args(thread_id, write, expected_head, parent)
            result = await self._eval(_PUT, keys, args)
            if self.logic.check_put(thread_id, result, expected_head, record):
                await self._prune(thread_id)

    async def _prune(self, thread_id: str) -> None:
        assert self.logic.keep_last is not None
        k = self.logic.keys(thread_id)
        raw: Any = await self.client.hkeys(k.cp)
        ids = self.logic.history_ids(raw, None, None)[::-1]
        if len(ids) <= self.logic.keep_last:
            return
        records = [await self._record(thread_id, i) for i in ids]
        cut = len(ids) - self.logic.keep_last
        drop, fields = layout.plan_prune(records[:cut], records[cut:])
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(k.cp, *drop)
        if fields:
            pipe.hdel(k.data, *fields)
        await pipe.execute()

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        if not writes:
            return
        k = self.logic.keys(thread_id)
        with _redis_errors(f"saving pending writes of thread {thread_id!r}"):
            pipe = self.client.pipeline(transaction=True)
            pipe.hset(k.writes, mapping=self.logic.writes_mapping(checkpoint_id, writes))  # type: ignore[arg-type]
            if self.logic.ttl_ms:
                pipe.pexpire(k.writes, self.logic.ttl_ms)
            await pipe.execute()

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state."""
        k = self.logic.keys(thread_id)
        with _redis_errors(f"reading thread {thread_id!r}"):
            found = await self._eval(_READ, [k.head, k.cp], [checkpoint_id or ""])
            if found is None:
                if checkpoint_id is not None:
                    raise self.logic.not_found(thread_id, checkpoint_id)
                return None
            cid, blob = found[0].decode(), found[1]
            if blob is None:
                raise self.logic.not_found(thread_id, cid)
            record = self.logic.cached(thread_id, cid) or self.logic.decode_record(thread_id, blob)
            return await self._load(thread_id, record)

    async def _load(self, thread_id: str, record: layout.Record) -> Checkpoint:
        k = self.logic.keys(thread_id)
        fields = layout.read_fields(record)
        pipe = self.client.pipeline(transaction=False)
        if fields:
            pipe.hmget(k.data, fields)
        pipe.hgetall(k.writes)
        results = await pipe.execute()
        blobs = results[0] if fields else []
        values = layout.rebuild(record, blobs, self.logic.serde.loads)
        pending = self.logic.pending(record.id, results[-1])
        return layout.to_checkpoint(thread_id, record, values, pending)

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        k = self.logic.keys(thread_id)
        with _redis_errors(f"listing thread {thread_id!r}"):
            raw: Any = await self.client.hkeys(k.cp)
            out = []
            for i in self.logic.history_ids(raw, limit, before):
                out.append(await self._load(thread_id, await self._record(thread_id, i)))
            return out

    async def adelete_thread(self, thread_id: str) -> None:
        """Remove every key of the thread."""
        with _redis_errors(f"deleting thread {thread_id!r}"):
            await self.client.delete(*self.logic.keys(thread_id).all())

    async def ahead(self, thread_id: str) -> str | None:
        """The thread's head id."""
        with _redis_errors(f"reading thread {thread_id!r}"):
            raw = await self.client.get(self.logic.keys(thread_id).head)
        return raw.decode() if isinstance(raw, bytes) else None

    async def aclose(self) -> None:
        """Close the async client's connections."""
        await self.client.aclose()

    def _sync_only(self) -> TypeError:
        return TypeError("AsyncRedisSaver has only async methods; use RedisSaver for sync runs")

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Not available: use :meth:`aput`."""
        raise self._sync_only()

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Not available: use :meth:`aput_writes`."""
        raise self._sync_only()

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """Not available: use :meth:`aget`."""
        raise self._sync_only()

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Not available: use :meth:`alist`."""
        raise self._sync_only()

    def delete_thread(self, thread_id: str) -> None:
        """Not available: use :meth:`adelete_thread`."""
        raise self._sync_only()


_SHAS: dict[str, str] = {}
