"""A process that imports only ``checkpoint`` reads every thread graphagent stored.

``checkpoint/__init__.py`` promises that any program can read stored threads with it
alone: a support tool, an export job or a migration need not import graphagent (nor
run its import-time registrations) to load the messages and the agent record a
ReactAgent wrote. These tests run such a program in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from checkpoint import RedisSaver, SerializationError, SqliteSaver, serde
from checkpoint.base import CheckpointSaver
from checkpoint.serde import StoredObject
from graphagent.agent import AgentRecord, ReactAgent
from graphagent.agent._record import _STORED
from graphagent.messages import (
    _STORED_FIELDS,
    AssistantMessage,
    ToolCall,
)
from graphagent.models import FakeChatModel
from graphagent.tools import tool

ROOT = Path(__file__).resolve().parent.parent

# the reader: opens the saver named on its command line, prints the head's state as JSON
READER = textwrap.dedent(
    """
    import json, sys
    import checkpoint
    from checkpoint import RedisSaver, SerializationError, SqliteSaver, serde
    kind, where, prefix = sys.argv[1:4]
    if kind == "sqlite":
        saver = SqliteSaver(where)
    else:
        saver = RedisSaver.from_url(where, prefix=prefix)
    cp = saver.get("t")
    history = saver.list("t")
    assert "graphagent" not in sys.modules, sorted(m for m in sys.modules if "graphagent" in m)

    def plain(value):
        if isinstance(value, serde.StoredObject):
            return {"type": value.type, **{k: plain(v) for k, v in value.items()}}
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    again = serde.loads(serde.dumps(cp.values))  # stored again as it was read
    assert again == cp.values
    print(json.dumps({
        "values": plain(cp.values),
        "checkpoints": len(history),
        "copy": serde.dumps(cp.values["messages"]).hex(),
    }))
    """
)


@tool
def add_one(x: int) -> int:
    """Add one to x."""
    return x + 1


def _agent(saver: CheckpointSaver) -> ReactAgent:
    model = FakeChatModel(
        [
            AssistantMessage(
                "adding", tool_calls=[ToolCall(id="c1", name="add_one", arguments='{"x": 1}')]
            ),
            "It is 2.",
        ]
    )
    return ReactAgent(name="adder", model=model, tools=[add_one], saver=saver)


def _expected(value: Any) -> Any:
    """What the reader prints for a value graphagent holds."""
    if isinstance(value, AgentRecord) or type(value) in _STORED_FIELDS:
        name = f"graphagent.{type(value).__name__}"
        if isinstance(value, AgentRecord):
            fields = {f: getattr(value, f) for f in _STORED}
        else:
            fields = {f: getattr(value, f) for f in _STORED_FIELDS[type(value)]}
        return {"type": name, **{k: _expected(v) for k, v in fields.items()}}
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_expected(v) for v in value]
    return value


def _read_alone(kind: str, where: str, prefix: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", READER, kind, where, prefix],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_process_importing_only_checkpoint_reads_a_react_agents_thread(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A fresh interpreter that never imports graphagent loads the messages (tool calls
    included) and the agent record a ReactAgent stored, on SQLite and on Redis; what it
    stores again loads in graphagent as the same messages."""
    if kind == "sqlite":
        where, prefix = str(tmp_path / "threads.sqlite"), ""
        saver: CheckpointSaver = SqliteSaver(where)
    else:
        where = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")
        saver = RedisSaver.from_url(where, prefix=prefix)
    agent = _agent(saver)
    agent.invoke("add one to 1", thread_id="t")
    state = agent.get_state(thread_id="t").values
    read = _read_alone(kind, where, prefix)
    assert read["values"]["messages"] == _expected(state["messages"])
    assert read["values"]["__agent"] == _expected(state["__agent"])
    assert [m["type"] for m in read["values"]["messages"]] == [
        "graphagent.UserMessage",
        "graphagent.AssistantMessage",
        "graphagent.ToolResponseMessage",
        "graphagent.AssistantMessage",
    ]
    assert read["checkpoints"] == len(saver.list("t"))
    assert serde.loads(bytes.fromhex(read["copy"])) == state["messages"]


def test_checkpoint_knows_graphagents_stored_shapes() -> None:
    """The stored names and field orders checkpoint reads are the ones graphagent writes:
    one table each side, held equal here."""
    from checkpoint._library import FIELDS
    from graphagent.graph._control import SEND_FIELDS

    theirs = {f"graphagent.{cls.__name__}": fields for cls, fields in _STORED_FIELDS.items()}
    theirs["graphagent.AgentRecord"] = _STORED
    theirs["graphagent.Send"] = SEND_FIELDS  # the sends a fan-out step keeps due
    assert theirs == FIELDS


def test_a_stored_object_is_a_dict_that_knows_its_type() -> None:
    """StoredObject compares as its fields and its type; an unknown type cannot be stored."""
    a = StoredObject("graphagent.UserMessage", {"content": "hi", "id": "1", "metadata": {}})
    assert a == {"content": "hi", "id": "1", "metadata": {}}
    assert a != StoredObject("graphagent.SystemMessage", dict(a))
    with pytest.raises(SerializationError, match="only the library"):
        serde.dumps(StoredObject("mine.Thing", {}))
