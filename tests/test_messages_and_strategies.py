"""Messages, add_messages and the key strategies (including the append fast path)."""

from __future__ import annotations

import operator

import pytest

from graphagent.graph import AppendStrategy, MergeStrategy, ReplaceStrategy
from graphagent.graph._strategies import MISSING, as_strategy
from graphagent.messages import (
    AssistantMessage,
    RemoveMessage,
    SystemMessage,
    UserMessage,
    add_messages,
    coerce_message,
)


def test_messages_have_ids_text_and_are_immutable() -> None:
    """Every message gets an id and a .text; messages are frozen."""
    a, b = UserMessage("hi"), UserMessage("hi")
    assert a.id != b.id and a.text == "hi" and a.role == "user"
    with pytest.raises(Exception, match="frozen"):
        a.content = "changed"  # type: ignore[misc]


def test_add_messages_replace_remove_append() -> None:
    """Same id replaces in place, RemoveMessage deletes, others append."""
    s, u = SystemMessage("sys"), UserMessage("q")
    history = add_messages([], [s, u])
    edited = UserMessage("q2", id=u.id)
    history = add_messages(history, [edited, AssistantMessage("a")])
    assert [m.text for m in history] == ["sys", "q2", "a"]
    history = add_messages(history, RemoveMessage(s.id))
    assert [m.text for m in history] == ["q2", "a"]
    with pytest.raises(ValueError, match="not in the list"):
        add_messages(history, RemoveMessage("ghost"))


def test_remove_then_re_add_same_id() -> None:
    """Removing and re-adding an id in one update keeps only the new copy, at the end."""
    u = UserMessage("old")
    history = add_messages(
        [u, AssistantMessage("x")], [RemoveMessage(u.id), UserMessage("new", id=u.id)]
    )
    assert [m.text for m in history] == ["x", "new"]


def test_coerce_message() -> None:
    """Strings become user messages; role dicts become their class; others are refused."""
    assert isinstance(coerce_message("hi"), UserMessage)
    assert isinstance(coerce_message({"role": "assistant", "content": "x"}), AssistantMessage)
    with pytest.raises(TypeError, match="cannot use int"):
        coerce_message(3)


def test_append_reports_pure_appends_and_resets() -> None:
    """The change is ('append', items) for new items and ('reset', all) for rewrites."""
    strat = AppendStrategy()
    u = UserMessage("a")
    merged, change = strat.merge_change(MISSING, [u])
    assert merged == [u] and change == ("append", [u])
    m2, change2 = strat.merge_change(merged, AssistantMessage("b"))
    assert change2[0] == "append" and len(change2[1]) == 1
    m3, change3 = strat.merge_change(m2, UserMessage("A", id=u.id))
    assert change3[0] == "reset" and [m.text for m in m3] == ["A", "b"]
    m4, change4 = strat.merge_change(m3, RemoveMessage(u.id))
    assert change4 == ("reset", m4) and [m.text for m in m4] == ["b"]
    assert merged == [u]  # inputs are never modified


def test_append_detects_id_collision_across_forks() -> None:
    """Two forks of one list sharing the id index still detect replacements correctly."""
    strat = AppendStrategy()
    base, _ = strat.merge_change(MISSING, [UserMessage("root")])
    x = UserMessage("x")
    left, _ = strat.merge_change(base, [x])
    right, _ = strat.merge_change(base, [UserMessage("y")])
    again, change = strat.merge_change(left, [UserMessage("x2", id=x.id)])
    assert change[0] == "reset" and [m.text for m in again] == ["root", "x2"]
    more, change = strat.merge_change(right, [UserMessage("x-in-right", id=x.id)])
    assert change[0] == "append" and [m.text for m in more] == ["root", "y", "x-in-right"]


def test_plain_items_append() -> None:
    """Non-message items just append; strings are single items."""
    assert AppendStrategy().merge(["a"], "bc") == ["a", "bc"]
    assert AppendStrategy().merge([1], (2, 3)) == [1, 2, 3]


def test_other_strategies() -> None:
    """Replace replaces, Merge merges dicts, callables reduce from a typed start."""
    assert ReplaceStrategy().merge(1, 2) == 2
    assert MergeStrategy().merge({"a": 1}, {"a": 2, "b": 3}) == {"a": 2, "b": 3}
    with pytest.raises(TypeError, match="takes a dict"):
        MergeStrategy().merge({}, [1])
    add = as_strategy(operator.add, list[int])
    assert add.merge(MISSING, [1]) == [1]
    assert as_strategy(operator.add).merge(MISSING, 5) == 5
    with pytest.raises(TypeError, match="not a key strategy"):
        as_strategy(42)
