"""The command line after ``make demo`` (issue 23 items 6-9, 11): the default store, the
shipped target, --version and help, in-memory threads, a missing API key."""

from __future__ import annotations

import argparse
import inspect
import io
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from checkpoint.redis import RedisSaver
from graphagent import demo
from graphagent.agent import ReactAgent
from graphagent.cli import main
from graphagent.cli._main import _parser
from graphagent.errors import ModelConfigError
from graphagent.models import init_chat_model

ROOT = Path(__file__).resolve().parent.parent


def run(*argv: str, read: Callable[[str], str] | None = None) -> tuple[int, str]:
    out = io.StringIO()

    def no_input(prompt: str) -> str:
        raise EOFError

    return main(list(argv), out=out, read=read or no_input), out.getvalue()


def command(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m graphagent ...`` in a fresh process on this checkout."""
    base = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "GRAPHAGENT_DB")}
    base["PYTHONPATH"] = str(ROOT)
    for key in ("GRAPHAGENT_MODEL", "GRAPHAGENT_BASE_URL", "OPENAI_API_KEY"):
        base.pop(key, None)
    return subprocess.run(
        [sys.executable, "-m", "graphagent", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, **(env or {})},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory with no store, no Redis and the scripted demo model."""
    for var in ("REDIS_URL", "GRAPHAGENT_DB", "GRAPHAGENT_MODEL", "GRAPHAGENT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo, "_agent", None)  # built again, in this directory
    yield tmp_path


AGENTS = """
from checkpoint import MemorySaver, SqliteSaver
from graphagent.agent import ReactAgent
from graphagent.models import FunctionChatModel, init_chat_model


def answer(messages, tools):
    said = [m.text for m in messages if m.role == "user"]
    return f"you said {len(said)} things, last: {said[-1]}"


plain = ReactAgent(name="plain", model=FunctionChatModel(answer))
in_memory = ReactAgent(name="mem", model=FunctionChatModel(answer), saver=MemorySaver())
sqlite_memory = ReactAgent(
    name="sqlmem", model=FunctionChatModel(answer), saver=SqliteSaver(":memory:")
)


def keyless():
    return ReactAgent(name="keyless", model=init_chat_model("openai:gpt-4o-mini"))
"""


@pytest.fixture
def agents(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of agents in the working directory; yields its name."""
    name = f"cli_newcomer_{uuid.uuid4().hex[:8]}"
    (fresh / f"{name}.py").write_text(textwrap.dedent(AGENTS))
    monkeypatch.syspath_prepend(str(fresh))
    yield name
    sys.modules.pop(name, None)


# -- item 6: the default store ---------------------------------------------------------------


def test_after_the_demo_threads_reads_the_demos_file_and_says_so(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """make demo, then threads list/history/show with no flag: the demo's thread, from
    .graphagent/demo.sqlite, and one stderr line naming that file."""
    assert demo.main() == 0
    capsys.readouterr()
    code, text = run("threads", "list")
    err = capsys.readouterr().err
    assert (code, text) == (0, f"{demo.THREAD}\n")
    assert err == (
        "graphagent: reading the SQLite file .graphagent/demo.sqlite (the default store; "
        "--db, --postgres or --redis read another)\n"
    )
    code, text = run("threads", "show", demo.THREAD)
    assert code == 0 and "What did I ask you before?" in text
    assert run("threads", "history", demo.THREAD, "--limit", "2")[0] == 0


def test_graphagent_db_names_the_default_file(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """GRAPHAGENT_DB moves the demo's file, and threads follows it."""
    monkeypatch.setenv("GRAPHAGENT_DB", str(fresh / "elsewhere" / "mine.sqlite"))
    assert demo.main() == 0
    capsys.readouterr()
    assert run("threads", "list") == (0, f"{demo.THREAD}\n")
    assert "elsewhere/mine.sqlite" in capsys.readouterr().err
    assert not (fresh / ".graphagent").exists()


def test_no_default_file_is_one_line_naming_it_and_the_flags(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before any demo or chat: one line naming the file it looked for and how to pick
    another store; nothing is created by looking."""
    code, text = run("threads", "list")
    err = capsys.readouterr().err
    assert (code, text) == (2, "") and err.count("\n") == 1
    assert "no SQLite file '.graphagent/demo.sqlite', the default store" in err
    assert "--db PATH, --postgres URL or --redis URL" in err
    assert not (fresh / ".graphagent").exists()


def test_with_redis_url_the_demo_and_threads_meet_in_redis(
    fresh: Path,
    monkeypatch: pytest.MonkeyPatch,
    redis_url: str,
    redis_prefix: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """REDIS_URL set: the demo writes to Redis and threads (no --redis) reads it there;
    the URL (it may hold a password) is not printed."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setattr(demo, "REDIS_PREFIX", redis_prefix)  # this test's keys only
    assert demo.main() == 0
    assert redis_url not in capsys.readouterr().out
    assert run("threads", "list", "--prefix", redis_prefix) == (0, f"{demo.THREAD}\n")
    err = capsys.readouterr().err
    assert f"reading Redis at $REDIS_URL, prefix {redis_prefix!r}" in err
    assert redis_url not in err and not (fresh / ".graphagent").exists()


def test_the_demo_the_cli_and_redis_saver_share_one_prefix() -> None:
    """The demo's Redis prefix is the CLI's default --prefix and RedisSaver's default."""
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    threads = sub.choices["threads"]
    actions = next(a for a in threads._actions if isinstance(a, argparse._SubParsersAction))
    for parsed in (
        actions.choices["list"].parse_args([]),
        sub.choices["chat"].parse_args(["x:y", "--thread", "t"]),
    ):
        assert parsed.prefix == demo.REDIS_PREFIX
    assert inspect.signature(RedisSaver).parameters["prefix"].default == demo.REDIS_PREFIX


def test_chat_keeps_a_saverless_agents_thread_in_the_default_store(
    agents: str, fresh: Path
) -> None:
    """An agent without a saver and no flag: the thread goes to the default file (said in
    one line), so a second chat continues it and threads finds it."""
    code, text = run("chat", f"{agents}:plain", "--thread", "d", "-m", "hello")
    assert code == 0 and "you said 1 things" in text
    assert "threads: the SQLite file .graphagent/demo.sqlite (the default store;" in text
    code, text = run("chat", f"{agents}:plain", "--thread", "d", "-m", "again")
    assert code == 0 and "you said 2 things, last: again" in text
    assert run("threads", "list")[1] == "d\n"


# -- item 7: a target that works --------------------------------------------------------------


def test_the_shipped_target_draws_and_chats(fresh: Path) -> None:
    """graphagent.demo:agent needs no arguments: draw and chat work on it as shipped."""
    code, text = run("draw", "graphagent.demo:agent")
    assert code == 0 and "graph 'weather_assistant'" in text and "[tools: get_" in text
    code, text = run("chat", "graphagent.demo:agent", "--thread", "w", "-m", "Weather in Oslo?")
    assert code == 0 and "weather_assistant> The weather in Oslo is light snow, -2 C." in text
    assert "the agent's own saver, the SQLite file .graphagent/demo.sqlite" in text
    assert run("threads", "list")[1] == "w\n"


def test_chat_without_a_thread_starts_a_named_one_that_continues(fresh: Path) -> None:
    """No --thread: a new thread, its id and how to continue it in the first line; that
    id continues the conversation; two such chats get two threads."""
    code, text = run("chat", "graphagent.demo:agent", "-m", "Weather in Tokyo?")
    header = text.splitlines()[0]
    assert code == 0 and header.startswith("chatting with 'weather_assistant' on thread 'chat-")
    thread = header.split("'")[3]
    assert header.endswith(f"(new: --thread {thread} continues it)")
    code, text = run("chat", "graphagent.demo:agent", "--thread", thread, "-m", "Before?")
    assert code == 0 and "Weather in Tokyo?" in text and "new:" not in text
    assert run("chat", "graphagent.demo:agent", "-m", "hi")[0] == 0
    assert len(run("threads", "list")[1].splitlines()) == 2


def test_the_demo_agent_is_built_on_first_use_only(tmp_path: Path) -> None:
    """Importing graphagent.demo opens no store; reading .agent builds one agent, once."""
    check = (
        "import os, graphagent.demo as d\n"
        "assert d._agent is None and not os.path.exists('.graphagent')\n"
        "a = d.agent\n"
        "assert a is d.agent and a.name == 'weather_assistant'\n"
        "assert os.path.exists('.graphagent/demo.sqlite')\n"
        "try:\n    d.nothing\nexcept AttributeError as e:\n    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for var in ("REDIS_URL", "GRAPHAGENT_DB", "GRAPHAGENT_MODEL", "GRAPHAGENT_BASE_URL"):
        env.pop(var, None)
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "module 'graphagent.demo' has no attribute 'nothing'" in done.stdout


# -- item 8: --version, help, subcommands, the history table -----------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """graphagent --version prints the package's version and exits 0."""
    import graphagent

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"graphagent {graphagent.__version__}\n"


def _all_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _all_parsers(child)


def test_every_help_is_plain_text_and_every_command_has_an_example() -> None:
    """No RST backticks in any --help; every leaf command shows an example."""
    parsers = list(_all_parsers(_parser()))
    assert len(parsers) >= 9  # graphagent, draw, chat, threads + 4, mcp + serve
    for parser in parsers:
        text = parser.format_help()
        assert "`" not in text, parser.prog
        leaf = not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
        if leaf:
            assert "example: graphagent " in text, parser.prog
    threads = {p.prog.split()[-1]: p for p in parsers if p.prog.startswith("graphagent threads ")}
    assert sorted(threads) == ["delete", "history", "list", "show"]


def test_history_is_a_table_with_a_header_and_aligned_columns(agents: str, fresh: Path) -> None:
    """threads history: a header row, then one row a checkpoint, each column starting
    where its header does (numbers right-aligned under theirs)."""
    db = str(fresh / "t.sqlite")
    for text in ("one", "two"):
        assert run("chat", f"{agents}:plain", "--thread", "h", "--db", db, "-m", text)[0] == 0
    code, text = run("threads", "history", "h", "--db", db)
    header, *rows = text.splitlines()
    assert code == 0 and len(rows) >= 4
    starts = [header.index(name) for name in ("WRITTEN BY", "NEXT", "CREATED", "CHECKPOINT")]
    for row in rows:
        for start in starts:
            assert row[start - 2 : start] == "  " and row[start] != " ", (row, start)
        ends = [header.index("STEP") + 4, header.index("MESSAGES") + len("MESSAGES")]
        for end in ends:
            assert row[end - 1] != " " and row[end : end + 2] == "  ", (row, end)


# -- item 9: threads that are not kept ----------------------------------------------------------


@pytest.mark.parametrize("target", ["in_memory", "sqlite_memory"])
def test_chat_says_an_in_memory_thread_ends_with_the_process(
    agents: str, fresh: Path, target: str
) -> None:
    """An agent whose saver is in memory: one line says the thread ends with the process
    and how to keep it; with --db the line is gone."""
    code, text = run("chat", f"{agents}:{target}", "--thread", "m", "-m", "hi")
    assert code == 0
    line = (
        "this agent keeps threads in memory: the conversation ends with this process; "
        "pass --db to keep it"
    )
    assert text.splitlines()[1] == line
    code, text = run("chat", f"{agents}:{target}", "--thread", "m", "--db", "k.sqlite", "-m", "x")
    assert code == 0 and "in memory" not in text


# -- item 11: a model with no API key ----------------------------------------------------------


def test_chat_with_no_api_key_is_one_line_naming_the_variable(
    agents: str, fresh: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-m or typed: one line, exit 2, naming OPENAI_API_KEY; the session does not go on
    failing turn after turn."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    expected = (
        "graphagent: error: the model needs an API key: set the environment variable "
        "OPENAI_API_KEY\n"
    )
    code, _ = run("chat", f"{agents}:keyless", "--thread", "k", "--db", "k.sqlite", "-m", "hi")
    assert code == 2 and capsys.readouterr().err == expected
    typed = iter(["hi", "still there?"])
    asked: list[str] = []

    def read(prompt: str) -> str:
        asked.append(prompt)
        return next(typed)

    code, _ = run("chat", f"{agents}:keyless", "--thread", "k", "--db", "k.sqlite", read=read)
    assert code == 2 and capsys.readouterr().err == expected and asked == ["you> "]


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"GRAPHAGENT_MODEL": "openai:gpt-4o-mini"},
            "graphagent demo: the model needs an API key: set OPENAI_API_KEY (or unset "
            "GRAPHAGENT_MODEL to run with the scripted model)",
        ),
        ({"GRAPHAGENT_MODEL": "gpt4"}, "graphagent demo: cannot read model spec 'gpt4'"),
        (
            {"GRAPHAGENT_BASE_URL": "http://127.0.0.1:1/v1"},
            "graphagent demo: cannot reach http://127.0.0.1:1/v1",
        ),
        ({"REDIS_URL": "redis://127.0.0.1:1/0"}, "graphagent demo: Redis failed while reading"),
    ],
    ids=["no-api-key", "bad-model-spec", "model-server-down", "redis-down"],
)
def test_the_demo_misconfigured_is_one_line_and_exit_2(
    tmp_path: Path, env: dict[str, str], line: str
) -> None:
    """make demo with a model or store it cannot use: one stderr line saying what (the
    variable to set, for a missing key), exit 2, no traceback."""
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    for var in ("OPENAI_API_KEY", "REDIS_URL", "GRAPHAGENT_DB", "GRAPHAGENT_BASE_URL"):
        base.pop(var, None)
    base.pop("GRAPHAGENT_MODEL", None)
    done = subprocess.run(
        [sys.executable, "-m", "graphagent.demo"],
        cwd=tmp_path,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(line) and done.stderr.count("\n") == 1, done.stderr


def test_library_calls_still_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the command line the exception propagates, a UserError carrying the variable."""
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    agent = ReactAgent(name="k", model=init_chat_model("dashscope:qwen-plus"))
    with pytest.raises(ModelConfigError, match="DASHSCOPE_API_KEY") as raised:
        agent.call("hi")
    assert raised.value.variable == "DASHSCOPE_API_KEY"
