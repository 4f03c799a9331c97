"""``graphagent store ls|get|search|rm`` on a SQLite, a Redis and a PostgreSQL store."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from checkpoint.store import RedisStore, SqliteStore
from graphagent.cli import main


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "memory.sqlite")
    with SqliteStore(path) as store:
        store.put(("memories", "ada"), "tea", {"text": "drinks green tea", "kind": "food"})
        store.put(("memories", "ada"), "cat", {"text": "has a cat", "kind": "home"})
        store.put(("memories", "bob"), "tea", {"text": "drinks black tea", "kind": "food"})
    return path


def test_ls_get_search_rm_on_sqlite(db: str) -> None:
    """Each action prints what it found; rm deletes; a missing item is an error with exit 2."""
    assert _run("store", "ls", "--db", db) == (0, "memories/ada\nmemories/bob\n")
    assert _run("store", "ls", "memories/bob", "--db", db) == (0, "memories/bob\n")
    code, text = _run("store", "get", "memories/ada", "tea", "--db", db)
    assert code == 0 and json.loads(text)["value"] == {"text": "drinks green tea", "kind": "food"}
    code, text = _run("store", "search", "memories", "--query", "GREEN", "--db", db)
    assert code == 0 and text.splitlines() == [
        'memories/ada  tea  {"text": "drinks green tea", "kind": "food"}'
    ]
    code, text = _run("store", "search", "memories", "--filter", '{"kind": "food"}', "--db", db)
    assert code == 0 and len(text.splitlines()) == 2
    assert _run("store", "rm", "memories/ada", "tea", "--db", db) == (
        0,
        "deleted memories/ada tea\n",
    )
    assert _run("store", "get", "memories/ada", "tea", "--db", db)[0] == 2
    assert _run("store", "rm", "memories/ada", "tea", "--db", db)[0] == 2


def test_mistakes_name_the_fix(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bad JSON filters, a missing key or file, and two stores at once are one-line errors."""
    assert _run("store", "search", "memories", "--filter", "{kind", "--db", db)[0] == 2
    assert "--filter must be JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run("store", "get", "memories/ada", "--db", db)  # argparse: the key is required
    assert "key" in capsys.readouterr().err
    assert _run("store", "ls", "--db", str(tmp_path / "nope.sqlite"))[0] == 2
    assert "no SQLite file" in capsys.readouterr().err
    assert _run("store", "ls", "--db", db, "--redis", "redis://x")[0] == 2
    assert "one of" in capsys.readouterr().err


def test_store_cli_on_redis(redis_url: str, redis_prefix: str) -> None:
    """The same commands read a Redis store under its prefix."""
    store = RedisStore.from_url(redis_url, prefix=redis_prefix)
    store.put(("notes",), "n1", {"text": "hello"})
    store.close()
    flags = ("--redis", redis_url, "--prefix", redis_prefix)
    assert _run("store", "ls", *flags) == (0, "notes\n")
    assert _run("store", "search", "notes", *flags)[1].startswith("notes  n1  ")


def test_store_cli_on_postgres(postgres_url: str, pg_schema: str) -> None:
    """The same commands read and delete in a PostgreSQL store's schema, and no other."""
    from checkpoint.store import PostgresStore

    with PostgresStore.from_url(postgres_url, schema=pg_schema) as store:
        store.put(("notes", "ada"), "n1", {"text": "hello", "kind": "greeting"})
        store.put(("notes", "bob"), "n2", {"text": "bye", "kind": "farewell"})
    flags = ("--postgres", postgres_url, "--schema", pg_schema)
    assert _run("store", "ls", *flags) == (0, "notes/ada\nnotes/bob\n")
    code, text = _run("store", "get", "notes/ada", "n1", *flags)
    assert code == 0 and json.loads(text)["value"] == {"text": "hello", "kind": "greeting"}
    code, text = _run("store", "search", "notes", "--filter", '{"kind": "farewell"}', *flags)
    (line,) = text.splitlines()
    assert code == 0 and line.startswith("notes/bob  n2  ")
    assert json.loads(line.split("  ", 2)[2]) == {"text": "bye", "kind": "farewell"}  # JSONB
    assert _run("store", "rm", "notes/ada", "n1", *flags) == (0, "deleted notes/ada n1\n")
    assert _run("store", "ls", *flags) == (0, "notes/bob\n")
