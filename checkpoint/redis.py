"""``RedisSaver``: checkpoints on plain Redis (>= 6, no modules), Redis Cluster included.

Keys of one thread share the hash tag ``{<prefix>:<thread>}`` so they live in one
cluster slot::

    {p:t}:head     string  id of the newest checkpoint
    {p:t}:cp       hash    checkpoint id -> record (bookkeeping, see ``_layout``)
    {p:t}:seq      zset    checkpoint id scored by the thread's own write counter: the
                           history order (ids carry their host's clock, which may lag)
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
import re
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import redis
import redis.asyncio as aredis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import NoPermissionError, NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from typing_extensions import Self

from checkpoint import _layout as layout
from checkpoint import _redis_wire
from checkpoint._history import History, needed_fields
from checkpoint._redis_wire import Wire
from checkpoint.base import (
    DELETE_KEPT,
    Checkpoint,
    CheckpointSaver,
    CheckpointWrite,
    LockOps,
    PendingWrite,
    _AsyncOnly,
    chain_of,
    new_checkpoint_id,
    refuse_if_deleted,
)
from checkpoint.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStorageError,
)
from checkpoint.locks import LockPolicy, ahold
from checkpoint.serde import Serde, default_serde

__all__ = ["AsyncRedisSaver", "RedisSaver"]

T = TypeVar("T")

_PUT = """
-- ARGV[1]: "expected|ttl_ms|parent|n_fields|want_count|id1|id2|..." (ids are hex: no '|'):
--   a chain of checkpoints, each the parent of the next, growing from 'parent'; the last
--   becomes the head. ARGV[2..]: their records, then n_fields field/value pairs for data.
local h = {}
for part in string.gmatch(ARGV[1] .. '|', '([^|]*)|') do h[#h + 1] = part end
local ids = #h - 5
local cur = redis.call('GET', KEYS[1]) or ''
-- already the head: a client retry of a write that landed before its reply was lost
if cur == h[#h] then return {1, 0} end
if cur ~= h[1] then return {0, cur} end
-- KEYS[6] (a new thread's first write only): the id the thread's delete minted; a
-- write minted before it belongs to a run the delete ended
if cur == '' and KEYS[6] then
  local gone = redis.call('GET', KEYS[6])
  if gone then
    if h[6] < gone then return {2, gone} end
    redis.call('DEL', KEYS[6])
  end
end
local n = tonumber(h[4])
local i = ids + 2
while n > 0 do
  local batch = math.min(n, 256)
  local args = {}
  for j = 1, batch * 2 do args[j] = ARGV[i + j - 1] end
  redis.call('HSET', KEYS[3], unpack(args))
  i = i + batch * 2
  n = n - batch
end
-- the thread's own counter orders its history (ids carry their host's clock)
local top = redis.call('ZREVRANGE', KEYS[5], 0, 0, 'WITHSCORES')
local seq = tonumber(top[2]) or 0
for j = 1, ids do
  redis.call('HSET', KEYS[2], h[5 + j], ARGV[1 + j])
  redis.call('ZADD', KEYS[5], seq + j, h[5 + j])
end
redis.call('SET', KEYS[1], h[#h])
if h[3] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then
  local prefix = h[3] .. '|'
  for _, f in ipairs(redis.call('HKEYS', KEYS[4])) do
    if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', KEYS[4], f) end
  end
end
local ttl = tonumber(h[2])
if ttl > 0 then
  for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end
end
if h[5] == '1' then return {1, redis.call('HLEN', KEYS[2])} end
return {1, 0}
"""

_PUT_WRITES = """
-- ARGV[1]: checkpoint id, ARGV[2]: ttl_ms; ARGV[3..]: field/value pairs for the writes hash
-- only for a checkpoint the thread still holds: a deleted or expired thread stays gone
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
if #ARGV > 2 then redis.call('HSET', KEYS[4], unpack(ARGV, 3)) end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end
end
return 1
"""

# take the lock if it is free or already ours: a retry of a take whose reply was lost
# finds its own token, and that is the lock, taken
_TAKE = """
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
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
-- KEYS: head, cp, data, writes. ARGV[1]: a checkpoint id, or '' for the head.
-- ARGV[2]: the id whose record the client already holds ('' if none); then that record's
-- data fields: ARGV[3] = n, n single fields, then (prefix, first, last) triples naming
-- fields prefix..first to prefix..(last - 1) (a log's items). One round trip when the
-- client's guess is right, which is the common case: it wrote (or read) the thread's
-- head itself.
local id = ARGV[1]
if id == '' then
  id = redis.call('GET', KEYS[1])
  if not id then return nil end
end
local writes = {}
if redis.call('EXISTS', KEYS[4]) == 1 then
  local prefix = id .. '|'
  local all = redis.call('HGETALL', KEYS[4])
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, #prefix) == prefix then
      writes[#writes + 1] = string.sub(all[i], #prefix + 1)
      writes[#writes + 1] = all[i + 1]
    end
  end
end
if id ~= ARGV[2] or redis.call('HEXISTS', KEYS[2], id) == 0 then
  return {id, redis.call('HGET', KEYS[2], id), writes}
end
local fields = {}
local n = tonumber(ARGV[3]) or 0
for i = 4, 3 + n do fields[#fields + 1] = ARGV[i] end
local i = 4 + n
while i + 2 <= #ARGV do
  local prefix = ARGV[i]
  for j = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]) - 1 do
    fields[#fields + 1] = prefix .. j
  end
  i = i + 3
end
local values = {}
i = 1
while i <= #fields do
  local last = math.min(i + 255, #fields)
  for _, v in ipairs(redis.call('HMGET', KEYS[3], unpack(fields, i, last))) do
    values[#values + 1] = v
  end
  i = last + 1
end
return {id, false, writes, values}
"""


_PREFIX_SEPARATORS = ":{}"
_BATCH = 1000  # fields per HMGET: big replies stay under a few MB each


def glob_escape(text: str) -> str:
    """``text`` as a literal inside a Redis ``SCAN MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


_ESCAPE = {"%": "%25", "{": "%7B", "}": "%7D"}
_UNESCAPE = {v: k for k, v in _ESCAPE.items()}
_TO_ESCAPE = re.compile("[%{}\ud800-\udfff]")
_ESCAPED = re.compile("%(?:25|7B|7D|u[0-9A-F]{4})")


def _escape_one(match: re.Match[str]) -> str:
    c = match.group()
    return _ESCAPE.get(c) or f"%u{ord(c):04X}"


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group()
    return _UNESCAPE.get(code) or chr(int(code[2:], 16))


def escape_thread_id(thread_id: str) -> str:
    """Make any thread id safe inside a hash-tagged key, injectively: ``%``, ``{`` and ``}``
    become ``%25``, ``%7B`` and ``%7D``, and a lone surrogate (which UTF-8 cannot encode)
    becomes ``%uD800``-style text."""
    return _TO_ESCAPE.sub(_escape_one, thread_id)


def unescape_thread_id(escaped: str) -> str:
    """Reverse :func:`escape_thread_id`."""
    return _ESCAPED.sub(_unescape_one, escaped)


def _fields_spec(record: layout.Record) -> list[Any]:
    """``record``'s id, then the data fields :func:`layout.read_fields` names, for the read
    script: their number and the single fields, then each log range as a (prefix, first,
    last) triple, so a read names a 1,000-item history in three arguments."""
    singles = [_b(layout.val_field(version)) for version in dict.fromkeys(record.vals.values())]
    spec: list[Any] = [record.id, len(singles), *singles]
    for key, ranges in record.logs.items():
        for branch, start, end in ranges:
            if end > start:
                # a log item's field is this prefix followed by its index
                spec += (_b(layout.log_stem(key, branch)), start, end)
    return spec


def _b(text: str) -> bytes:
    """A hash field or an id as Redis stores it: UTF-8, lone surrogates kept."""
    return text.encode("utf-8", "surrogatepass")


def _text(raw: bytes | str) -> str:
    """A stored checkpoint id as text."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise layout.damaged(None, f"a stored checkpoint id is not text ({exc})") from exc


def _name(raw: bytes | str) -> str:
    """A stored hash field or echoed id as text (lone surrogates kept, as :func:`_b` wrote)."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise layout.damaged(None, f"a stored name is not text ({exc})") from exc


def _storage_error(action: str, exc: Exception) -> CheckpointStorageError:
    """The ``CheckpointStorageError`` for a redis-py or socket error (the one boundary)."""
    if isinstance(exc, RedisError):
        made = CheckpointStorageError(f"Redis failed while {action}: {type(exc).__name__}: {exc}")
    else:
        made = CheckpointStorageError(f"Redis unreachable while {action}: {exc}")
    made.__cause__ = exc
    return made


WRITE_TRIES = 3
"""Times a write whose reply timed out is sent (it is idempotent: see :func:`_unknown`)."""


def _timed_out(exc: CheckpointStorageError) -> bool:
    return isinstance(exc.__cause__, (RedisTimeoutError, TimeoutError))


def _unknown(
    thread_id: str, checkpoint_id: str, exc: CheckpointStorageError
) -> CheckpointStorageError:
    """The error for a write none of whose :data:`WRITE_TRIES` got a reply in time.

    Each try sends the same write (the same checkpoint ids): one that lands after another
    did finds the head already at its last id and changes nothing. But the last try may
    still be queued on the server, so whether the step is stored is unknown here.
    """
    made = CheckpointStorageError(
        f"Redis did not answer within socket_timeout while writing checkpoint "
        f"{checkpoint_id} of thread {thread_id!r} ({WRITE_TRIES} tries): the write may have "
        f"landed, or may still land. Check before running again: if saver.head({thread_id!r}) "
        f"is {checkpoint_id!r} (get_state shows the step), continue with invoke(None, config); "
        "if it is still the checkpoint before, run again with the same input. Sending the "
        f"input again without checking may store it twice ({exc.__cause__})"
    )
    made.__cause__ = exc.__cause__
    return made


class _Keys:
    __slots__ = (
        "cp",
        "data",
        "every",
        "first",
        "gone",
        "head",
        "lock",
        "read",
        "seq",
        "writes",
    )

    def __init__(self, prefix: str, thread_id: str) -> None:
        tag = f"{{{prefix}:{escape_thread_id(thread_id)}}}"
        self.head = f"{tag}:head"
        self.cp = f"{tag}:cp"
        self.seq = f"{tag}:seq"
        self.data = f"{tag}:data"
        self.writes = f"{tag}:writes"
        # not in all(): deleting a thread must not break the lock of a run holding it
        self.lock = f"{tag}:lock"
        self.every = [self.head, self.cp, self.data, self.writes, self.seq]
        # what a delete leaves: the id it minted, for DELETE_KEPT (see refuse_if_deleted)
        self.gone = f"{tag}:gone"
        self.first = [*self.every, self.gone]  # a new thread's first write's keys
        self.read = self.every[:4]  # the read script's keys

    def all(self) -> list[str]:
        return self.every


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
        # thread -> the newest head this saver wrote or read: the guess that lets a
        # read take one round trip (a wrong guess costs a second one, never a wrong state)
        self._heads: dict[str, str] = {}
        self._keys: dict[str, _Keys] = {}

    def keys(self, thread_id: str) -> _Keys:
        keys = self._keys.get(thread_id)
        if keys is None:
            if len(self._keys) > 4096:
                self._keys.clear()
            keys = self._keys[thread_id] = _Keys(self.prefix, thread_id)
        return keys

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
            return bool((yield _Eval(_TAKE, [key], [token, lease_ms])))

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

    def _seen_head(self, thread_id: str, checkpoint_id: str) -> None:
        if len(self._heads) > 4096:
            self._heads.clear()
        self._heads[thread_id] = checkpoint_id

    def _not_found(self, thread_id: str, checkpoint_id: str) -> CheckpointNotFoundError:
        return CheckpointNotFoundError(f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}")

    def record(self, thread_id: str, checkpoint_id: str) -> _Program[layout.Record]:
        cached = self._records.get((thread_id, checkpoint_id))
        if cached is not None:
            return cached
        blob = yield _Call("hget", (self.keys(thread_id).cp, _b(checkpoint_id)))
        if blob is None:
            raise self._not_found(thread_id, checkpoint_id)
        record = layout.decode_record(bytes(blob), self.serde.loads, checkpoint_id)
        return self._remember(thread_id, record)

    def put(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> _Program[None]:
        first = chain_of(writes)[0]
        for cid in (*(w.id for w in writes), first.parent_id, expected_head):
            if cid and "|" in cid:
                raise CheckpointError(f"checkpoint id {cid!r} contains '|'; ids are hex text")
        parent = None
        if first.parent_id is not None:
            parent = yield from self.record(thread_id, first.parent_id)
        on_head = first.parent_id == expected_head
        plans = []
        for write in writes:
            plan = layout.plan_put(parent, write, on_head=on_head, dumps=self.serde.dumps)
            plans.append(plan)
            parent, on_head = plan.record, True
        header = (
            f"{expected_head or ''}|{self.ttl_ms}|{first.parent_id or ''}|"
            f"{sum(len(p.data) for p in plans)}|{'1' if self.keep_last is not None else '0'}|"
            + "|".join(w.id for w in writes)
        )
        args: list[Any] = [header, *(p.record_blob for p in plans)]
        for plan in plans:
            for f, v in plan.data.items():
                args.append(_b(f))
                args.append(v)
        k = self.keys(thread_id)
        ok, info = yield _Eval(_PUT, k.every if expected_head else k.first, args)
        if ok == 2:
            refuse_if_deleted(thread_id, first.id, _text(info))
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
        for plan in plans:
            self._remember(thread_id, plan.record)
            layout.log_put(thread_id, plan)
        self._seen_head(thread_id, writes[-1].id)
        if self.keep_last is not None and int(info) > self.keep_last:
            yield from self._prune(thread_id, self.keep_last)

    def _order(self, thread_id: str) -> _Program[builtins.list[str]]:
        """The thread's checkpoint ids in write order, oldest first.

        Checkpoints stored before the ``seq`` key existed have no place in it: they come
        first, in the order of their ids.
        """
        k = self.keys(thread_id)
        # HKEYS first: a put adds to both keys at once, so an id it finds is in the zset
        stored, ordered = yield _Pipeline(
            [_Call("hkeys", (k.cp,)), _Call("zrange", (k.seq, 0, -1))], transaction=False
        )
        have = {_text(i) for i in stored}
        ranked = [i for i in map(_text, ordered) if i in have]
        unranked = have.difference(ranked)
        return sorted(unranked) + ranked if unranked else ranked

    def _prune(self, thread_id: str, keep: int) -> _Program[None]:
        k = self.keys(thread_id)
        ids = yield from self._order(thread_id)
        if len(ids) <= keep:
            return
        records = []
        for cid in ids:
            records.append((yield from self.record(thread_id, cid)))
        yield from self._check_claims(thread_id, records)
        drop, fields = layout.plan_prune(records[: len(ids) - keep], records[len(ids) - keep :])
        calls = [_Call("hdel", (k.cp, *drop)), _Call("zrem", (k.seq, *drop))]
        if fields:
            calls.append(_Call("hdel", (k.data, *map(_b, fields))))
        # pending writes are few (a paused or failed step's), so listing them is cheap
        pending = yield _Call("hkeys", (k.writes,))
        dropped = set(drop)
        stale = [f for f in pending if _name(f).partition("|")[0] in dropped]
        if stale:
            calls.append(_Call("hdel", (k.writes, *stale)))
        yield _Pipeline(calls, transaction=True)

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> _Program[None]:
        by_task: dict[str, list[PendingWrite]] = {}
        for w in writes:
            by_task.setdefault(w.task, []).append(w)
        mapping = {
            _b(f"{checkpoint_id}|{task}"): layout.encode_writes(group, self.serde.dumps)
            for task, group in by_task.items()
        }
        args: list[Any] = [_b(checkpoint_id), self.ttl_ms]
        for f, v in mapping.items():
            args.append(f)
            args.append(v)
        k = self.keys(thread_id)
        if not (yield _Eval(_PUT_WRITES, k.every, args)):
            raise self._not_found(thread_id, checkpoint_id)

    def get(self, thread_id: str, checkpoint_id: str | None) -> _Program[Checkpoint | None]:
        k = self.keys(thread_id)
        # guess the record: the named checkpoint's, or the last head this saver saw (not
        # one naming more fields than a step could simply try: those are counted first)
        guess = self._records.get((thread_id, checkpoint_id or self._heads.get(thread_id, "")))
        if guess is not None and layout.claimed(guess) > layout.FREE_CLAIM:
            guess = None
        found = yield _Eval(
            _READ,
            k.read,
            [_b(checkpoint_id or ""), *(_fields_spec(guess) if guess is not None else ("",))],
        )
        if found is None:
            if checkpoint_id is not None:
                raise self._not_found(thread_id, checkpoint_id)
            return None
        cid = _name(found[0])
        raw = found[2]
        pending = layout.group_writes(
            {_name(raw[i]): bytes(raw[i + 1]) for i in range(0, len(raw), 2)},
            self.serde.loads,
        )
        if len(found) == 4:  # the guess was right: its values came along
            assert guess is not None
            record, blobs = guess, found[3]
        else:
            if found[1] is None:
                raise self._not_found(thread_id, cid)
            record = self._records.get((thread_id, cid)) or self._remember(
                thread_id, layout.decode_record(bytes(found[1]), self.serde.loads, cid)
            )
            yield from self._check_claims(thread_id, [record])
            fields = layout.read_fields(record)
            blobs = (yield _Call("hmget", (k.data, [_b(f) for f in fields]))) if fields else []
        if checkpoint_id is None:
            self._seen_head(thread_id, cid)
        values = layout.rebuild(record, blobs, self.serde.loads)
        return layout.to_checkpoint(thread_id, record, values, pending)

    def _check_claims(self, thread_id: str, records: Sequence[layout.Record]) -> _Program[None]:
        """Refuse records naming more data than the thread stores (counted only for claims
        too large to simply try)."""
        if any(layout.claimed(r) > layout.FREE_CLAIM for r in records):
            stored = yield _Call("hlen", (self.keys(thread_id).data,))
            for record in records:
                layout.check_claim(record, int(stored))

    def _load(self, thread_id: str, record: layout.Record) -> _Program[Checkpoint]:
        k = self.keys(thread_id)
        yield from self._check_claims(thread_id, [record])
        fields = layout.read_fields(record)
        calls = [_Call("hmget", (k.data, [_b(f) for f in fields]))] if fields else []
        calls.append(_Call("hgetall", (k.writes,)))
        results = yield _Pipeline(calls, transaction=False)
        values = layout.rebuild(record, results[0] if fields else [], self.serde.loads)
        prefix = f"{record.id}|".encode()
        mine = {
            key.decode("utf-8", "surrogatepass")[len(prefix) :]: v
            for key, v in results[-1].items()
            if key.startswith(prefix)
        }
        pending = layout.group_writes(mine, self.serde.loads)
        return layout.to_checkpoint(thread_id, record, values, pending)

    def history(self, thread_id: str, limit: int | None, before: str | None) -> _Program[History]:
        """Newest first, in five round trips: ids, the number of data fields,
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
        ids = layout.older_than((yield from self._order(thread_id)), before)[::-1]
        if limit is not None:
            ids = ids[: max(limit, 0)]
        stored = yield _Call("hlen", (k.data,))
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
                    cached[cid] = layout.decode_record(bytes(blob), self.serde.loads, cid)
        return [record for record in cached.values() if record is not None]

    def delete(self, thread_id: str) -> _Program[None]:
        self._heads.pop(thread_id, None)
        k = self.keys(thread_id)
        marker = _Call("set", (k.gone, new_checkpoint_id()), {"px": int(DELETE_KEPT * 1000)})
        yield _Pipeline([_Call("delete", tuple(k.all())), marker], transaction=True)

    def head(self, thread_id: str) -> _Program[str | None]:
        raw = yield _Call("get", (self.keys(thread_id).head,))
        return raw.decode() if isinstance(raw, bytes) else None

    def threads(self) -> _Program[builtins.list[str]]:
        pattern = f"{{{glob_escape(self.prefix)}:*}}:head"
        keys = yield _Scan(pattern)
        start, end = len(self.prefix) + 2, -len("}:head")
        return sorted({unescape_thread_id(bytes(key).decode()[start:end]) for key in keys})


# Redis names a loaded script by the SHA1 of its text.
_SHA = {
    script: hashlib.sha1(script.encode()).hexdigest()
    for script in (_PUT, _PUT_WRITES, _READ, _TAKE, _RENEW, _RELEASE)
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
                try:
                    client.script_load(op.script)
                except NoPermissionError:
                    # a least-privilege user may run scripts without loading them
                    return client.eval(op.script, len(op.keys), *op.keys, *op.args)
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

    def _write(
        self, program: Callable[[], _Program[None]], action: str, thread_id: str, cid: str
    ) -> None:
        """Run a write, sending it again when its reply timed out (see :data:`WRITE_TRIES`)."""
        for _ in range(WRITE_TRIES - 1):
            try:
                return self._run(program(), action)
            except CheckpointStorageError as exc:
                if not _timed_out(exc):
                    raise
        try:
            return self._run(program(), action)
        except CheckpointStorageError as exc:
            raise (_unknown(thread_id, cid, exc) if _timed_out(exc) else exc) from exc.__cause__

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the new head in one round trip (see ``CheckpointSaver.put``)."""
        self.put_many(thread_id, (write,), expected_head=expected_head)

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, in one round trip (see
        ``CheckpointSaver.put_many``); a try whose reply timed out is sent again."""
        cid = writes[-1].id if writes else ""
        action = f"writing checkpoint {cid} of thread {thread_id!r}"
        self._write(
            lambda: self.logic.put(thread_id, writes, expected_head), action, thread_id, cid
        )

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        action = f"saving pending writes of thread {thread_id!r}"
        program = lambda: self.logic.put_writes(thread_id, checkpoint_id, writes)  # noqa: E731
        self._write(program, action, thread_id, checkpoint_id)

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state; two round trips."""
        return self._run(self.logic.get(thread_id, checkpoint_id), f"reading thread {thread_id!r}")

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> History:
        """Checkpoints newest first, read in five round trips, states built on read."""
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

    def _lock_ops(self, thread_id: str, policy: LockPolicy) -> LockOps:
        """Take, renew and release of the thread's run lock, each one round trip."""
        take, renew, release = self.logic.lock_programs(thread_id, policy)
        action = f"locking thread {thread_id!r}"

        def run(program: Callable[[str], _Program[T]]) -> Callable[[str], T]:
            return lambda token: self._run(program(token), action)

        return run(take), run(renew), run(release)

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()


class AsyncRedisSaver(_AsyncOnly, _RedisSaverBase[aredis.Redis], sync_twin="RedisSaver"):
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

    _wire: Wire | None = None

    def _fast(self) -> Wire | None:
        """The lean path for scripts: a plain client only (a cluster client routes by slot,
        and a single-connection client must keep its one connection)."""
        wire = self._wire
        if (
            wire is None
            and _redis_wire.available()
            and type(self.client) is aredis.Redis
            # its one connection is made on first use: ``connection`` is None until then
            and not self.client.single_connection_client
            and self.client.connection is None
            and issubclass(self.client.connection_pool.connection_class, AbstractConnection)
        ):
            wire = self._wire = Wire(self.client)
        return wire

    async def _perform(self, op: _Op) -> Any:
        client = self.client
        if type(op) is _Eval:
            sha = _SHA[op.script]
            wire = self._fast()
            if wire is not None:
                try:
                    return await wire.call("EVALSHA", sha, len(op.keys), *op.keys, *op.args)
                except NoScriptError:
                    try:
                        await wire.call("SCRIPT", "LOAD", op.script)
                    except NoPermissionError:  # an ACL without SCRIPT: send the text
                        return await wire.call("EVAL", op.script, len(op.keys), *op.keys, *op.args)
                    return await wire.call("EVALSHA", sha, len(op.keys), *op.keys, *op.args)
            try:
                return await client.evalsha(sha, len(op.keys), *op.keys, *op.args)
            except NoScriptError:
                try:
                    await client.script_load(op.script)
                except NoPermissionError:
                    return await client.eval(op.script, len(op.keys), *op.keys, *op.args)
                return await client.evalsha(sha, len(op.keys), *op.keys, *op.args)
        if type(op) is _Call:
            return await getattr(client, op.name)(*op.args, **op.kwargs)
        if type(op) is _Scan:
            return [key async for key in client.scan_iter(match=op.match, count=500)]
        assert type(op) is _Pipeline
        pipe = client.pipeline(transaction=op.transaction)
        for call in op.calls:
            getattr(pipe, call.name)(*call.args, **call.kwargs)
        return await pipe.execute()

    async def _write(
        self, program: Callable[[], _Program[None]], action: str, thread_id: str, cid: str
    ) -> None:
        """Async ``RedisSaver._write``."""
        for _ in range(WRITE_TRIES - 1):
            try:
                return await self._run(program(), action)
            except CheckpointStorageError as exc:
                if not _timed_out(exc):
                    raise
        try:
            return await self._run(program(), action)
        except CheckpointStorageError as exc:
            raise (_unknown(thread_id, cid, exc) if _timed_out(exc) else exc) from exc.__cause__

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Store ``write`` as the new head in one round trip."""
        await self.aput_many(thread_id, (write,), expected_head=expected_head)

    async def aput_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, in one round trip; a try whose reply timed
        out is sent again."""
        cid = writes[-1].id if writes else ""
        action = f"writing checkpoint {cid} of thread {thread_id!r}"
        program = lambda: self.logic.put(thread_id, writes, expected_head)  # noqa: E731
        await self._write(program, action, thread_id, cid)

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        action = f"saving pending writes of thread {thread_id!r}"
        program = lambda: self.logic.put_writes(thread_id, checkpoint_id, writes)  # noqa: E731
        await self._write(program, action, thread_id, checkpoint_id)

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
        """Checkpoints newest first, read in five round trips, states built on read."""
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
        if self._wire is not None:
            await self._wire.aclose()
        await self.client.aclose()
