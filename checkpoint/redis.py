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
import hashlib
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import redis
import redis.asyncio as aredis
from redis.exceptions import NoScriptError, RedisError
from typing_extensions import Self

from checkpoint import _layout as layout
from checkpoint._history import History, needed_fields
from checkpoint.base import Checkpoint, CheckpointSaver, CheckpointWrite, PendingWrite
from checkpoint.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStorageError,
)
from checkpoint.locks import LockPolicy, ahold, hold
from checkpoint.serde import Serde, default_serde

__all__ = ["AsyncRedisSaver", "RedisSaver"]

T = TypeVar("T")

_PUT = """
-- ARGV[1]: "expected|id|ttl_ms|parent|n_fields|want_count" (ids are hex: no '|')
-- ARGV[2]: the record; ARGV[3..]: n_fields field/value pairs for the data hash
local h = {}
for part in string.gmatch(ARGV[1] .. '|', '([^|]*)|') do h[#h + 1] = part end
local cur = redis.call('GET', KEYS[1]) or ''
-- already the head: a client retry of a write that landed before its reply was lost
if cur == h[2] then return {1, 0} end
if cur ~= h[1] then return {0, cur} end
local n = tonumber(h[5])
local i = 3
while n > 0 do
  local batch = math.min(n, 256)
  local args = {}
  for j = 1, batch * 2 do args[j] = ARGV[i + j - 1] end
  redis.call('HSET', KEYS[3], unpack(args))
  i = i + batch * 2
  n = n - batch
end
redis.call('HSET', KEYS[2], h[2], ARGV[2])
redis.call('SET', KEYS[1], h[2])
if h[4] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then
  local prefix = h[4] .. '|'
  for _, f in ipairs(redis.call('HKEYS', KEYS[4])) do
    if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', KEYS[4], f) end
  end
end
local ttl = tonumber(h[3])
if ttl > 0 then
  for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ttl) end
end
if h[6] == '1' then return {1, redis.call('HLEN', KEYS[2])} end
return {1, 0}
"""

# renew or release the lock only if we still hold it (the token is ours)
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_READ = """
local id = ARGV[1]
if id == '' then
  id = redis.call('GET', KEYS[1])
  if not id then return nil end
end
return {id, redis.call('HGET', KEYS[2], id)}
"""


_PREFIX_SEPARATORS = ":{}"
_BATCH = 1000  # fields per HMGET: big replies stay under a few MB each


def glob_escape(text: str) -> str:
    """``text`` as a literal inside a Redis ``SCAN MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def escape_thread_id(thread_id: str) -> str:
    """Make a thread id safe inside a hash-tagged key (``{``, ``}`` and ``%`` escaped)."""
    return thread_id.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


def unescape_thread_id(escaped: str) -> str:
    """Reverse :func:`escape_thread_id`."""
    return escaped.replace("%7D", "}").replace("%7B", "{").replace("%25", "%")


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _storage_error(action: str, exc: Exception) -> CheckpointStorageError:
    """The ``CheckpointStorageError`` for a redis-py or socket error (the one boundary)."""
    if isinstance(exc, RedisError):
        made = CheckpointStorageError(f"Redis failed while {action}: {type(exc).__name__}: {exc}")
    else:
        made = CheckpointStorageError(f"Redis unreachable while {action}: {exc}")
    made.__cause__ = exc
    return made


class _Keys:
    __slots__ = ("cp", "data", "head", "lock", "writes")

    def __init__(self, prefix: str, thread_id: str) -> None:
        tag = f"{{{prefix}:{escape_thread_id(thread_id)}}}"
        self.head = f"{tag}:head"
        self.cp = f"{tag}:cp"
        self.data = f"{tag}:data"
        self.writes = f"{tag}:writes"
        # not in all(): deleting a thread must not break the lock of a run holding it
        self.lock = f"{tag}:lock"

    def all(self) -> list[str]:
        return [self.head, self.cp, self.data, self.writes]


@dataclass(slots=True)
class _Eval:
    script: str
    keys: list[str]
    args: list[Any]


@dataclass(slots=True)
class _Call:
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Pipeline:
    calls: list[_Call]
    transaction: bool


@dataclass(slots=True)
class _Scan:
    """Every key matching ``match``, on every node (redis-py walks a cluster's primaries)."""

    match: str


_Op = _Eval | _Call | _Pipeline | _Scan
_Program = Generator[_Op, Any, T]


class _RedisLogic:
    """Everything the sync and async savers share, as programs of Redis operations.

    Each saver operation is a generator that yields ``_Eval``/``_Call``/``_Pipeline``
    and receives their replies; ``RedisSaver`` and ``AsyncRedisSaver`` only perform
    them, with a sync or an async client.
    """

    def __init__(
        self,
        *,
        prefix: str,
        ttl: float | None,
        keep_last: int | None,
        serde: Serde | None,
    ) -> None:
        if not prefix or any(c in prefix for c in _PREFIX_SEPARATORS):
            # the first ':' inside the hash tag ends the prefix; allowing one in the prefix
            # would let thread 'eu:1' of prefix 'p' and thread '1' of prefix 'p:eu' share keys
            raise ValueError(
                f"invalid key prefix {prefix!r}: it must be non-empty and contain none of "
                f"{' '.join(_PREFIX_SEPARATORS)} (use '-' or '.' to separate tenants, e.g. "
                "'myapp-eu')"
            )
        if keep_last is not None and keep_last < 1:
            raise ValueError("keep_last must be at least 1 (or None to keep everything)")
        self.prefix = prefix
        self.ttl_ms = int(ttl * 1000) if ttl else 0
        self.keep_last = keep_last
        self.serde = serde or default_serde
        self._records: dict[tuple[str, str], layout.Record] = {}

    def keys(self, thread_id: str) -> _Keys:
        return _Keys(self.prefix, thread_id)

    def lock_programs(
        self, thread_id: str, policy: LockPolicy
    ) -> tuple[
        Callable[[str], _Program[bool]],
        Callable[[str], _Program[bool]],
        Callable[[str], _Program[None]],
    ]:
        """Take, renew and release of the thread's lock, each a program of one command."""
        key, lease_ms = self.keys(thread_id).lock, int(policy.lease * 1000)

        def take(token: str) -> _Program[bool]:
            return bool((yield _Call("set", (key, token), {"nx": True, "px": lease_ms})))

        def renew(token: str) -> _Program[bool]:
            return bool((yield _Eval(_RENEW, [key], [token, lease_ms])))

        def release(token: str) -> _Program[None]:
            yield _Eval(_RELEASE, [key], [token])

        return take, renew, release

    def _remember(self, thread_id: str, record: layout.Record) -> layout.Record:
        # Records never change once written, so caching them by id is always safe.
        if len(self._records) > 4096:
            self._records.clear()
        self._records[(thread_id, record.id)] = record
        return record

    def _not_found(self, thread_id: str, checkpoint_id: str) -> CheckpointNotFoundError:
        return CheckpointNotFoundError(f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}")

    def record(self, thread_id: str, checkpoint_id: str) -> _Program[layout.Record]:
        cached = self._records.get((thread_id, checkpoint_id))
        if cached is not None:
            return cached
        blob = yield _Call("hget", (self.keys(thread_id).cp, checkpoint_id))
        if blob is None:
            raise self._not_found(thread_id, checkpoint_id)
        return self._remember(thread_id, layout.decode_record(bytes(blob), self.serde.loads))

    def put(
        self, thread_id: str, write: CheckpointWrite, expected_head: str | None
    ) -> _Program[None]:
        parent = None
        if write.parent_id is not None:
            parent = yield from self.record(thread_id, write.parent_id)
        plan = layout.plan_put(
            parent, write, on_head=write.parent_id == expected_head, dumps=self.serde.dumps
        )
        for cid in (write.id, write.parent_id, expected_head):
            if cid and "|" in cid:
                raise CheckpointError(f"checkpoint id {cid!r} contains '|'; ids are hex text")
        header = (
            f"{expected_head or ''}|{write.id}|{self.ttl_ms}|{write.parent_id or ''}|"
            f"{len(plan.data)}|{'1' if self.keep_last is not None else '0'}"
        )
        args: list[Any] = [header, plan.record_blob]
        for f, v in plan.data.items():
            args.append(f)
            args.append(v)
        ok, info = yield _Eval(_PUT, self.keys(thread_id).all(), args)
        if not ok:
            current = info.decode() if isinstance(info, bytes) else info
            if not current and expected_head is not None:
                raise CheckpointConflictError(
                    f"thread {thread_id!r} is gone from Redis (its keys expired or were "
                    f"deleted, or Redis restarted without its data) while this run expected "
                    f"checkpoint {expected_head!r}; nothing was written. Start the thread "
                    "again, or give Redis persistence (AOF) if restarts must keep threads"
                )
            raise CheckpointConflictError(
                f"thread {thread_id!r} moved to checkpoint {current or None!r} while this run "
                f"expected {expected_head!r}; nothing was written. Reload the thread and run "
                "again, or serialise runs per thread"
            )
        self._remember(thread_id, plan.record)
        if self.keep_last is not None and int(info) > self.keep_last:
            yield from self._prune(thread_id, self.keep_last)

    def _prune(self, thread_id: str, keep: int) -> _Program[None]:
        k = self.keys(thread_id)
        ids = self._history_ids((yield _Call("hkeys", (k.cp,))), None, None)[::-1]
        if len(ids) <= keep:
            return
        records = []
        for cid in ids:
            records.append((yield from self.record(thread_id, cid)))
        drop, fields = layout.plan_prune(records[: len(ids) - keep], records[len(ids) - keep :])
        calls = [_Call("hdel", (k.cp, *drop))]
        if fields:
            calls.append(_Call("hdel", (k.data, *fields)))
        yield _Pipeline(calls, transaction=True)

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> _Program[None]:
        if not writes:
            return
        by_task: dict[str, list[PendingWrite]] = {}
        for w in writes:
            by_task.setdefault(w.task, []).append(w)
        mapping = {
            f"{checkpoint_id}|{task}": layout.encode_writes(group, self.serde.dumps)
            for task, group in by_task.items()
        }
        k = self.keys(thread_id)
        calls = [_Call("hset", (k.writes,), {"mapping": mapping})]
        if self.ttl_ms:
            calls.append(_Call("pexpire", (k.writes, self.ttl_ms)))
        yield _Pipeline(calls, transaction=True)

    def get(self, thread_id: str, checkpoint_id: str | None) -> _Program[Checkpoint | None]:
        k = self.keys(thread_id)
        found = yield _Eval(_READ, [k.head, k.cp], [checkpoint_id or ""])
        if found is None:
            if checkpoint_id is not None:
                raise self._not_found(thread_id, checkpoint_id)
            return None
        cid, blob = found[0].decode(), found[1]
        if blob is None:
            raise self._not_found(thread_id, cid)
        record = self._records.get((thread_id, cid)) or self._remember(
            thread_id, layout.decode_record(blob, self.serde.loads)
        )
        return (yield from self._load(thread_id, record))

    def _load(self, thread_id: str, record: layout.Record) -> _Program[Checkpoint]:
        k = self.keys(thread_id)
        fields = layout.read_fields(record)
        calls = [_Call("hmget", (k.data, fields))] if fields else []
        calls.append(_Call("hgetall", (k.writes,)))
        results = yield _Pipeline(calls, transaction=False)
        values = layout.rebuild(record, results[0] if fields else [], self.serde.loads)
        prefix = f"{record.id}|".encode()
        mine = {
            key.decode()[len(prefix) :]: v
            for key, v in results[-1].items()
            if key.startswith(prefix)
        }
        pending = layout.group_writes(mine, self.serde.loads)
        return layout.to_checkpoint(thread_id, record, values, pending)

    def history(self, thread_id: str, limit: int | None, before: str | None) -> _Program[History]:
        """Newest first, in four round trips: ids (and the number of data fields),
        records, the fields they need, writes.

        The reads are not one transaction: when a field is gone, a ``keep_last`` prune
        ran in between, and the listing is read once more (the pruned ids are gone too).
        """
        history = yield from self._read_history(thread_id, limit, before)
        if history.complete:
            return history
        return (yield from self._read_history(thread_id, limit, before))

    def _read_history(
        self, thread_id: str, limit: int | None, before: str | None
    ) -> _Program[History]:
        k = self.keys(thread_id)
        raw, stored = yield _Pipeline(
            [_Call("hkeys", (k.cp,)), _Call("hlen", (k.data,))], transaction=False
        )
        ids = self._history_ids(raw, limit, before)
        records = yield from self._records_of(thread_id, ids)
        fields = needed_fields(records, int(stored))
        calls = [
            _Call("hmget", (k.data, fields[i : i + _BATCH])) for i in range(0, len(fields), _BATCH)
        ]
        calls.append(_Call("hgetall", (k.writes,)))
        *found, writes = yield _Pipeline(calls, transaction=False)
        blobs: dict[str, bytes | None] = dict(
            zip(fields, [b for part in found for b in part], strict=True)
        )
        pending: dict[str, dict[str, bytes]] = {}
        for raw, value in writes.items():
            cid, _, task = _text(raw).partition("|")
            pending.setdefault(cid, {})[task] = value
        return History(thread_id, records, blobs, pending, self.serde.loads)

    def _records_of(
        self, thread_id: str, ids: builtins.list[str]
    ) -> _Program[builtins.list[layout.Record]]:
        """The records of ``ids`` (cached ones are not read again); ids pruned meanwhile
        are left out."""
        k = self.keys(thread_id)
        cached = {i: self._records.get((thread_id, i)) for i in ids}
        unread = [i for i, record in cached.items() if record is None]
        if unread:
            calls = [
                _Call("hmget", (k.cp, unread[i : i + _BATCH]))
                for i in range(0, len(unread), _BATCH)
            ]
            parts = yield _Pipeline(calls, transaction=False)
            blobs = [blob for part in parts for blob in part]
            for cid, blob in zip(unread, blobs, strict=True):
                if blob is not None:
                    cached[cid] = layout.decode_record(bytes(blob), self.serde.loads)
        return [record for record in cached.values() if record is not None]

    def delete(self, thread_id: str) -> _Program[None]:
        yield _Call("delete", tuple(self.keys(thread_id).all()))

    def head(self, thread_id: str) -> _Program[str | None]:
        raw = yield _Call("get", (self.keys(thread_id).head,))
        return raw.decode() if isinstance(raw, bytes) else None

    def threads(self) -> _Program[builtins.list[str]]:
        pattern = f"{{{glob_escape(self.prefix)}:*}}:head"
        keys = yield _Scan(pattern)
        start, end = len(self.prefix) + 2, -len("}:head")
        return sorted({unescape_thread_id(bytes(key).decode()[start:end]) for key in keys})

    @staticmethod
    def _history_ids(raw: Any, limit: int | None, before: str | None) -> builtins.list[str]:
        ids = sorted((i.decode() if isinstance(i, bytes) else str(i) for i in raw), reverse=True)
        if before is not None:
            ids = [i for i in ids if i < before]
        return ids if limit is None else ids[:limit]


# Redis names a loaded script by the SHA1 of its text.
_SHA = {
    script: hashlib.sha1(script.encode()).hexdigest() for script in (_PUT, _READ, _RENEW, _RELEASE)
}


C = TypeVar("C", redis.Redis, aredis.Redis)


class _RedisSaverBase(CheckpointSaver, Generic[C]):
    """Construction shared by the sync and the async Redis saver."""

    def __init__(
        self,
        client: C,
        *,
        prefix: str = "graphagent",
        ttl: float | None = None,
        keep_last: int | None = None,
        serde: Serde | None = None,
        lock_timeout: float | None = None,
        lock_lease: float = 30.0,
    ) -> None:
        self.client: C = client
        self.logic = _RedisLogic(prefix=prefix, ttl=ttl, keep_last=keep_last, serde=serde)
        self.lock_policy = LockPolicy.optional(lock_timeout, lock_lease)

    @staticmethod
    def _connect(url: str, **options: Any) -> C:
        raise NotImplementedError

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        ttl: float | None = None,
        prefix: str = "graphagent",
        keep_last: int | None = None,
        serde: Serde | None = None,
        lock_timeout: float | None = None,
        lock_lease: float = 30.0,
        **client_options: Any,
    ) -> Self:
        """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``), lazily.

        A wrong URL fails on first use with a :class:`CheckpointStorageError`.
        ``client_options`` go to the redis client (``socket_timeout``, ...).
        """
        client = cls._connect(url, **client_options)
        return cls(
            client,
            prefix=prefix,
            ttl=ttl,
            keep_last=keep_last,
            serde=serde,
            lock_timeout=lock_timeout,
            lock_lease=lock_lease,
        )

    @property
    def prefix(self) -> str:
        """The key prefix."""
        return self.logic.prefix


class RedisSaver(_RedisSaverBase[redis.Redis]):
    """Keep threads in Redis, so any process that reaches it can resume them.

    Args:
        client: a ``redis.Redis`` (sync) client. The async twins run its calls in a
            worker thread; for a native ``redis.asyncio`` client use
            :class:`AsyncRedisSaver`.
        prefix: first part of every key; threads of different prefixes never meet.
        ttl: seconds after the last write that a thread's keys expire (``None``: never).
        keep_last: keep only this many newest checkpoints per thread (costs extra
            round trips on steps that prune).
        serde: the codec (default: the process-wide one).
        lock_timeout: opt in to one run at a time per thread: a run waits up to this many
            seconds for the thread's lock, then raises ``ThreadLockedError`` (``None``: no
            lock; racing runs are still safe, the loser gets ``CheckpointConflictError``).
        lock_lease: seconds a lock outlives a crashed holder (live runs renew it).

    Example::

        saver = RedisSaver.from_url("redis://localhost:6379/0", ttl=7 * 86400)
        app = graph.compile(saver=saver)
    """

    @staticmethod
    def _connect(url: str, **options: Any) -> redis.Redis:
        return redis.Redis.from_url(url, **options)

    def _run(self, program: _Program[T], action: str) -> T:
        send: Any = None
        try:
            while True:
                op = program.send(send)
                send = self._perform(op)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except (RedisError, OSError) as exc:
            raise _storage_error(action, exc) from exc

    def _perform(self, op: _Op) -> Any:
        client = self.client
        if type(op) is _Eval:
            # EVALSHA straight on the client (redis-py's Script wrapper costs ~10 us a call);
            # the script is loaded once per server, on NOSCRIPT.
            try:
                return client.evalsha(_SHA[op.script], len(op.keys), *op.keys, *op.args)
            except NoScriptError:
                client.script_load(op.script)
                return client.evalsha(_SHA[op.script], len(op.keys), *op.keys, *op.args)
        if type(op) is _Call:
            return getattr(client, op.name)(*op.args, **op.kwargs)
        if type(op) is _Scan:
            return list(client.scan_iter(match=op.match, count=500))
        assert type(op) is _Pipeline
        pipe = client.pipeline(transaction=op.transaction)
        for call in op.calls:
            getattr(pipe, call.name)(*call.args, **call.kwargs)
        return pipe.execute()

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the new head in one round trip (see ``CheckpointSaver.put``)."""
        action = f"writing checkpoint {write.id} of thread {thread_id!r}"
        self._run(self.logic.put(thread_id, write, expected_head), action)

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        action = f"saving pending writes of thread {thread_id!r}"
        self._run(self.logic.put_writes(thread_id, checkpoint_id, writes), action)

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state; two round trips."""
        return self._run(self.logic.get(thread_id, checkpoint_id), f"reading thread {thread_id!r}")

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        return builtins.list(self.history(thread_id, limit=limit, before=before))

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> History:
        """Checkpoints newest first, read in four round trips, states built on read."""
        action = f"listing thread {thread_id!r}"
        return self._run(self.logic.history(thread_id, limit, before), action)

    def delete_thread(self, thread_id: str) -> None:
        """Remove every key of the thread."""
        self._run(self.logic.delete(thread_id), f"deleting thread {thread_id!r}")

    def head(self, thread_id: str) -> str | None:
        """The thread's head id (one round trip)."""
        return self._run(self.logic.head(thread_id), f"reading thread {thread_id!r}")

    def threads(self) -> builtins.list[str]:
        """Every thread id under this prefix (uses SCAN; for tools, not hot paths)."""
        return self._run(self.logic.threads(), "listing threads")

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        """The thread's run lock (a no-op unless made with ``lock_timeout=``)."""
        if self.lock_policy is None:
            return nullcontext()
        take, renew, release = self.logic.lock_programs(thread_id, self.lock_policy)
        action = f"locking thread {thread_id!r}"

        def run(program: Callable[[str], _Program[T]]) -> Callable[[str], T]:
            return lambda token: self._run(program(token), action)

        return hold(self.lock_policy, thread_id, run(take), run(renew), run(release))

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()


class AsyncRedisSaver(_RedisSaverBase[aredis.Redis]):
    """``RedisSaver`` over a ``redis.asyncio.Redis`` client, for async services.

    Same keys and layout as :class:`RedisSaver` (the two read each other's threads).
    Its sync methods raise ``TypeError``; use the ``a``-twins and ``aclose()``.
    """

    @staticmethod
    def _connect(url: str, **options: Any) -> aredis.Redis:
        return aredis.Redis.from_url(url, **options)

    async def _run(self, program: _Program[T], action: str) -> T:
        send: Any = None
        try:
            while True:
                op = program.send(send)
                send = await self._perform(op)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except (RedisError, OSError) as exc:
            raise _storage_error(action, exc) from exc

    async def _perform(self, op: _Op) -> Any:
        client = self.client
        if type(op) is _Eval:
            try:
                return await client.evalsha(_SHA[op.script], len(op.keys), *op.keys, *op.args)
            except NoScriptError:
                await client.script_load(op.script)
                return await client.evalsha(_SHA[op.script], len(op.keys), *op.keys, *op.args)
        if type(op) is _Call:
            return await getattr(client, op.name)(*op.args, **op.kwargs)
        if type(op) is _Scan:
            return [key async for key in client.scan_iter(match=op.match, count=500)]
        assert type(op) is _Pipeline
        pipe = client.pipeline(transaction=op.transaction)
        for call in op.calls:
            getattr(pipe, call.name)(*call.args, **call.kwargs)
        return await pipe.execute()

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Store ``write`` as the new head in one round trip."""
        action = f"writing checkpoint {write.id} of thread {thread_id!r}"
        await self._run(self.logic.put(thread_id, write, expected_head), action)

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        action = f"saving pending writes of thread {thread_id!r}"
        await self._run(self.logic.put_writes(thread_id, checkpoint_id, writes), action)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state."""
        action = f"reading thread {thread_id!r}"
        return await self._run(self.logic.get(thread_id, checkpoint_id), action)

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        return builtins.list(await self.ahistory(thread_id, limit=limit, before=before))

    async def ahistory(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> History:
        """Checkpoints newest first, read in four round trips, states built on read."""
        action = f"listing thread {thread_id!r}"
        return await self._run(self.logic.history(thread_id, limit, before), action)

    async def adelete_thread(self, thread_id: str) -> None:
        """Remove every key of the thread."""
        await self._run(self.logic.delete(thread_id), f"deleting thread {thread_id!r}")

    async def ahead(self, thread_id: str) -> str | None:
        """The thread's head id."""
        return await self._run(self.logic.head(thread_id), f"reading thread {thread_id!r}")

    async def athreads(self) -> builtins.list[str]:
        """Every thread id under this prefix (uses SCAN)."""
        return await self._run(self.logic.threads(), "listing threads")

    def alock(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """The thread's run lock (a no-op unless made with ``lock_timeout=``)."""
        if self.lock_policy is None:
            return nullcontext()
        take, renew, release = self.logic.lock_programs(thread_id, self.lock_policy)
        action = f"locking thread {thread_id!r}"

        def run(program: Callable[[str], _Program[T]]) -> Callable[[str], Awaitable[T]]:
            return lambda token: self._run(program(token), action)

        return ahold(self.lock_policy, thread_id, run(take), run(renew), run(release))

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

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> History:
        """Not available: use :meth:`ahistory`."""
        raise self._sync_only()

    def delete_thread(self, thread_id: str) -> None:
        """Not available: use :meth:`adelete_thread`."""
        raise self._sync_only()
