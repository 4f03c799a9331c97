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
parent's pending writes and, with a ``ttl``, refreshes the TTL of every key, atomically.
Only ordinary data commands and ``EVALSHA``/``EVAL`` are used.

The package: ``_keys`` (key names and escaping), ``_scripts`` (the Lua), ``_programs``
(every operation as a program of commands, no I/O), ``_wire`` (the lean connections
scripts travel on), this module (the sync saver) and ``aio`` (the async one).
:func:`async_client` makes the async clients they use (and the server's) from a URL.
"""

from __future__ import annotations

from checkpoint.redis._client import async_client
from checkpoint.redis._sync import RedisSaver
from checkpoint.redis.aio import AsyncRedisSaver

__all__ = ["AsyncRedisSaver", "RedisSaver", "async_client"]
