"""A PostgreSQL with pgvector for the store's tests and bench/store.py: the given server
when it has the extension (tests/_system.py installs Debian's package where Debian has
one), else a private server started from the ``pgserver`` package's build (PostgreSQL 16
with pgvector; a dev dependency), on a Unix socket in a temporary directory."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

INITDB = ["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"]
# on a Unix socket only (port 5432 names the socket file, in a directory of our own); no
# fsync: a test server
SERVER = ["-p", "5432", "-c", "listen_addresses=", "-c", "fsync=off"]


class NoPgvector(RuntimeError):
    """Neither the given server nor a private one can give pgvector."""


def has_pgvector(url: str) -> bool:
    """Whether the database at ``url`` has the ``vector`` extension, created here if the
    server has it and this role may (pgvector is not trusted: a superuser)."""
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"
        ).fetchone()
        if not (row and row[0]):
            return False
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error:
            return False
    return True


def pgserver_install() -> Path | None:
    """The PostgreSQL build (with pgvector) inside the ``pgserver`` package, found without
    importing it (its import warns, and warnings are errors in the tests)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    return root if (root / "bin" / "postgres").is_file() else None


@contextmanager
def pgvector_server(url: str) -> Iterator[str]:
    """``url`` if its server has pgvector, else the URL of a private server (stopped and
    removed on exit); :class:`NoPgvector` when neither can be had."""
    if has_pgvector(url):
        yield url
        return
    install = pgserver_install()
    if install is None:
        raise NoPgvector(
            "no PostgreSQL with pgvector: the test server lacks the extension and the "
            "pgserver package is missing (pip install -e '.[dev]')"
        )
    workdir = Path(tempfile.mkdtemp(prefix="graphagent-pgvector-"))
    # PostgreSQL refuses to run as root: run it as the `postgres` user there
    user: str | None = None
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        user = "postgres"
        shutil.chown(workdir, user)
        # the venv may sit where that user cannot reach (a clone in a mode-700 mktemp
        # directory): the server runs from a copy inside its own work directory, laid out
        # as in site-packages (its binaries find their libraries at ../../../pgserver.libs)
        libs = install.parent.parent / "pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, workdir / "pgserver.libs", symlinks=True)
        install = Path(shutil.copytree(install, workdir / "pgserver" / "pginstall", symlinks=True))
    data = workdir / "data"
    subprocess.run(
        [str(install / "bin" / "initdb"), "-D", str(data), *INITDB],
        check=True,
        capture_output=True,
        user=user,
        cwd=workdir,
    )
    log = open(workdir / "log", "wb")  # noqa: SIM115 (closed after the server stops)
    proc = subprocess.Popen(
        [str(install / "bin" / "postgres"), "-D", str(data), "-k", str(workdir), *SERVER],
        stdout=log,
        stderr=subprocess.STDOUT,
        user=user,
        cwd=workdir,
    )
    private = f"postgresql://postgres@/postgres?host={workdir}&port=5432"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(private, connect_timeout=2).close()
                break
            except psycopg.Error:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise NoPgvector(
                        "the private pgvector server did not start: "
                        + (workdir / "log").read_text(errors="replace")[-2000:]
                    ) from None
                time.sleep(0.1)
        yield private
    finally:
        proc.terminate()  # a smart shutdown
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)
