"""Every Redis saver operation as a program of Redis commands, with no I/O.

A program yields one of the effects below and receives its reply (see
``checkpoint._program``); ``RedisSaver`` and ``AsyncRedisSaver`` only perform them, with
a sync or an async client. A script is run by :func:`run_script`, the one place that
loads a script Redis forgot.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoPermissionError, NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from checkpoint import _layout as layout
from checkpoint._cache import ReadCache, ReadPlan
from checkpoint._history import History, needed_fields
from checkpoint._program import Locks, Program
from checkpoint.base import (
    DELETE_KEPT,
    Checkpoint,
    CheckpointWrite,
    PendingWrite,
    chain_of,
    new_checkpoint_id,
    refuse_if_deleted,
)
from checkpoint.errors import CheckpointError, CheckpointNotFoundError, CheckpointStorageError
from checkpoint.redis import _scripts as scripts
from checkpoint.redis._keys import Keys, check_prefix, head_pattern, thread_of_head_key
from checkpoint.serde import Serde, default_serde

__all__ = [
    "WRITE_TRIES",
    "Command",
    "Eval",
    "EvalSha",
    "Fetch",
    "LoadScript",
    "Pipeline",
    "RedisLogic",
    "Scan",
    "retried",
    "run_script",
]

_BATCH = 1000  # fields per HMGET: big replies stay under a few MB each
# up to this many fields the read script names a log's items from their range (one short
# request); a longer read names them here and sends one HMGET (see RedisLogic._fetch)
_NAMED_BY_SCRIPT = 256


@dataclass(slots=True)
class EvalSha:
    """``EVALSHA``: run a loaded script."""

    sha: str
    keys: list[str]
    args: list[Any]


@dataclass(slots=True)
class LoadScript:
    """``SCRIPT LOAD``."""

    text: str


@dataclass(slots=True)
class Eval:
    """``EVAL``: send a script's text (for a user who may run scripts but not load them)."""

    text: str
    keys: list[str]
    args: list[Any]


@dataclass(slots=True)
class Command:
    """One command, by the name of the redis-py client method that sends it."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Pipeline:
    """Commands sent together; their replies in order."""

    calls: list[Command]
    transaction: bool


@dataclass(slots=True)
class Fetch:
    """``HMGET`` of many fields of one hash (a long read): one command, sent on the saver's
    wire when it has one (hiredis packs the names in one call, where redis-py's client
    handles each of thousands of arguments in Python)."""

    key: str
    fields: list[bytes]


@dataclass(slots=True)
class Scan:
    """Every key matching ``match``, on every node (redis-py walks a cluster's primaries)."""

    match: str


def run_script(script: scripts.Script, keys: list[str], args: list[Any]) -> Program[Any]:
    """Run ``script`` by its SHA1; on ``NOSCRIPT`` (a restarted or flushed server) load
    it and run it again, and where the user may not load scripts, send its text."""
    try:
        return (yield EvalSha(script.sha, keys, args))
    except NoScriptError:
        pass
    try:
        yield LoadScript(script.text)
    except NoPermissionError:
        # a least-privilege user may run scripts without loading them
        return (yield Eval(script.text, keys, args))
    return (yield EvalSha(script.sha, keys, args))


WRITE_TRIES = 3
"""Times a write whose reply timed out is sent (it is idempotent: see :func:`retried`)."""


def retried(make: Callable[[], Program[None]], thread_id: str, cid: str) -> Program[None]:
    """Run the write ``make`` gives, sending it again (a fresh program) when its reply
    timed out, up to :data:`WRITE_TRIES` times.

    Each try sends the same write (the same checkpoint ids): one that lands after another
    did finds the head already at its last id and changes nothing. But the last try may
    still be queued on the server, so whether the step is stored is then unknown.

    Raises:
        CheckpointStorageError: no try got a reply in time, saying what to check.
    """
    for attempt in range(1, WRITE_TRIES + 1):
        try:
            return (yield from make())
        except (RedisTimeoutError, TimeoutError) as exc:
            if attempt == WRITE_TRIES:
                raise _unknown(thread_id, cid, exc) from exc


def _unknown(thread_id: str, checkpoint_id: str, exc: Exception) -> CheckpointStorageError:
    """The error for a write none of whose :data:`WRITE_TRIES` got a reply in time."""
    return CheckpointStorageError(
        f"Redis did not answer within socket_timeout while writing checkpoint "
        f"{checkpoint_id} of thread {thread_id!r} ({WRITE_TRIES} tries): the write may have "
        f"landed, or may still land. Check before running again: if saver.head({thread_id!r}) "
        f"is {checkpoint_id!r} (get_state shows the step), continue with invoke(None, config); "
        "if it is still the checkpoint before, run again with the same input. Sending the "
        f"input again without checking may store it twice ({exc})"
    )


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


def plan_spec(record: layout.Record, plan: ReadPlan) -> list[Any]:
    """``record``'s id, then the data fields ``plan`` reads, for the read script: their
    number and the single fields, then each log range as a (prefix, first, last) triple,
    so a read names a 1,000-item history in three arguments."""
    spec: list[Any] = [record.id, len(plan.singles), *map(_b, plan.singles)]
    for key, branch, start, end in plan.spans:
        # a log item's field is this prefix followed by its index
        spec += (_b(layout.log_stem(key, branch)), start, end)
    return spec


class RedisLogic:
    """The Redis savers' operations, as programs; see the module docstring.

    Args:
        prefix: first part of every key.
        ttl: seconds after a thread's last write that its keys expire (``None``: never).
        keep_last: keep only this many newest checkpoints per thread.
        serde: the codec (default: the process-wide one).
    """

    def __init__(
        self,
        *,
        prefix: str,
        ttl: float | None,
        keep_last: int | None,
        serde: Serde | None,
    ) -> None:
        if keep_last is not None and keep_last < 1:
            raise ValueError("keep_last must be at least 1 (or None to keep everything)")
        self.prefix = check_prefix(prefix)
        self.ttl_ms = int(ttl * 1000) if ttl else 0
        self.keep_last = keep_last
        self.serde = serde or default_serde
        self._records: layout.BoundedCache[tuple[str, str], layout.Record] = layout.BoundedCache()
        # thread -> the newest head this saver wrote or read: the guess that lets a
        # read take one round trip (a wrong guess costs a second one, never a wrong state)
        self._heads: layout.BoundedCache[str, str] = layout.BoundedCache()
        self._keys: layout.BoundedCache[str, Keys] = layout.BoundedCache()
        self.cache = ReadCache(self.serde)

    def keys(self, thread_id: str) -> Keys:
        """The thread's keys."""
        keys = self._keys.get(thread_id)
        if keys is None:
            keys = self._keys.keep(thread_id, Keys(self.prefix, thread_id))
        return keys

    def put_mode(self, expected_head: str | None) -> bool | None:
        """None: a step is one script, atomic on its own."""
        return None

    def get_mode(self) -> bool | None:
        """False: a read is a snapshot (the Redis driver runs each script whole)."""
        return False

    def purge_due(self) -> bool:
        """Never: Redis expires a thread's keys itself."""
        return False

    def purge_expired(self) -> Program[int]:
        """Nothing to purge (Redis expires keys itself)."""
        return 0
        yield  # a program: a generator that yields nothing

    def lock_programs(self, thread_id: str, lease: float) -> Locks:
        """Take, renew and release of the thread's lock, each one script."""
        key, lease_ms = self.keys(thread_id).lock, int(lease * 1000)

        def take(token: str) -> Program[bool]:
            return bool((yield from run_script(scripts.TAKE, [key], [token, lease_ms])))

        def renew(token: str) -> Program[bool]:
            return bool((yield from run_script(scripts.RENEW, [key], [token, lease_ms])))

        def release(token: str) -> Program[None]:
            yield from run_script(scripts.RELEASE, [key], [token])

        return take, renew, release

    def _not_found(self, thread_id: str, checkpoint_id: str) -> CheckpointNotFoundError:
        return CheckpointNotFoundError(f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}")

    def record(self, thread_id: str, checkpoint_id: str) -> Program[layout.Record]:
        """The record of ``checkpoint_id`` (decoded once: records never change)."""
        cached = self._records.get((thread_id, checkpoint_id))
        if cached is not None:
            return cached
        blob = yield Command("hget", (self.keys(thread_id).cp, _b(checkpoint_id)))
        if blob is None:
            raise self._not_found(thread_id, checkpoint_id)
        record = layout.decode_record(bytes(blob), self.serde.loads, checkpoint_id)
        return self._records.keep((thread_id, checkpoint_id), record)

    # -- writing --------------------------------------------------------------------

    def put(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[None]:
        """Check the head and store the chain of writes: one script (sent again when its
        reply timed out, see :func:`retried`)."""
        cid = writes[-1].id if writes else ""
        return retried(lambda: self._put(thread_id, writes, expected_head), thread_id, cid)

    def _put(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[None]:
        first = chain_of(writes)[0]
        for cid in (*(w.id for w in writes), first.parent_id, expected_head):
            if cid and "|" in cid:
                raise CheckpointError(f"checkpoint id {cid!r} contains '|'; ids are hex text")
        parent = None
        if first.parent_id is not None:
            parent = yield from self.record(thread_id, first.parent_id)
        plans = layout.plan_chain(
            parent, writes, on_head=first.parent_id == expected_head, dumps=self.serde.dumps
        )
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
        ok, info = yield from run_script(scripts.PUT, k.every if expected_head else k.first, args)
        if ok == 2:
            refuse_if_deleted(thread_id, first.id, _text(info))
        if not ok:
            current = info.decode() if isinstance(info, bytes) else info
            raise layout.conflict(
                thread_id,
                expected_head,
                current or None,
                store="Redis",
                gone="its keys expired or were deleted, or Redis restarted without its data",
                hint=", or give Redis persistence (AOF) if restarts must keep threads",
            )
        records = self._records
        for plan in plans:
            records.keep((thread_id, plan.record.id), plan.record)
            layout.log_put(thread_id, plan)
        self._heads.keep(thread_id, writes[-1].id)
        if self.keep_last is not None and int(info) > self.keep_last:
            yield from self._prune(thread_id, self.keep_last)

    def _order(self, thread_id: str) -> Program[builtins.list[str]]:
        """The thread's checkpoint ids in write order, oldest first."""
        ordered = yield Command("zrange", (self.keys(thread_id).seq, 0, -1))
        return [_text(i) for i in ordered]

    def _prune(self, thread_id: str, keep: int) -> Program[None]:
        k = self.keys(thread_id)
        ids = yield from self._order(thread_id)
        if len(ids) <= keep:
            return
        records = []
        for cid in ids:
            records.append((yield from self.record(thread_id, cid)))
        yield from self._check_claims(thread_id, records)
        drop, fields = layout.plan_prune(records[: len(ids) - keep], records[len(ids) - keep :])
        calls = [Command("hdel", (k.cp, *drop)), Command("zrem", (k.seq, *drop))]
        if fields:
            calls.append(Command("hdel", (k.data, *map(_b, fields))))
        # pending writes are few (a paused or failed step's), so listing them is cheap
        pending = yield Command("hkeys", (k.writes,))
        dropped = set(drop)
        stale = [f for f in pending if _name(f).partition("|")[0] in dropped]
        if stale:
            calls.append(Command("hdel", (k.writes, *stale)))
        yield Pipeline(calls, transaction=True)

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> Program[None]:
        """Keep a step's finished work; the checkpoint must still be stored (sent again
        when its reply timed out, see :func:`retried`)."""
        return retried(
            lambda: self._put_writes(thread_id, checkpoint_id, writes), thread_id, checkpoint_id
        )

    def _put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> Program[None]:
        by_task: dict[str, list[PendingWrite]] = {}
        for w in writes:
            by_task.setdefault(w.task, []).append(w)
        args: list[Any] = [_b(checkpoint_id), self.ttl_ms]
        for task, group in by_task.items():
            args.append(_b(f"{checkpoint_id}|{task}"))
            args.append(layout.encode_writes(group, self.serde.dumps))
        if not (yield from run_script(scripts.PUT_WRITES, self.keys(thread_id).every, args)):
            raise self._not_found(thread_id, checkpoint_id)

    def delete(self, thread_id: str) -> Program[None]:
        """Remove every key of the thread (not a run's lock on it)."""
        self._heads.pop(thread_id, None)
        self.cache.forget(thread_id)
        k = self.keys(thread_id)
        marker = Command("set", (k.gone, new_checkpoint_id()), {"px": int(DELETE_KEPT * 1000)})
        yield Pipeline([Command("delete", tuple(k.every)), marker], transaction=True)

    # -- reading --------------------------------------------------------------------

    def get(self, thread_id: str, checkpoint_id: str | None) -> Program[Checkpoint | None]:
        """The head (or the named checkpoint) with its state: one script when the
        record this saver guesses is right, two round trips when not."""
        # guess the record: the named checkpoint's, or the last head this saver saw (not
        # one naming more fields than a step could simply try: those are counted first)
        guess = self._records.get((thread_id, checkpoint_id or self._heads.get(thread_id, "")))
        # only the guess's fields the read cache lacks (on a warm thread: the last turn's)
        plan = self.cache.plan(thread_id, guess) if guess is not None else None
        if plan is not None and plan.count > layout.FREE_CLAIM:
            guess = plan = None
        spec = plan_spec(guess, plan) if guess is not None and plan is not None else ("",)
        found = yield from run_script(
            scripts.READ, self.keys(thread_id).read, [_b(checkpoint_id or ""), *spec]
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
            assert guess is not None and plan is not None
            record, blobs = guess, found[3]
        else:
            if found[1] is None:
                raise self._not_found(thread_id, cid)
            record = self._records.get((thread_id, cid)) or self._records.keep(
                (thread_id, cid), layout.decode_record(bytes(found[1]), self.serde.loads, cid)
            )
            yield from self._check_claims(thread_id, [record])
            plan = self.cache.plan(thread_id, record)
            blobs = []
            if plan.count > _NAMED_BY_SCRIPT:
                blobs = yield from self._fetch(thread_id, plan)
            elif plan.count:
                # the script names a log's fields from its range: a long history is not
                # sent as one name per item
                spec = [_b(cid), *plan_spec(record, plan)]
                again = yield from run_script(scripts.READ, self.keys(thread_id).read, spec)
                # gone meanwhile (pruned, deleted): build() names what is missing
                blobs = again[3] if again is not None and len(again) == 4 else [None] * plan.count
        if checkpoint_id is None:
            self._heads.keep(thread_id, cid)
        values = plan.build(blobs)
        return layout.to_checkpoint(thread_id, record, values, pending)

    def _fetch(self, thread_id: str, plan: ReadPlan) -> Program[list[bytes | None]]:
        """A long read's fields, named here and fetched by one ``HMGET`` (a Lua script
        building 10,000 names and a 10,000-item reply cost the server ~5x the ``HMGET``).

        No check that the checkpoint is still stored is needed: an item's field is written
        once and never changed (a fork or a rewind starts a new branch), so what comes back
        is the checkpoint's state, or a field is missing (the thread deleted, the checkpoint
        pruned meanwhile) and ``build()`` names it, as the script's read did."""
        fields = [_b(name) for name in plan.singles]
        for key, branch, start, end in plan.spans:
            # each name made in C (maps), not by a loop of bytecode
            fields += map(_b(layout.log_stem(key, branch)).__add__, layout.numerals(start, end))
        found: list[bytes | None] = yield Fetch(self.keys(thread_id).data, fields)
        return found

    def _check_claims(self, thread_id: str, records: Sequence[layout.Record]) -> Program[None]:
        """Refuse records naming more data than the thread stores (counted only for claims
        too large to simply try)."""
        if any(layout.claimed(r) > layout.FREE_CLAIM for r in records):
            stored = yield Command("hlen", (self.keys(thread_id).data,))
            for record in records:
                layout.check_claim(record, int(stored))

    def history(self, thread_id: str, limit: int | None, before: str | None) -> Program[History]:
        """Newest first, in four round trips: ids, the number of data fields, records,
        the fields they need with the writes.

        The reads are not one transaction: when a field is gone, a ``keep_last`` prune
        ran in between, and the listing is read once more (the pruned ids are gone too).
        """
        history = yield from self._read_history(thread_id, limit, before)
        if history.complete:
            return history
        return (yield from self._read_history(thread_id, limit, before))

    def _read_history(
        self, thread_id: str, limit: int | None, before: str | None
    ) -> Program[History]:
        k = self.keys(thread_id)
        ids = layout.older_than((yield from self._order(thread_id)), before)[::-1]
        if limit is not None:
            ids = ids[: max(limit, 0)]
        stored = yield Command("hlen", (k.data,))
        records = yield from self._records_of(thread_id, ids)
        fields = needed_fields(records, int(stored))
        calls = [
            Command("hmget", (k.data, fields[i : i + _BATCH]))
            for i in range(0, len(fields), _BATCH)
        ]
        calls.append(Command("hgetall", (k.writes,)))
        *found, writes = yield Pipeline(calls, transaction=False)
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
    ) -> Program[builtins.list[layout.Record]]:
        """The records of ``ids`` (cached ones are not read again); ids pruned meanwhile
        are left out."""
        k = self.keys(thread_id)
        cached = {i: self._records.get((thread_id, i)) for i in ids}
        unread = [i for i, record in cached.items() if record is None]
        if unread:
            calls = [
                Command("hmget", (k.cp, unread[i : i + _BATCH]))
                for i in range(0, len(unread), _BATCH)
            ]
            parts = yield Pipeline(calls, transaction=False)
            blobs = [blob for part in parts for blob in part]
            for cid, blob in zip(unread, blobs, strict=True):
                if blob is not None:
                    cached[cid] = layout.decode_record(bytes(blob), self.serde.loads, cid)
        return [record for record in cached.values() if record is not None]

    def head(self, thread_id: str) -> Program[str | None]:
        """The thread's head id (one command)."""
        raw = yield Command("get", (self.keys(thread_id).head,))
        return raw.decode() if isinstance(raw, bytes) else None

    def threads(self) -> Program[builtins.list[str]]:
        """Every thread id under this prefix (by ``SCAN``)."""
        keys = yield Scan(head_pattern(self.prefix))
        return sorted({thread_of_head_key(self.prefix, bytes(key)) for key in keys})
