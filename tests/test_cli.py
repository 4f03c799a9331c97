"""The ``graphagent`` command: draw, chat (resuming a thread), threads; one-line errors."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphagent.cli import main

AGENTS = """
from checkpoint import MemorySaver
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.graph import END, START, StateGraph
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel, FunctionChatModel


def answer(messages, tools):
    said = [m.text for m in messages if m.role == "user"]
    return f"you said {len(said)} things, last: {said[-1]}"


agent = ReactAgent(name="echo", model=FunctionChatModel(answer))


def make_agent():
    return agent


def send_email(to: str) -> str:
    "Send an email."
    return f"sent to {to}"


call = ToolCall(id="c1", name="send_email", arguments='{"to": "bob"}')
careful = ReactAgent(
    name="careful",
    model=FakeChatModel([AssistantMessage(tool_calls=[call]), "Done: mailed bob."]),
    tools=[send_email],
    hooks=[HumanInTheLoopHook(approval_on={"send_email": "mail leaves the company"})],
    saver=MemorySaver(),
)

graph = StateGraph().add_node("only", lambda s: None)
graph = graph.add_edge(START, "only").add_edge("only", END).compile(name="tiny")
not_a_graph = 42
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of agents and graphs in the working directory; yields its name."""
    name = f"cli_agents_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(AGENTS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def run(*argv: str, read: object = None) -> tuple[int, str]:
    out = io.StringIO()

    def no_input(prompt: str) -> str:
        raise EOFError

    code = main(list(argv), out=out, read=read or no_input)  # type: ignore[arg-type]
    return code, out.getvalue()


def test_draw_to_stdout_and_file(module: str, tmp_path: Path) -> None:
    """Any format to stdout; -o writes a file and says so; agents and factories work."""
    code, text = run("draw", f"{module}:graph")
    assert code == 0 and "[only]" in text
    code, text = run("draw", f"{module}:make_agent", "--format", "mermaid")
    assert code == 0 and "flowchart TD" in text and ":::ga_model" in text
    code, text = run("draw", f"{module}:agent", "-f", "svg", "-o", "agent.svg")
    assert code == 0 and "wrote agent.svg (svg" in text
    assert (tmp_path / "agent.svg").read_text().startswith("<svg")
    code, text = run("draw", f"{module}.py:graph", "-f", "dot")
    assert code == 0 and "digraph" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["draw", "nocolon"], "expected module:object"),
        (["draw", "no_such_module_xyz:agent"], "cannot import 'no_such_module_xyz'"),
        (["draw", "{m}:missing"], "has no attribute 'missing'"),
        (["draw", "{m}:not_a_graph"], "is a int, not a graph or agent"),
        (["draw", "missing_file.py:x"], "no such file 'missing_file.py'"),
        (["chat", "{m}:graph", "--thread", "t"], "not an agent"),
        (["chat", "{m}:agent", "--thread", "t", "-m", "hi"], "has no saver"),
        (["threads", "list", "--redis", "redis://127.0.0.1:1/0"], "cannot reach Redis"),
    ],
)
def test_errors_are_one_line_and_exit_2(
    module: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad module paths, wrong objects, unreachable Redis: one clear line, exit code 2."""
    code, _ = run(*[a.replace("{m}", module) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("graphagent: error: ") and message in err
    assert err.count("\n") == 1


def test_usage_errors_are_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own errors keep the one-line rule and exit code 2."""
    with pytest.raises(SystemExit) as exc:
        main(["draw", "x:y", "--format", "png"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'png'" in err and err.count("\n") == 1


def test_chat_resumes_a_thread_through_redis_and_threads_look_into_it(
    module: str, redis_url: str, redis_prefix: str
) -> None:
    """Two chat sessions on one thread (the second sees the first), then threads shows it."""
    common = ["--thread", "t-1", "--redis", redis_url, "--prefix", redis_prefix]
    code, text = run("chat", f"{module}:agent", *common, "-m", "hello")
    assert code == 0 and "echo> you said 1 things, last: hello" in text
    lines = iter(["", "again"])

    def typed(prompt: str) -> str:
        line = next(lines, None)
        if line is None:
            raise EOFError  # Ctrl-D
        return line

    code, text = run("chat", f"{module}:agent", *common, read=typed)
    assert code == 0 and "you said 2 things, last: again" in text

    store = ["--redis", redis_url, "--prefix", redis_prefix]
    code, text = run("threads", "list", *store)
    assert code == 0 and text.splitlines() == ["t-1"]
    code, text = run("threads", "show", "t-1", *store)
    assert "user: again" in text and "assistant: you said 2 things" in text
    assert "next: nothing (finished)" in text
    code, text = run("threads", "history", "t-1", *store)
    steps = [line.split()[0] for line in text.splitlines()]
    assert steps == sorted(steps, key=int, reverse=True) and len(steps) >= 4
    assert "model" in text
    code, text = run("threads", "delete", "t-1", *store)
    assert code == 0 and "deleted thread 't-1'" in text
    assert run("threads", "list", *store)[1] == ""
    code, _ = run("threads", "show", "t-1", *store)
    assert code == 2


def test_chat_keeps_a_thread_in_a_sqlite_file(module: str, tmp_path: Path) -> None:
    """chat --db keeps the thread in a file a later session continues; threads --db reads it."""
    db = str(tmp_path / "chats" / "threads.sqlite")
    code, text = run("chat", f"{module}:agent", "--thread", "s-1", "--db", db, "-m", "hello")
    assert code == 0 and "echo> you said 1 things, last: hello" in text
    code, text = run("chat", f"{module}:agent", "--thread", "s-1", "--db", db, "-m", "again")
    assert code == 0 and "you said 2 things, last: again" in text
    assert run("threads", "list", "--db", db) == (0, "s-1\n")
    code, text = run("threads", "show", "s-1", "--db", db)
    assert code == 0 and "user: again" in text
    code, text = run("threads", "history", "s-1", "--db", db, "--limit", "2")
    assert code == 0 and len(text.splitlines()) == 2
    assert run("threads", "delete", "s-1", "--db", db)[0] == 0
    assert run("threads", "show", "s-1", "--db", db)[0] == 2
    assert run("threads", "list", "--db", str(tmp_path / "missing.sqlite"))[0] == 2
    code, _ = run("threads", "list", "--db", db, "--redis", "redis://127.0.0.1:1/0")
    assert code == 2


def test_chat_and_threads_on_postgresql(module: str, postgres_url: str, pg_schema: str) -> None:
    """chat --postgres creates the tables and keeps the thread; threads --postgres reads it."""
    pg = ["--postgres", postgres_url, "--schema", pg_schema]
    code, _ = run("threads", "list", *pg)
    assert code == 2  # no tables yet: a one-line error, not a traceback
    code, text = run("chat", f"{module}:agent", "--thread", "p-1", *pg, "-m", "hello")
    assert code == 0 and "you said 1 things, last: hello" in text
    code, text = run("chat", f"{module}:agent", "--thread", "p-1", *pg, "-m", "again")
    assert code == 0 and "you said 2 things, last: again" in text
    assert run("threads", "list", *pg) == (0, "p-1\n")
    code, text = run("threads", "show", "p-1", *pg)
    assert code == 0 and "user: again" in text
    assert run("threads", "delete", "p-1", *pg)[0] == 0
    code, _ = run("threads", "show", "p-1", *pg)
    assert code == 2
    code, _ = run("threads", "list", *pg, "--db", "x.sqlite")
    assert code == 2


def test_chat_asks_for_a_pending_answer_and_resumes_with_it(module: str) -> None:
    """A human-in-the-loop pause is shown; the next line (JSON or text) resumes the run."""
    code, text = run("chat", f"{module}:careful", "--thread", "h", "-m", "mail bob")
    assert code == 0 and "(waiting for you)" in text and "mail leaves the company" in text
    prompts: list[str] = []
    answers = iter(['[{"type": "approve"}]'])

    def typed(prompt: str) -> str:
        prompts.append(prompt)
        line = next(answers, None)
        if line is None:
            raise EOFError
        return line

    code, text = run("chat", f"{module}:careful", "--thread", "h", read=typed)
    assert prompts[0] == "answer> " and prompts[1] == "you> "
    assert "[send_email] sent to bob" in text and "Done: mailed bob." in text


def test_console_entry_point_runs(module: str, tmp_path: Path) -> None:
    """``python -m graphagent`` is the same command, exit codes included."""

    def command(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "graphagent", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )

    ok = command("draw", f"{module}:graph")
    assert ok.returncode == 0 and "[only]" in ok.stdout
    bad = command("draw", f"{module}:nothing")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


FACTORIES = """
from graphagent.agent import ReactAgent
from graphagent.models import FakeChatModel


def needs_args(model, *, name):
    return ReactAgent(name=name, model=model)


def raises():
    raise RuntimeError("no API key configured\\nsecond line")


def raises_silently():
    raise KeyError


class Builder:
    def __init__(self, size):
        self.size = size


def optional_args(name="opt"):
    return ReactAgent(name=name, model=FakeChatModel(["hi"]))
"""


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("needs_args", "is a function that needs arguments (model, name)"),
        ("Builder", "needs arguments (size)"),
        ("raises", "calling '{m}:raises' failed: RuntimeError: no API key configured"),
        ("raises_silently", "calling '{m}:raises_silently' failed: KeyError"),
    ],
)
def test_factories_that_need_arguments_or_raise_are_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    message: str,
) -> None:
    """A factory with required parameters, or one that raises: one line, exit 2, no call."""
    name = f"cli_factories_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(FACTORIES))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code, _ = run("draw", f"{name}:{target}")
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert message.replace("{m}", name) in err
        code, text = run("draw", f"{name}:optional_args")
        assert code == 0 and "[model]" in text  # defaults only: called as before
    finally:
        sys.modules.pop(name, None)


def test_threads_limits_missing_threads_and_stray_ids(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--limit below 1, delete of a missing thread, list with an id: one clear line, exit 2."""
    db = str(tmp_path / "threads.sqlite")
    for thread in ("a", "b", "c"):
        assert run("chat", f"{module}:agent", "--thread", thread, "--db", db, "-m", "hi")[0] == 0
    capsys.readouterr()

    def fails(*argv: str) -> str:
        code, text = run(*argv)
        err = capsys.readouterr().err
        assert code == 2 and text == "" and err.count("\n") == 1, (code, text, err)
        return err

    for limit in ("0", "-3"):
        err = fails("threads", "history", "a", "--db", db, "--limit", limit)
        assert f"--limit must be 1 or more (got {limit})" in err
        assert "--limit must be" in fails("threads", "list", "--db", db, "--limit", limit)
    assert run("threads", "list", "--db", db, "--limit", "2") == (0, "a\nb\n")
    assert len(run("threads", "history", "a", "--db", db, "--limit", "1")[1].splitlines()) == 1

    err = fails("threads", "delete", "zzz", "--db", db)
    assert "no thread 'zzz'" in err and "nothing deleted" in err
    err = fails("threads", "list", "a", "--db", db)
    assert "takes no thread id" in err and "graphagent threads show a" in err
    assert "needs a thread id" in fails("threads", "history", "--db", db)
    assert run("threads", "list", "--db", db) == (0, "a\nb\nc\n")  # nothing was deleted


def test_threads_list_on_an_empty_or_invalid_prefix(
    redis_url: str, redis_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No threads: empty stdout, a note on stderr, exit 0; an invalid prefix is named as such."""
    code, text = run("threads", "list", "--redis", redis_url, "--prefix", redis_prefix)
    err = capsys.readouterr().err
    assert (code, text) == (0, "")
    assert f"no threads under prefix {redis_prefix!r}" in err
    for bad in ("", "a:b"):
        code, text = run("threads", "list", "--redis", redis_url, "--prefix", bad)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1
        assert "--prefix: invalid key prefix" in err and "cannot reach" not in err
