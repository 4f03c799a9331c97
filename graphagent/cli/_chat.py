"""``graphagent chat``: a conversation with an agent on a thread, in the terminal.

The loop reads a line, streams the agent's answer, and at a human-in-the-loop pause
shows the question and reads the answer: ``approve``, ``reject <reason>``,
``edit <json>`` or any JSON (plain text for questions that are not tool approvals).
A failed turn (a model that is down, a wrong answer shape) is reported on its own line
and the session goes on.
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from graphagent._internal.answers import ANSWER_HELP, approval_requests, parse_answer
from graphagent.cli._common import CliError, load_object
from graphagent.cli._stores import (
    add_store_flags,
    default_saver,
    in_memory,
    saver_name,
    stored_saver,
)
from graphagent.errors import GraphAgentError, ModelConfigError
from graphagent.graph import Command, CompiledGraph, Interrupt
from graphagent.observability import status_line

__all__ = ["PAUSED", "Chat", "add_chat_command", "describe", "parse_answer"]

PAUSED = 3
"""Exit code of ``chat -m`` when the thread waits for a human."""

# the words a person answers a pause with are shared with MCP's ask_<agent> resume
HELP = ANSWER_HELP
_requests = approval_requests


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def describe(question: Interrupt) -> list[str]:
    """The lines that show a pending question to a person."""
    requests = _requests(question.value)
    if requests is None:
        return [f"  waiting for your answer (from {question.node}): {_compact(question.value)}"]
    count = len(requests)
    lines = [f"  waiting for your decision on {count} tool call{'s' if count > 1 else ''}:"]
    for n, request in enumerate(requests, 1):
        lines.append(f"    {n}. {request.get('name')}({_compact(request.get('arguments', {}))})")
        if request.get("description"):
            lines.append(f"       why: {request['description']}")
    lines.append(f"  answer: {HELP}")
    return lines


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


class Chat:
    """One chat session: the agent, its thread, and where text goes."""

    def __init__(
        self,
        agent: Any,
        thread: str,
        out: TextIO,
        read: Callable[[str], str],
        err: TextIO | None = None,
        again: str = "graphagent chat ...",
    ) -> None:
        self.agent = agent
        self.again = again
        self.thread = thread
        self.out = out
        self.err = err or sys.stderr
        self.read = read
        self.scripted = False

    def pending(self) -> tuple[Interrupt, ...]:
        """The questions the thread waits on."""
        return tuple(self.agent.get_state(thread_id=self.thread).interrupts)

    def show(self, questions: Sequence[Interrupt]) -> None:
        """Print each pending question."""
        for question in questions:
            for line in describe(question):
                print(line, file=self.out)

    def turn(self, payload: Any) -> bool:
        """Send ``payload``, stream the answer; ``False`` if the turn failed (reported)."""
        if not _is_tty(self.out):
            return self._turn(payload, self.out.write, lambda hidden: None)
        # on a terminal, a status line says which tool runs (and for how long) while
        # the answer is not being written
        with status_line(self.out) as status:
            return self._turn(payload, status.write, status.hide)

    def _turn(
        self, payload: Any, write: Callable[[str], Any], hide: Callable[[bool], None]
    ) -> bool:
        name, out = self.agent.name, self.out
        mid_line = False  # the agent's name is written with its first words, not before
        thinking = False  # the model's reasoning is written apart, as "name (thinking)> "
        try:
            for chunk, _info in self.agent.stream(payload, thread_id=self.thread, mode="messages"):
                thought = getattr(chunk, "reasoning", "")
                if getattr(chunk, "role", None) == "tool":
                    write(f"{chr(10) if mid_line else ''}  [{chunk.name}] {chunk.text}\n")
                    mid_line = thinking = False
                elif thought:
                    head = "" if thinking else f"{chr(10) if mid_line else ''}{name} (thinking)> "
                    write(head + thought)
                    mid_line = thinking = True
                elif chunk.text:
                    if thinking:
                        write("\n")
                        mid_line = thinking = False
                    write(chunk.text if mid_line else f"{name}> {chunk.text}")
                    mid_line = True
                hide(mid_line)
                out.flush()
        except ModelConfigError:
            hide(True)
            raise  # every later turn would fail the same way: the command ends (exit 2)
        except GraphAgentError as exc:
            hide(True)
            if mid_line:
                write("\n")
            out.flush()
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(f"graphagent: error: {message}", file=self.err)
            self.err.flush()
            return False
        hide(True)
        if mid_line:
            write("\n")
        return True

    def answer(self, questions: Sequence[Interrupt], texts: Callable[[], str]) -> Command | None:
        """Read an answer to each question; the resume command (``None``: an empty line).

        Raises:
            ValueError: a scripted answer (``-m``) that does not fit; typed answers that
                do not fit are explained and asked again.
        """
        answers: dict[str, Any] = {}
        for question in questions:
            while True:
                text = texts()
                if not text.strip():
                    return None
                try:
                    answers[question.id] = parse_answer(text, question)
                    break
                except ValueError as exc:
                    if self.scripted:
                        raise
                    print(f"  {exc}", file=self.out)
        if len(questions) == 1:
            return Command(resume=answers[questions[0].id])
        return Command(resume=answers)

    def run(self, messages: list[str] | None) -> int:
        """The session: typed lines, or ``messages`` (``-m``) then exit. Returns the exit
        code: 0, 2 when a scripted turn failed, :data:`PAUSED` when ``-m`` leaves the
        thread waiting for a human."""
        self.scripted = messages is not None

        def texts() -> str:
            if messages is None:
                return self.read("answer> " if pending else "you> ")
            if not messages:
                raise EOFError
            return messages.pop(0)

        pending = self.pending()
        self.show(pending)
        while True:
            try:
                if pending:
                    payload: Any = self.answer(pending, texts)
                    if payload is None:
                        continue
                else:
                    payload = texts()
                    if not payload.strip():
                        continue
            except EOFError:
                if messages is None:
                    print(file=self.out)
                    return 0
                return self._paused(pending) if pending else 0
            except ValueError as exc:  # a scripted answer that does not fit
                print(f"graphagent: error: {exc}", file=self.err)
                return 2
            if not self.turn(payload) and self.scripted:
                return 2
            pending = self.pending()
            self.show(pending)

    def _paused(self, pending: Sequence[Interrupt]) -> int:
        print(
            f"graphagent: thread {self.thread!r} is waiting for a human; answer with: "
            f"{self.again} -m '<answer>' (approve, reject <reason>, edit <json>), or "
            "without -m to answer at the prompt",
            file=self.err,
        )
        return PAUSED


def _chat(args: argparse.Namespace, out: TextIO, read: Callable[[str], str]) -> int:
    agent = load_object(args.target)
    if isinstance(agent, CompiledGraph) or not isinstance(
        getattr(agent, "graph", None), CompiledGraph
    ):
        raise CliError(f"{args.target!r} is a {type(agent).__name__}, not an agent; chat needs one")
    new = args.thread is None
    if new:  # a thread of its own, named so that a later chat can continue it
        args.thread = f"chat-{uuid.uuid4().hex[:8]}"
    stored = stored_saver(args, create=True)
    kept = ""  # the line that says where the thread is kept, when no flag said it
    if stored is None and agent.graph.saver is None:
        stored, name = default_saver(args, create=True)
        kept = (
            f"threads: {name} (the default store; --db, --postgres or --redis keep them elsewhere)"
        )
    elif stored is None and in_memory(agent.graph.saver):
        kept = (
            "this agent keeps threads in memory: the conversation ends with this process; "
            "pass --db to keep it"
        )
    elif stored is None:
        kept = f"threads: the agent's own saver, {saver_name(agent.graph.saver)}"
    if stored is not None:
        # a copy: the user's agent object keeps its own saver
        agent = copy.copy(agent)
        agent.graph = agent.graph.with_saver(stored)
    messages: list[str] | None = list(args.message) if args.message else None
    notes = [f"new: --thread {args.thread} continues it"] if new else []
    if not messages:  # -m sends its messages and exits
        notes.append("Ctrl-D to stop")
    about = f" ({'; '.join(notes)})" if notes else ""
    print(f"chatting with {agent.name!r} on thread {args.thread!r}{about}", file=out)
    if kept:
        print(kept, file=out)
    return Chat(agent, args.thread, out, read, again=_chat_again(args)).run(messages)


def _chat_again(args: argparse.Namespace) -> str:
    """The command that continues this chat (URLs stay out: they may hold passwords)."""
    parts = ["graphagent chat", shlex.quote(args.target), "--thread", shlex.quote(args.thread)]
    if args.db:
        parts += ["--db", shlex.quote(args.db)]
    elif args.postgres:
        parts += ["--postgres URL", "--schema", shlex.quote(args.schema)]
    elif args.redis:
        parts += ["--redis URL", "--prefix", shlex.quote(args.prefix)]
    return " ".join(parts)


def add_chat_command(sub: Any) -> None:
    """Add ``chat`` to the ``graphagent`` command's subparsers."""
    chat = sub.add_parser(
        "chat",
        help="chat with an agent on a thread (resumes it)",
        description="Chat with an agent on a thread: a thread that exists is resumed, a "
        "pending question is asked again first. The thread is kept by --db, --postgres or "
        "--redis when given, else by the agent's own saver, else where the demo keeps "
        "threads (Redis when REDIS_URL is set, else $GRAPHAGENT_DB, default "
        ".graphagent/demo.sqlite). Exit codes: 0 done, 2 error, 3 (-m) waiting for a human.",
        epilog="example: graphagent chat graphagent.demo:agent --thread demo-user-42 "
        "-m 'Weather in Oslo?'",
    )
    chat.add_argument("target", help="module:object (an agent, or a factory)")
    chat.add_argument(
        "--thread", "-t", help="thread id to start or resume (default: a new one, named)"
    )
    chat.add_argument(
        "--message", "-m", action="append", help="send this (repeatable), print, exit"
    )
    add_store_flags(chat, verb="keep the thread in")
    chat.set_defaults(run=_chat)
