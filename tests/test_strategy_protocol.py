"""The key-strategy protocol is public and whole: ``KeyStrategy`` with defaults for
``merge_change``, ``replaces`` and ``empty``; ``Change`` is one typed NamedTuple; what a
strategy reports is what the checkpoint stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import checkpoint
from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver, CheckpointWrite
from graphagent.errors import InvalidUpdateError
from graphagent.graph import (
    END,
    MISSING,
    START,
    AppendStrategy,
    Change,
    KeyStrategy,
    MergeStrategy,
    ReplaceStrategy,
    StateGraph,
)


class Recording(MemorySaver):
    """Keeps the changes of every write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[dict[str, Change]] = []

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        self.writes.append(dict(write.changes))
        super().put(thread_id, write, expected_head=expected_head)

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        self.writes.extend(dict(w.changes) for w in writes)
        super().put_many(thread_id, writes, expected_head=expected_head)


class Unique(KeyStrategy):
    """A growing list without repeats, reported as appends."""

    def merge(self, old: Any, new: Any) -> Any:
        return self.merge_change(old, new)[0]

    def merge_change(self, old: Any, new: Any) -> tuple[Any, Change]:
        base = [] if old is MISSING else old
        fresh = [x for x in dict.fromkeys(new) if x not in base]
        return [*base, *fresh], Change("append", fresh)


class Maximum(KeyStrategy):
    """Only merge: the defaults do the rest."""

    def merge(self, old: Any, new: Any) -> Any:
        return new if old is MISSING else max(old, new)


def _one_node(schema: Any, node: Any, saver: CheckpointSaver | None = None) -> Any:
    g = StateGraph(schema).add_node("n", node)
    return g.add_edge(START, "n").add_edge("n", END).compile(saver=saver)


def test_change_is_one_typed_named_tuple() -> None:
    """graphagent.graph.Change is checkpoint.Change, a NamedTuple of (kind, value)."""
    assert Change is checkpoint.Change
    change = Change("append", [1])
    assert (change.kind, change.value) == ("append", [1]) and change == ("append", [1])
    assert AppendStrategy().merge_change([0], [1]) == ([0, 1], Change("append", [1]))
    assert isinstance(AppendStrategy().merge_change([0], [1])[1], Change)


def test_builtin_strategies_are_key_strategies_with_the_whole_protocol() -> None:
    """Every built-in strategy is a KeyStrategy with replaces, merge_change and empty."""
    cases = [(ReplaceStrategy(), 1), (AppendStrategy(), [1]), (MergeStrategy(), {"a": 1})]
    for strategy, update in cases:
        assert isinstance(strategy, KeyStrategy)
        assert isinstance(strategy.merge_change(MISSING, update)[1], Change)
    assert ReplaceStrategy().replaces and not AppendStrategy().replaces
    assert (AppendStrategy().empty(), MergeStrategy().empty()) == ([], {})
    assert ReplaceStrategy().empty() is MISSING


def test_defaults_of_a_subclass() -> None:
    """A subclass that writes only merge stores its value whole and has no empty value."""
    assert Maximum().merge_change(3, 5) == (5, Change("set", 5))
    assert not Maximum().replaces and Maximum().empty() is MISSING
    saver = Recording()
    app = _one_node({"best": Maximum()}, lambda s: {"best": 7}, saver)
    assert app.invoke({"best": 9}, {"thread_id": "t"}) == {"best": 9}
    assert saver.writes == [{"best": Change("set", 9)}, {"best": Change("set", 9)}]
    with pytest.raises(KeyError):
        _one_node({"best": Maximum()}, lambda s: {"x": s["best"]}).invoke({})


def test_a_custom_append_change_keeps_checkpoints_o_of_change() -> None:
    """What merge_change reports is what the saver stores: only the appended items."""
    saver = Recording()
    app = _one_node({"seen": Unique()}, lambda s: {"seen": ["a", f"n{len(s['seen'])}"]}, saver)
    for word in ("x", "y", "z"):
        app.invoke({"seen": [word]}, {"thread_id": "t"})
    assert app.get_state({"thread_id": "t"}).values["seen"] == [
        "x",
        "a",
        "n1",
        "y",
        "n4",
        "z",
        "n6",
    ]
    assert saver.writes[-2:] == [
        {"seen": Change("append", ["z"])},
        {"seen": Change("append", ["n6"])},
    ]


def test_replaces_on_a_custom_strategy() -> None:
    """replaces=True skips merge and makes two writes in one step a conflict."""

    class Latest(KeyStrategy):
        replaces = True

        def merge(self, old: Any, new: Any) -> Any:
            raise AssertionError("a replacing strategy is not merged")

    g = (
        StateGraph({"v": Latest()})
        .add_node("a", lambda s: {"v": 1})
        .add_node("b", lambda s: {"v": 2})
    )
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    with pytest.raises(InvalidUpdateError, match="both replaced key 'v'"):
        g.compile().invoke({})
    assert _one_node({"v": Latest()}, lambda s: {"v": 3}).invoke({}) == {"v": 3}


def test_an_object_with_only_merge_still_works() -> None:
    """Duck-typed strategies get the defaults; a merge_change returning a plain tuple is
    stored as a Change."""

    class Concat:
        def merge(self, old: Any, new: Any) -> Any:
            return new if old is MISSING else old + new

    class PlainTuple:
        def merge(self, old: Any, new: Any) -> Any:
            return self.merge_change(old, new)[0]

        def merge_change(self, old: Any, new: Any) -> tuple[Any, Any]:
            base = [] if old is MISSING else old
            return [*base, *new], ("append", list(new))

    saver = Recording()
    app = _one_node({"s": Concat(), "l": PlainTuple()}, lambda s: {"s": "!", "l": [2]}, saver)
    assert app.invoke({"s": "hi", "l": [1]}, {"thread_id": "t"}) == {"s": "hi!", "l": [1, 2]}
    assert saver.writes[-1] == {"s": Change("set", "hi!"), "l": Change("append", [2])}
    assert all(isinstance(c, Change) for w in saver.writes for c in w.values())


def test_custom_empty_value_is_read_before_the_first_write() -> None:
    """An overridden empty() is what the key reads as until written."""

    class Counter(KeyStrategy):
        def merge(self, old: Any, new: Any) -> Any:
            return (0 if old is MISSING else old) + new

        def empty(self) -> int:
            return 0

    app = _one_node({"n": Counter()}, lambda s: {"n": s["n"] + 5})
    assert app.invoke({}) == {"n": 5}
