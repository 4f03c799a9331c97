"""The serde reuses its msgpack packers: a failed encode, a nested one and other threads
never see a packer's leftovers."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from checkpoint.errors import SerializationError
from checkpoint.serde import Serde
from graphagent.messages import AssistantMessage, ToolCall


@dataclass
class Point:
    x: int
    y: int


class Unregistered:
    pass


def test_an_encode_that_fails_leaves_no_leftovers() -> None:
    """After a refused value, the next encode gives the same bytes as a fresh serde."""
    serde = Serde()
    serde.register(Point)
    value = {"p": Point(1, 2), "t": (1, (2, 3)), "l": [Point(3, 4)]}
    expected = Serde()
    expected.register(Point)
    for _ in range(3):
        with pytest.raises(SerializationError, match="Unregistered"):
            serde.dumps({"p": Point(1, 2), "bad": [(1, Unregistered())]})
        assert serde.dumps(value) == expected.dumps(value)
        assert serde.loads(serde.dumps(value)) == value


def test_threads_encode_at_once() -> None:
    """Many threads encoding nested values at once each get their own value back."""
    serde = Serde()
    serde.register(Point)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(300):
                value = {"n": n, "i": i, "p": (Point(n, i), [Point(i, n)])}
                assert serde.loads(serde.dumps(value)) == value
        except BaseException as exc:  # handed to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_messages_round_trip_after_large_values() -> None:
    """A large value (its packer is not kept) and then small ones encode correctly."""
    serde = Serde()
    big = "x" * (2 << 20)
    assert serde.loads(serde.dumps({"big": big})) == {"big": big}
    message = AssistantMessage(tool_calls=(ToolCall(id="1", name="f", arguments="{}"),))
    from checkpoint.serde import default_serde

    assert default_serde.loads(default_serde.dumps([message, message])) == [message, message]
