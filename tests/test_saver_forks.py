"""Forks never rewrite the line they branch from (issue 13 item 1), on every saver.

A fork whose first step leaves an append key alone shares the parent's log branch; a
later append on the fork must start a branch of its own instead of extending the
shared one in place, which would overwrite the original line's items.
"""

from __future__ import annotations

import time
from typing import Any

from checkpoint import CheckpointWrite, new_checkpoint_id
from checkpoint.base import CheckpointSaver


def _put(saver: CheckpointSaver, parent: str | None, head: str | None, **changes: Any) -> str:
    w = CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=0,
        changes=changes,
        next=(),
        metadata={},
        created_at=time.time(),
    )
    saver.put("t", w, expected_head=head)
    return w.id


def _log(saver: CheckpointSaver, cid: str) -> list[Any]:
    cp = saver.get("t", cid)
    assert cp is not None
    return list(cp.values["messages"])


def test_fork_that_first_sets_then_appends_keeps_the_original_line(
    saver: CheckpointSaver,
) -> None:
    a = _put(saver, None, None, messages=("append", ["a"]))
    b = _put(saver, a, a, messages=("append", ["reply to a"]))
    c = _put(saver, b, b, messages=("append", ["b"]))
    d = _put(saver, c, c, messages=("append", ["reply to b"]))
    # fork from b: its first step changes only a replace key, so it shares b's branch
    f1 = _put(saver, b, d, topic=("set", "forked"))
    f2 = _put(saver, f1, f1, messages=("append", ["X"]))
    f3 = _put(saver, f2, f2, messages=("append", ["Y"]))
    assert _log(saver, d) == ["a", "reply to a", "b", "reply to b"]
    assert _log(saver, b) == ["a", "reply to a"]
    assert _log(saver, f3) == ["a", "reply to a", "X", "Y"]
    # the original line continues correctly after the fork, too
    d2 = _put(saver, d, f3, messages=("append", ["Z"]))
    assert _log(saver, d2) == ["a", "reply to a", "b", "reply to b", "Z"]
    assert _log(saver, f3) == ["a", "reply to a", "X", "Y"]


def test_fork_of_a_fork_and_back_to_the_first_line(saver: CheckpointSaver) -> None:
    a = _put(saver, None, None, messages=("append", ["a"]), n=("set", 0))
    b = _put(saver, a, a, messages=("append", ["b"]))
    g1 = _put(saver, a, b, n=("set", 1))  # fork 1 from a, sharing a's branch
    h1 = _put(saver, g1, g1, n=("set", 2))  # still no append: shares it further
    h2 = _put(saver, a, h1, n=("set", 3))  # fork 2 from a as well
    h3 = _put(saver, h2, h2, messages=("append", ["h"]))
    h4 = _put(saver, h1, h3, messages=("append", ["g"]))
    assert _log(saver, b) == ["a", "b"]
    assert _log(saver, h3) == ["a", "h"]
    assert _log(saver, h4) == ["a", "g"]
    assert _log(saver, a) == ["a"]
