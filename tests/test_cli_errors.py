"""Failures around the command (issue 30 item 16): a full disk, a missing folder, a file
where a folder should be, a module that exits on import, a busy port, an unreachable
PostgreSQL. Each is one line on stderr and exit code 2, mapped in one place."""

from __future__ import annotations

import errno
import io
import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from graphagent.cli import main
from graphagent.cli._common import CliError
from graphagent.cli._errors import one_line
from graphagent.errors import ModelConfigError

ROOT = Path(__file__).resolve().parent.parent


def fails(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run the command; assert exit 2, nothing on stdout, one stderr line; return it."""
    out = io.StringIO()
    code = main(list(argv), out=out, read=lambda prompt: "")
    err = capsys.readouterr().err
    assert (code, out.getvalue()) == (2, ""), (code, out.getvalue(), err)
    assert err.startswith("graphagent: error: ") and err.count("\n") == 1, err
    return err


def command(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "graphagent", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The test's own working directory, importable, without the demo's store variables."""
    for var in ("REDIS_URL", "GRAPHAGENT_DB", "GRAPHAGENT_MODEL", "GRAPHAGENT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path


def test_draw_into_a_missing_folder(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """draw -o no/such/dir/a.svg: the path and 'its folder does not exist'; nothing made."""
    err = fails("draw", "graphagent.demo:agent", "-o", "no/such/a.svg", capsys=capsys)
    assert "'no/such/a.svg': its folder does not exist" in err
    assert not (workdir / "no").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_draw_onto_a_full_device(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """draw -o /dev/full (every write fails with ENOSPC): 'the device is full'."""
    err = fails("draw", "graphagent.demo:agent", "-f", "svg", "-o", "/dev/full", capsys=capsys)
    assert "'/dev/full': the device is full" in err


@pytest.mark.parametrize("under", ["file/x.sqlite", "file/deeper/x.sqlite"])
def test_chat_db_under_a_regular_file(
    workdir: Path, capsys: pytest.CaptureFixture[str], under: str
) -> None:
    """chat --db where a folder of the path is a regular file: one line saying so."""
    (workdir / "file").write_text("not a folder")
    err = fails(
        "chat", "graphagent.demo:agent", "-t", "t", "--db", under, "-m", "hi", capsys=capsys
    )
    assert "a file is in the way where a folder should be" in err
    assert (workdir / "file").read_text() == "not a folder"


@pytest.mark.parametrize("code", ["0", "3", "'bye'"])
def test_a_module_that_exits_on_import(
    workdir: Path, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    """A target module calling sys.exit() on import: named, exit 2 (not its own code)."""
    name = f"exits_{uuid.uuid4().hex[:8]}"
    (workdir / f"{name}.py").write_text(f"import sys\nsys.exit({code})\n")
    try:
        for target in (f"{name}:agent", f"{name}.py:agent"):
            err = fails("draw", target, capsys=capsys)
            assert f"called sys.exit({code})" in err and "if __name__ == '__main__'" in err
    finally:
        sys.modules.pop(name, None)


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_mcp_serve_on_a_port_in_use(workdir: Path, busy_port: int) -> None:
    """mcp serve --http on a busy port: one line (no server log, no traceback), exit 2."""
    pytest.importorskip("mcp")
    done = command(
        "mcp",
        "serve",
        "graphagent.demo:get_weather",
        "--http",
        f"127.0.0.1:{busy_port}",
        cwd=workdir,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"graphagent: error: cannot serve at 127.0.0.1:{busy_port}: another program "
        "listens there; pick another port\n"
    )


@pytest.mark.parametrize(
    "argv", [["threads", "list"], ["chat", "graphagent.demo:agent", "-t", "t", "-m", "hi"]]
)
def test_postgres_that_does_not_answer(workdir: Path, argv: list[str]) -> None:
    """--postgres to a port nobody serves: one line at once, no pool warnings first."""
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://someone:s3cret@127.0.0.1:{port}/app"
    started = time.monotonic()
    done = command(*argv, "--postgres", url, cwd=workdir)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("graphagent: error: cannot reach PostgreSQL: ")
    assert "s3cret" not in done.stderr
    assert time.monotonic() - started < 20  # no pool timeout waited out


def test_postgres_reachable_but_no_such_database(
    workdir: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that answers without the database: psycopg's real cause, one line."""
    base = postgres_url.rsplit("/", 1)[0]
    err = fails(
        "threads", "list", "--postgres", f"{base}/no_such_db_{uuid.uuid4().hex[:6]}", capsys=capsys
    )
    assert "cannot reach PostgreSQL" in err and "does not exist" in err


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (CliError("bad input\nmore"), "bad input"),
        (
            ModelConfigError("no key", "X_KEY"),
            "the model needs an API key: set the environment variable X_KEY",
        ),
        (
            OSError(errno.EACCES, "Permission denied", "/etc/x"),
            "'/etc/x': permission denied (Permission denied)",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "/ro/x"),
            "'/ro/x': the file system is read-only",
        ),
        (OSError(errno.EADDRINUSE, "Address already in use"), "Address already in use"),
        (
            ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
            "Connection reset by peer",
        ),
        (sqlite3.DatabaseError("file is not a database"), "SQLite: file is not a database"),
        (
            redis.ConnectionError("Error 111 connecting to h:1. Connection refused."),
            "Redis: Error 111",
        ),
        (ValueError("a bug"), None),
        (KeyError("a bug"), None),
    ],
)
def test_the_one_mapping_place(exc: BaseException, expected: str | None) -> None:
    """Each class of failure a person can act on maps to its line; a bug maps to nothing
    (so its traceback stays)."""
    line = one_line(exc)
    if expected is None:
        assert line is None
    else:
        assert line is not None and line.startswith(expected.split(" (")[0]), line
        assert "\n" not in line


def test_a_bug_keeps_its_traceback(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error that is no one's input or setup (a bug) is not hidden behind a line."""
    import graphagent.cli._draw as draw_module

    def broken(obj: object, spec: str) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(draw_module, "graph_of", broken)
    with pytest.raises(ZeroDivisionError):
        main(["draw", "graphagent.demo:get_weather"], out=io.StringIO())


def test_threads_on_another_applications_sqlite_file_changes_nothing(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """threads list/show/history/delete --db on a SQLite file that is not a graphagent
    store: one line naming it as such, no tables added, the journal mode untouched."""
    path = workdir / "app.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
    before = path.read_bytes()
    for argv in (["list"], ["show", "t"], ["history", "t"], ["delete", "t"]):
        err = fails("threads", *argv, "--db", str(path), capsys=capsys)
        assert "is not a graphagent store" in err, err
    conn = sqlite3.connect(path)
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
        assert tables == ["users"]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()
    assert path.read_bytes() == before
