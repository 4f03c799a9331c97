"""The ``graphagent`` command: draw, chat (resuming a thread), threads; one-line errors."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
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

def mail_or_report(messages, tools):
    if messages[-1].role == "tool":
        return f"Done: {messages[-1].text}."
    return AssistantMessage(tool_calls=[call])


def make_stateless_careful():
    # answers from the conversation alone, so each process behaves the same
    return ReactAgent(
        name="careful",
        model=FunctionChatModel(mail_or_report),
        tools=[send_email],
        hooks=[HumanInTheLoopHook(approval_on={"send_email": "mail leaves the company"})],
    )


def send_many(to: str) -> str:
    "Send an email."
    return f"sent to {to}"


calls = [
    ToolCall(id="m1", name="send_many", arguments='{"to": "ann"}'),
    ToolCall(id="m2", name="send_many", arguments='{"to": "ben"}'),
]
def make_bulk():
    return ReactAgent(
        name="bulk",
        model=FakeChatModel([AssistantMessage(tool_calls=calls), "Both handled."]),
        tools=[send_many],
        hooks=[HumanInTheLoopHook(approval_on={"send_many": "bulk mail"})],
        saver=MemorySaver(),
    )


bulk = make_bulk()


def refund(amount: int) -> str:
    "Refund an amount."
    from graphagent.graph import interrupt

    answer = interrupt(f"Refund {amount} EUR?")
    return f"refund answer: {answer}"


refund_call = ToolCall(id="r1", name="refund", arguments='{"amount": 40}')
asks = ReactAgent(
    name="asks",
    model=FakeChatModel([AssistantMessage(tool_calls=[refund_call]), "Refund settled."]),
    tools=[refund],
    saver=MemorySaver(),
)


def flaky_answer(messages, tools):
    from graphagent.errors import ModelHTTPError

    said = [m.text for m in messages if m.role == "user"]
    if said[-1] == "fail":
        raise ModelHTTPError("http://llm.local answered HTTP 503: overloaded", status_code=503)
    return f"ok: {said[-1]}"


flaky = ReactAgent(name="flaky", model=FunctionChatModel(flaky_answer), saver=MemorySaver())

def slow_lookup(key: str) -> str:
    "Look a key up, slowly."
    import time

    time.sleep(0.6)
    return f"value of {key}"


lookup_call = ToolCall(id="k1", name="slow_lookup", arguments='{"key": "a"}')
looker = ReactAgent(
    name="looker",
    model=FakeChatModel([AssistantMessage(tool_calls=[lookup_call]), "The value is there."]),
    tools=[slow_lookup],
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
    code, text = run("draw", f"{module}:agent", "-f", "plantuml")
    assert code == 0 and text.startswith("@startuml") and text.endswith("@enduml\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["draw", "nocolon"], "expected module:object"),
        (["draw", "no_such_module_xyz:agent"], "cannot import 'no_such_module_xyz'"),
        (["draw", "{m}:missing"], "has no attribute 'missing'"),
        (["draw", "{m}:not_a_graph"], "is a int, not a graph or agent"),
        (["draw", "missing_file.py:x"], "no such file 'missing_file.py'"),
        (["chat", "{m}:graph", "--thread", "t"], "not an agent"),
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
    header, *rows = text.splitlines()
    assert header.split() == ["STEP", "WRITTEN", "BY", "NEXT", "MESSAGES", "CREATED", "CHECKPOINT"]
    steps = [line.split()[0] for line in rows]
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
    assert "__agent" not in text and "AgentRecord" not in text  # private bookkeeping
    code, text = run("threads", "history", "s-1", "--db", db, "--limit", "2")
    assert code == 0 and len(text.splitlines()) == 1 + 2  # the header, two checkpoints
    assert run("threads", "delete", "s-1", "--db", db)[0] == 0
    assert run("threads", "show", "s-1", "--db", db)[0] == 2
    assert run("threads", "list", "--db", str(tmp_path / "missing.sqlite"))[0] == 2
    code, _ = run("threads", "list", "--db", db, "--redis", "redis://127.0.0.1:1/0")
    assert code == 2


def test_chat_m_header_does_not_ask_for_ctrl_d(module: str, tmp_path: Path) -> None:
    """-m sends, prints and exits, so its header does not tell the user to press Ctrl-D;
    an interactive session's header still does."""
    db = str(tmp_path / "threads.sqlite")
    code, text = run("chat", f"{module}:agent", "--thread", "h", "--db", db, "-m", "hello")
    header = text.splitlines()[0]
    assert code == 0 and header.startswith("chatting with ") and header.endswith("thread 'h'")
    assert "Ctrl-D" not in text
    code, text = run("chat", f"{module}:agent", "--thread", "h", "--db", db)
    assert code == 0 and text.splitlines()[0].endswith("thread 'h' (Ctrl-D to stop)")


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


def typed_lines(*lines: str) -> tuple[list[str], Callable[[str], str]]:
    """A fake terminal: the prompts it was shown, and a reader answering with ``lines``."""
    prompts: list[str] = []
    answers = iter(lines)

    def read(prompt: str) -> str:
        prompts.append(prompt)
        line = next(answers, None)
        if line is None:
            raise EOFError  # Ctrl-D
        return line

    return prompts, read


def test_chat_m_stops_at_a_pause_with_a_distinct_code_and_a_hint(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """-m that leads to an approval pause: the question is shown readably, exit code 3,
    and stderr says how to answer; -m approve on the paused thread resumes it."""
    code, text = run("chat", f"{module}:careful", "--thread", "h", "-m", "mail bob")
    err = capsys.readouterr().err
    assert code == 3
    assert "waiting for your decision on 1 tool call:" in text
    assert '1. send_email({"to": "bob"})' in text and "why: mail leaves the company" in text
    assert "approve | reject <reason> | edit <json arguments>" in text
    assert "thread 'h' is waiting for a human" in err
    assert f"graphagent chat {module}:careful --thread h -m '<answer>'" in err
    code, text = run("chat", f"{module}:careful", "--thread", "h", "-m", "approve")
    assert code == 0, capsys.readouterr().err
    assert "[send_email] sent to bob" in text and "Done: mailed bob." in text


def test_chat_again_on_a_paused_thread_repeats_the_question_and_takes_reject(
    module: str,
) -> None:
    """A new session on a paused thread shows the question first; 'reject <reason>'
    resumes with the reason (the tool does not run), then the prompt is 'you>' again."""
    assert run("chat", f"{module}:careful", "--thread", "r", "-m", "mail bob")[0] == 3
    prompts, read = typed_lines("reject not today", "")
    code, text = run("chat", f"{module}:careful", "--thread", "r", read=read)
    assert code == 0
    question = text.index("waiting for your decision")
    assert question < text.index("careful>")  # shown before anything is sent
    assert prompts[:2] == ["answer> ", "you> "]
    assert "[send_email] The user rejected this call: not today" in text
    assert "sent to bob" not in text


def test_chat_edit_and_answers_that_do_not_fit(module: str) -> None:
    """'edit <json>' runs the call with new arguments; an answer that fits no form is
    explained and asked again, not sent."""
    assert run("chat", f"{module}:careful", "--thread", "e", "-m", "mail bob")[0] == 3
    prompts, read = typed_lines("maybe", "edit {not json", 'edit ["x"]', 'edit {"to": "alice"}')
    code, text = run("chat", f"{module}:careful", "--thread", "e", read=read)
    assert code == 0
    assert prompts[:4] == ["answer> "] * 4
    assert "not an answer to a tool approval" in text
    assert "edit takes the new arguments as JSON" in text
    assert "edit takes a JSON object of arguments" in text
    assert "[send_email] sent to alice" in text and "sent to bob" not in text


def test_chat_several_calls_and_raw_json(module: str) -> None:
    """Two calls waiting: 'approve' approves both; 'edit' asks for a JSON list; a JSON
    list of decisions is taken as is."""
    code, text = run("chat", f"{module}:bulk", "--thread", "b", "-m", "mail both")
    assert code == 3 and "2 tool calls" in text and "2. send_many" in text
    decisions = '[{"type": "approve"}, {"type": "reject", "reason": "ben left"}]'
    _, read = typed_lines('edit {"to": "x"}', decisions)
    code, text = run("chat", f"{module}:bulk", "--thread", "b", read=read)
    assert code == 0 and "edit changes one call, and 2 are waiting" in text
    assert "[send_many] sent to ann" in text and "rejected this call: ben left" in text
    code, text = run("chat", f"{module}:make_bulk", "--thread", "b2", "-m", "go", "-m", "approve")
    assert code == 0 and "sent to ann" in text and "sent to ben" in text


def test_chat_plain_questions_take_text(module: str) -> None:
    """A question that is not a tool approval (interrupt() in a tool) is shown as it is
    and answered with plain text or JSON."""
    code, text = run("chat", f"{module}:asks", "--thread", "q", "-m", "refund me")
    assert code == 3 and "waiting for your answer (from tools): Refund 40 EUR?" in text
    code, text = run("chat", f"{module}:asks", "--thread", "q", "-m", "yes, go ahead")
    assert code == 0 and "[refund] refund answer: yes, go ahead" in text


def test_chat_model_errors_print_on_their_own_line_and_the_session_goes_on(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing model call: one error line (on stderr, after the partial line is
    ended), and the next message is answered in the same session; with -m, exit 2."""
    prompts, read = typed_lines("fail", "hello")
    code, text = run("chat", f"{module}:flaky", "--thread", "f", read=read)
    err = capsys.readouterr().err
    assert code == 0 and prompts == ["you> ", "you> ", "you> "]
    assert "flaky> ok: hello\n" in text and text.endswith("\n")
    assert [line for line in text.splitlines() if line.startswith("flaky>")] == ["flaky> ok: hello"]
    assert err == "graphagent: error: http://llm.local answered HTTP 503: overloaded\n"
    code, text = run("chat", f"{module}:flaky", "--thread", "f2", "-m", "fail", "-m", "hi")
    assert code == 2 and "ok: hi" not in text
    assert capsys.readouterr().err.count("\n") == 1


class Terminal(io.StringIO):
    """Output that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_chat_on_a_terminal_shows_a_status_line_while_tools_run(module: str) -> None:
    """On a TTY the chat draws '⏳ ... running slow_lookup (n s)' in place while the tool
    runs, and erases it before the tool's result and the answer are written."""
    out = Terminal()
    code = main(["chat", f"{module}:looker", "--thread", "s", "-m", "look"], out=out)
    text = out.getvalue()
    assert code == 0
    assert "\r\x1b[2K⏳ looker · running slow_lookup (" in text
    erased = text.rindex("\r\x1b[2K")
    assert "⏳" not in text[erased + 4 :]  # nothing drawn after the last erase
    assert text[erased + 4 :].strip().endswith("looker> The value is there.")
    assert "  [slow_lookup] value of a\n" in text
    for segment in text.split("\r\x1b[2K"):
        # what is drawn between two erasures: the status alone, or conversation alone
        assert not ("⏳" in segment and ("looker>" in segment or "[slow_lookup]" in segment))


def test_chat_through_the_console_entry(module: str, tmp_path: Path) -> None:
    """The real command: exit code 3 at a pause, 0 after the answer, one process each."""

    def command(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "graphagent", "chat", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )

    db = ["--db", str(tmp_path / "t.sqlite")]
    paused = command(f"{module}:make_stateless_careful", "--thread", "x", *db, "-m", "mail bob")
    assert paused.returncode == 3, paused.stderr
    assert "why: mail leaves the company" in paused.stdout
    assert "waiting for a human" in paused.stderr
    done = command(f"{module}:make_stateless_careful", "--thread", "x", *db, "-m", "approve")
    assert done.returncode == 0, done.stderr
    assert "waiting for your decision" in done.stdout  # the question, repeated first
    assert "sent to bob" in done.stdout


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
    assert len(run("threads", "history", "a", "--db", db, "--limit", "1")[1].splitlines()) == 2

    err = fails("threads", "delete", "zzz", "--db", db)
    assert "no thread 'zzz'" in err and "nothing deleted" in err
    err = fails("threads", "list", "a", "--db", db)
    assert "takes no thread id" in err and "graphagent threads show a" in err
    with pytest.raises(SystemExit) as exited:  # argparse's own check: still one line
        main(["threads", "history", "--db", db])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1
    assert "the following arguments are required: thread" in err
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


def test_nothing_below_the_command_line_imports_it() -> None:
    """The cli package sits on top: no other graphagent or checkpoint module imports it
    (``__main__`` excepted, whose job is to run it)."""
    import re

    import checkpoint
    import graphagent

    roots = [Path(graphagent.__file__).parent, Path(checkpoint.__file__).parent]
    cli_dir = roots[0] / "cli"
    upward = re.compile(
        r"^\s*(from graphagent\.cli\b|import graphagent\.cli\b|from graphagent "
        r"import cli\b|from \.+cli\b)",
        re.M,
    )
    offenders = [
        str(path)
        for root in roots
        for path in root.rglob("*.py")
        if cli_dir not in path.parents
        and path.name != "__main__.py"
        and upward.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert not (roots[0] / "_chat.py").exists() and not (roots[0] / "_mcp_cli.py").exists()
