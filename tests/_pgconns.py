"""A test's own PostgreSQL connections, found by their ``application_name``: a URL that
names them, and ending them all, as a restart or a failover would."""

from __future__ import annotations

import time
import uuid

import psycopg


def named_url(postgres_url: str) -> tuple[str, str]:
    """``postgres_url`` with an ``application_name`` of this test's own, and the name."""
    name = f"gatest_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in postgres_url else "?"
    return f"{postgres_url}{sep}application_name={name}", name


def terminate(postgres_url: str, name: str) -> int:
    """End every connection whose ``application_name`` is ``name`` and wait until they
    are gone; how many there were."""
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
        for _ in range(100):
            left = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchone()
            if left is not None and left[0] == 0:
                break
            time.sleep(0.02)
    return len(killed)
