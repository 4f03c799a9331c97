"""The async Redis clients the savers and the server make from a URL."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aredis

__all__ = ["async_client"]


def _pool_skips_its_check() -> bool:
    """Whether redis-py's async pool hands out a connection the server closed: 8.1 skips
    its check of an idle connection when maintenance notifications are on, and a RESP3
    client over TCP turns them on by default (redis-py #4252), so the first command on
    each pooled connection after a Redis restart fails."""
    return hasattr(aredis.ConnectionPool, "maint_notifications_enabled")


def async_client(url: str, **options: Any) -> aredis.Redis:
    """``redis.asyncio.Redis.from_url(url, **options)``, whose pool replaces a connection
    the server closed (a restart, a failover, an idle timeout) before handing it out.

    On redis-py 8.1 that needs maintenance notifications off (they are for planned
    maintenance of Redis Cloud and Enterprise; pass ``maint_notifications_config=`` to
    choose yourself); other versions get exactly ``from_url``.

    Example:
        >>> client = async_client("redis://localhost:6379/0", socket_timeout=5)
    """
    if "maint_notifications_config" not in options and _pool_skips_its_check():
        from redis.maint_notifications import MaintNotificationsConfig

        options["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    return aredis.Redis.from_url(url, **options)
