"""The hot paths of the Redis savers: scripts sent on connections of their own.

:class:`Wire` is ``AsyncRedisSaver``'s, :class:`SyncWire` ``RedisSaver``'s (at the end).

redis-py's asyncio client spends most of a step's CPU around each command (the pool's
lock and health check, observability hooks, a task per timeout and per write, a
coroutine per reply, packing each argument through the encoder), and every command is a
send and a receive of its own, which on a busy host costs more than the command. A step
is one ``EVALSHA`` whose arguments we already hold as bytes, and a process serving many
conversations issues many of them at once. So :class:`Wire` has hiredis pack each command
in one call, and sends the commands issued while the previous batch was out (or during one
turn of the event loop) together, in one write, reading the replies back in order
(pipelining across conversations; each conversation still waits for its own reply
before its next command, so its order is kept).

The connection is taken from the client's own pool, so it has the client's address,
credentials, TLS, protocol and database, and redis-py makes the handshake. Then the
saver takes its socket over (``transport.set_protocol``): hiredis packs the commands and
parses the replies as they arrive (the wire needs ``graphagent[fast]``; without hiredis
the saver sends its scripts through redis-py's client instead, and no protocol is
written here by hand), and replies are handed to the waiting callers from the socket's
callback, with no task, timeout context or coroutine per reply. Closing the client
closes the connection (it is the pool's); the saver then takes a fresh one. Errors come
back as redis-py raises them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import Awaitable
from typing import Any

import redis
import redis.asyncio as aredis
from redis._parsers import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

hiredis: Any
try:
    import hiredis
except ImportError:  # the saver then uses redis-py's client, not the wire
    hiredis = None

__all__ = ["SyncWire", "Wire", "available"]

_MORE: Any = object()
"""What a reader's ``gets`` returns while a reply is incomplete."""

_PUSH: type | None = getattr(hiredis, "PushNotification", None)


MAX_IN_FLIGHT = 1
"""Batches on the wire at once. Commands issued while one is out go together in the next,
so under load batches grow by themselves (fewer, larger writes: 5-15% less CPU per step at
16 conversations than one batch per loop turn; 2 or 4 measured no faster), and an idle
process sends at once."""

# (packed command, the caller's future, attempt): a command is sent at most twice
_Item = tuple[bytes, "asyncio.Future[Any]", int]


def available() -> bool:
    """Whether the wire can be used: hiredis (``graphagent[fast]``) is installed."""
    return hiredis is not None


def _reader() -> Any:
    return hiredis.Reader(
        protocolError=InvalidResponse,
        replyError=BaseParser.parse_error,
        notEnoughData=_MORE,
    )


class _Link(asyncio.Protocol):
    """A pool connection whose socket the wire reads itself, after redis-py's handshake."""

    def __init__(self, wire: Wire, conn: Any, reader: Any) -> None:
        self.wire = wire
        self.conn = conn
        self.reader = reader
        self.sent: deque[_Item] = deque()  # commands whose replies are due, in order
        self.flights: deque[int] = deque()  # replies due per batch out, oldest first
        self.alive = True
        self.error: Exception | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.timeout: float | None = conn.socket_timeout
        self.loop = asyncio.get_running_loop()
        transport = conn._writer.transport
        # redis-py's StreamWriter waits on its protocol for the close (``disconnect``,
        # ``client.aclose()``): it is told when the socket closes
        self.stream_protocol: asyncio.BaseProtocol = transport.get_protocol()
        self.transport: asyncio.Transport = transport
        transport.set_protocol(self)

    def send(self, batch: list[_Item]) -> None:
        self.transport.write(b"".join([item[0] for item in batch]))
        self.sent.extend(batch)
        self.flights.append(len(batch))
        if self.timeout and self.timer is None:
            self.timer = self.loop.call_later(self.timeout, self._expire)

    def _expire(self) -> None:
        self.timer = None
        if self.sent:
            self.error = RedisTimeoutError("Timeout reading from Redis (socket_timeout)")
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        sent, flights = self.sent, self.flights
        landed = False
        while sent:
            try:
                reply = reader.gets()
            except InvalidResponse as exc:  # the stream cannot be trusted any more
                self.error = exc
                self.transport.abort()
                return
            if reply is _MORE:
                break
            if type(reply) is _PUSH:
                continue  # RESP3 push: nobody asked for it
            future = sent.popleft()[1]
            if not future.done():  # the caller may have been cancelled meanwhile
                if isinstance(reply, Exception):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
            flights[0] -= 1
            if not flights[0]:
                flights.popleft()
                landed = True
        if landed:
            if self.timer is not None:  # the next reply due gets a timeout of its own
                self.timer.cancel()
                self.timer = (
                    self.loop.call_later(self.timeout, self._expire)
                    if sent and self.timeout
                    else None
                )
            self.wire._landed(self)

    def eof_received(self) -> bool:
        return False  # the server closed its side: close ours, connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.stream_protocol.connection_lost(exc)
        error = self.error or RedisConnectionError(
            f"Connection to Redis lost{f': {exc}' if exc else ''}"
        )
        sent, self.sent = list(self.sent), deque()
        self.flights.clear()
        self.wire._lost(self, sent, error)


class Wire:
    """Commands of one async client, batched per event-loop turn, on one connection.

    At most ``MAX_IN_FLIGHT`` batches are on the wire at a time: commands issued while
    they are out go together in the next, so under load batches grow by themselves
    (fewer, larger writes), and an idle process sends at once. A caller that is
    cancelled never leaves its reply for another (replies are matched to commands by
    order, whoever still waits). When the connection fails, the commands whose replies
    did not come are sent once more on a fresh connection (a stale one: server
    restarted, idle timeout); a script that ran but whose reply was lost is safe to
    repeat (a step write sees its own id as the head).
    """

    __slots__ = ("_dead", "_due", "_link", "_opening", "_pool", "_queue", "loop")

    def __init__(self, client: aredis.Redis) -> None:
        self._pool: Any = client.connection_pool  # get_connection is untyped
        self.loop: asyncio.AbstractEventLoop | None = None
        self._reset()

    def _reset(self) -> None:
        self._link: _Link | None = None
        self._dead: list[Any] = []  # connections to give back to the pool
        self._queue: list[_Item] = []
        self._due = False  # a flush is scheduled
        self._opening: asyncio.Task[None] | None = None

    def call(self, *args: Any) -> Awaitable[Any]:
        """Send one command (with the others of this loop turn) and return its reply."""
        return self._send(hiredis.pack_command(args))

    async def _send(self, packed: bytes) -> Any:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:
            # connections belong to the loop that made them (and cannot be closed from
            # another): a saver used from a new loop (asyncio.run again) starts afresh
            self._reset()
            self.loop = loop
        future = loop.create_future()
        self._queue.append((packed, future, 1))
        if not self._due:
            link = self._link
            if link is None or len(link.flights) < MAX_IN_FLIGHT:
                self._due = True
                loop.call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        self._due = False
        batch = [item for item in self._queue if not item[1].done()]  # drop cancelled
        if not batch:
            self._queue = []
            return
        link = self._link
        if link is None or not link.alive:
            self._queue = batch
            if self._opening is None:
                assert self.loop is not None
                self._opening = self.loop.create_task(self._open())
            return
        if len(link.flights) >= MAX_IN_FLIGHT:
            self._queue = batch  # sent when a batch out has all its replies
            return
        self._queue = []
        try:
            link.send(batch)
        except Exception as exc:  # a transport closed under us: as if lost in flight
            link.alive = False
            self._lost(link, batch, RedisConnectionError(f"Error writing to Redis: {exc}"))

    def _landed(self, link: _Link) -> None:
        """A batch out has all its replies: send what queued meanwhile."""
        if self._queue and not self._due and link is self._link:
            self._flush()

    def _lost(self, link: _Link, unanswered: list[_Item], error: Exception) -> None:
        if link is self._link:
            self._link = None
            self._dead.append(link.conn)
        retry = [(packed, f, 2) for packed, f, attempt in unanswered if attempt == 1]
        for _, future, attempt in unanswered:
            if attempt == 2 and not future.done():
                future.set_exception(error)
        if retry:
            self._queue[:0] = retry
        loop = self.loop
        if self._queue and not self._due and loop is not None and not loop.is_closed():
            self._due = True
            loop.call_soon(self._flush)

    async def _open(self) -> None:
        try:
            await self._release_dead()
            conn = await self._pool.get_connection()
            try:
                if not conn.is_connected:
                    await conn.connect()
                self._link = _Link(self, conn, _reader())
            except BaseException:
                self._dead.append(conn)
                raise
        except BaseException as exc:
            queue, self._queue = self._queue, []
            for _, future, _ in queue:
                if not future.done():
                    future.set_exception(
                        exc if isinstance(exc, Exception) else RedisConnectionError(repr(exc))
                    )
            if not isinstance(exc, Exception):
                raise
        else:
            self._flush()
        finally:
            self._opening = None

    async def _release_dead(self) -> None:
        dead, self._dead = self._dead, []
        for conn in dead:
            # its socket is closed or closing already: nothing to report if this fails
            with contextlib.suppress(RedisError, OSError):
                await conn.disconnect(nowait=True)
            with contextlib.suppress(KeyError, ValueError):  # the pool was reset meanwhile
                await self._pool.release(conn)

    async def aclose(self) -> None:
        """Wait for the commands sent or queued, then give the connection back to the pool."""
        while True:
            waiting = [f for _, f, _ in self._queue]
            if self._link is not None:
                waiting.extend(f for _, f, _ in self._link.sent)
            if self._opening is not None:
                waiting.append(self._opening)
            waiting = [f for f in waiting if not f.done()]
            if not waiting:
                break
            # wait, not gather: cancelling aclose must not cancel the callers' futures
            await asyncio.wait(waiting)
        if self._link is not None:
            self._dead.append(self._link.conn)
            self._link = None
        await self._release_dead()


class _SyncLink:
    """One pool connection whose socket :class:`SyncWire` reads itself."""

    __slots__ = ("conn", "reader", "sock")

    def __init__(self, conn: Any) -> None:
        if conn._sock is None:
            conn.connect()
        self.conn = conn
        self.sock = conn._sock
        self.reader = _reader()

    def call(self, packed: bytes) -> Any:
        """Send one packed command and return its reply (an error reply is returned, not
        raised: the connection is still good)."""
        sock, reader = self.sock, self.reader
        sock.sendall(packed)
        reply = reader.gets()
        while reply is _MORE or type(reply) is _PUSH:
            if reply is _MORE:
                data = sock.recv(65536)
                if not data:
                    raise RedisConnectionError("Connection closed by server.")
                reader.feed(data)
            reply = reader.gets()
        return reply


class SyncWire:
    """``RedisSaver``'s scripts, each one ``sendall`` and one ``recv``: hiredis packs the
    command and parses the reply.

    redis-py's sync client spends more than a loopback round trip around each command
    (taking a connection from the pool, a health check, packing each argument, the
    observability hooks, giving it back); a step is one ``EVALSHA`` whose arguments we
    already hold as bytes. The connections are the client's own pool's, so they have its
    address, credentials, TLS, protocol and database (redis-py makes the handshake); the
    wire keeps up to ``IDLE`` of them between calls (a thread takes one per call), and
    gives the rest back. A connection that fails (a server restart, an idle timeout) is
    dropped and the command sent once more on a fresh one: every script the savers run is
    safe to repeat (a step write sees its own id as the head). A reply that times out
    drops its connection (its late reply must answer nobody) and raises ``TimeoutError``.
    Errors come back as redis-py raises them.
    """

    IDLE = 8
    __slots__ = ("_free", "_pid", "_pool")

    def __init__(self, client: redis.Redis) -> None:
        self._pool: Any = client.connection_pool
        self._free: list[_SyncLink] = []
        self._pid = os.getpid()

    @staticmethod
    def fits(client: Any) -> bool:
        """Whether ``client`` is a plain client whose pool the wire can borrow from (not a
        cluster client, which routes by slot, nor one that must keep its one connection)."""
        return (
            hiredis is not None
            and type(client) is redis.Redis
            and client.connection is None
            and issubclass(
                client.connection_pool.connection_class, redis.connection.AbstractConnection
            )
        )

    def call(self, *args: Any) -> Any:
        """Send one command and return its reply."""
        packed = hiredis.pack_command(args)
        if self._pid != os.getpid():  # a forked child: the parent's sockets are not ours
            self._free, self._pid = [], os.getpid()
        free = self._free
        link = free.pop() if free else None
        for attempt in (1, 2):
            if link is None:
                link = _SyncLink(self._pool.get_connection())
            try:
                reply = link.call(packed)
            except BaseException as exc:
                self._drop(link)
                link = None
                # a connection that failed (the server closed it, or restarted) is replaced
                # once; a reply that timed out is the savers' to retry (see _programs)
                retry = isinstance(exc, RedisConnectionError | OSError)
                if attempt == 2 or not retry or isinstance(exc, TimeoutError):
                    raise
                continue
            if len(free) < self.IDLE:
                free.append(link)
            else:
                self._pool.release(link.conn)
            if isinstance(reply, Exception):
                raise reply
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _drop(self, link: _SyncLink) -> None:
        # its stream cannot be trusted any more: close it, and give it back to the pool
        with contextlib.suppress(RedisError, OSError):
            link.conn.disconnect()
        with contextlib.suppress(KeyError, ValueError):
            self._pool.release(link.conn)

    def close(self) -> None:
        """Give the idle connections back to the pool."""
        free, self._free = self._free, []
        if self._pid == os.getpid():
            for link in free:
                self._pool.release(link.conn)
