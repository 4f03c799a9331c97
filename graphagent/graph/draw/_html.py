"""HTML views of a thread for Jupyter: the state card, the approval card, the timeline.

The snapshots are handed in (:class:`~graphagent.graph.draw._common.Shown`), with what
only their listing knows (the keys each changed, message counts); this module does not
import them. Private keys (``__...``) are never shown; long values are cut with "…" and
expand in place.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import pprint
from collections.abc import Mapping, Sequence
from typing import Any

from graphagent.graph._command import Interrupt
from graphagent.graph.draw._common import Shown
from graphagent.graph.draw._formats import svg_img

__all__ = ["changed", "conversation", "history_html", "resume_code", "snapshot_html", "written_by"]

_SHORT = 160  # characters shown before a value is cut and offered to expand
_BOX = (
    'style="font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;'
    'font-size:13px;text-align:left;line-height:1.45"'
)
_TABLE = 'style="border-collapse:collapse;text-align:left;margin:4px 0"'
_TD = 'style="text-align:left;vertical-align:top;padding:2px 10px 2px 0"'
_TH = 'style="text-align:left;padding:2px 10px 2px 0;border-bottom:1px solid #ccc"'
_CODE = (
    'style="display:block;white-space:pre-wrap;background:#f6f8fa;border:1px solid #d0d7de;'
    'border-radius:6px;padding:6px 8px;margin:4px 0;font-size:12px"'
)
esc = html.escape


def _public(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keys a user sees: those not starting with ``__``."""
    return {k: v for k, v in values.items() if not str(k).startswith("__")}


def _when(moment: _dt.datetime | None) -> str:
    """A checkpoint's time with its date, in UTC (``2026-11-23 09:12:03 UTC``)."""
    if moment is None:
        return ""
    return moment.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _expandable(text: str, *, pre: bool = False, limit: int = _SHORT) -> str:
    """``text`` as HTML; past ``limit`` characters it ends in "…" and expands on a click."""
    style = ' style="white-space:pre-wrap;overflow-wrap:anywhere"'
    if len(text) <= limit:
        return f"<span{style}>{esc(text)}</span>"
    tag = "pre" if pre else "div"
    return (
        f'<details style="display:inline-block"><summary style="cursor:pointer">'
        f"<span{style}>{esc(text[:limit].rstrip())}…</span>"
        f' <span style="color:#1565c0;font-size:11px">({len(text):,} chars, show all)</span>'
        f"</summary><{tag}{style}>{esc(text)}</{tag}></details>"
    )


def _value_text(value: Any) -> str:
    return pprint.pformat(value, width=88, compact=True, sort_dicts=False)


def _literal(value: Any) -> str:
    """Python source for ``value`` that pastes back (JSON-like values as Python literals)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return "..."
    return pprint.pformat(value, width=88, sort_dicts=False)


def resume_code(interrupts: Sequence[Interrupt]) -> list[tuple[str, str]]:
    """What to paste to answer ``interrupts``: (what it does, ``Command(resume=...)``) pairs.

    A human-in-the-loop tool approval gets its exact decisions (approve all, reject all,
    edit with the current arguments); any other question gets the shape of the answer.
    """
    if len(interrupts) == 1:
        asked = interrupts[0].value
        requests = asked.get("action_requests") if isinstance(asked, Mapping) else None
        if isinstance(requests, list) and requests:
            ids = [str(r.get("id")) for r in requests if isinstance(r, Mapping)]

            def each(decision: dict[str, Any]) -> str:
                return f"Command(resume={_literal(dict.fromkeys(ids, decision))})"

            edits = {
                str(r.get("id")): {"type": "edit", "arguments": r.get("arguments")}
                for r in requests
                if isinstance(r, Mapping)
            }
            return [
                ("approve", each({"type": "approve"})),
                ("reject, telling the model why", each({"type": "reject", "reason": "..."})),
                ("edit the arguments", f"Command(resume={_literal(edits)})"),
            ]
        return [("answer", "Command(resume=ANSWER)")]
    answers = {i.id: "ANSWER" for i in interrupts}
    text = "{" + ", ".join(f"{k!r}: ANSWER" for k in answers) + "}"
    return [("answer each question by its id", f"Command(resume={text})")]


def _approval(snap: Shown) -> str:
    """The card for a paused thread: what is asked, and exactly how to answer."""
    thread = snap.config.thread_id
    parts = [
        '<div style="border:2px solid #c62828;border-radius:8px;padding:8px 12px;'
        'margin:8px 0;background:#fff8f8">',
        f'<div style="font-weight:600;color:#c62828">waiting for an answer'
        f" &middot; thread <code>{esc(repr(thread))}</code></div>",
    ]
    for i in snap.interrupts:
        asked = i.value
        where = " / ".join(i.path) if i.path else i.node
        parts.append(f'<div style="margin-top:6px">asked by <code>{esc(where)}</code>')
        if len(snap.interrupts) > 1:
            parts.append(f" (id <code>{esc(i.id)}</code>)")
        parts.append(":</div>")
        requests = asked.get("action_requests") if isinstance(asked, Mapping) else None
        if isinstance(requests, list):
            rows = "".join(
                f"<tr><td {_TD}><b>{esc(str(r.get('name', '')))}</b></td>"
                f"<td {_TD}><code>{_expandable(_value_text(r.get('arguments')))}</code></td>"
                f"<td {_TD}>{esc(str(r.get('description', '')))}</td></tr>"
                for r in requests
                if isinstance(r, Mapping)
            )
            parts.append(
                f"<table {_TABLE}><tr><th {_TH}>tool</th><th {_TH}>arguments</th>"
                f"<th {_TH}>why it needs approval</th></tr>{rows}</table>"
            )
        elif isinstance(asked, str):
            parts.append(f'<div style="font-weight:600">{_expandable(asked)}</div>')
        elif isinstance(asked, Mapping) and isinstance(asked.get("question"), str):
            rest = {k: v for k, v in asked.items() if k != "question"}
            parts.append(f'<div style="font-weight:600">{_expandable(asked["question"])}</div>')
            if rest:
                parts.append(f"<code>{_expandable(_value_text(rest), pre=True)}</code>")
        else:
            parts.append(f"<code>{_expandable(_value_text(asked), pre=True)}</code>")
    parts.append(
        f'<div style="margin-top:8px">resume it with <code>invoke</code>, <code>call</code> '
        f"or <code>stream</code> on thread <code>{esc(repr(thread))}</code>, "
        f"passing one of these as the input "
        f"(<code>from graphagent.graph import Command</code>):</div>"
    )
    for what, code in resume_code(snap.interrupts):
        parts.append(
            f"<div style='margin-top:4px'>{esc(what)}:</div><code {_CODE}>{esc(code)}</code>"
        )
    parts.append("</div>")
    return "".join(parts)


def _breakpoint(snap: Shown) -> str:
    """The card for a run paused at a breakpoint: what runs next, and how to go on."""
    thread = snap.config.thread_id
    nxt = ", ".join(snap.next) or "-"
    code = "invoke(None, {'thread_id': " + repr(thread) + "})"
    return (
        '<div style="border:2px solid #ef6c00;border-radius:8px;padding:8px 12px;'
        'margin:8px 0;background:#fffaf3">'
        f'<div style="font-weight:600;color:#ef6c00">paused at a breakpoint, before '
        f"<code>{esc(nxt)}</code> &middot; thread <code>{esc(repr(thread))}</code></div>"
        '<div style="margin-top:6px">look at the state, change it with <code>update_state'
        "</code> if you like, then continue the run with <code>None</code> as the input:</div>"
        f"<code {_CODE}>{esc(code)}</code></div>"
    )


def conversation(snap: Shown) -> list[tuple[str, str, list[str]]]:
    """The snapshot's messages as (role, text, tool calls as ``name(arguments)``) rows.

    A tool result's text starts with the tool's name.
    """
    rows: list[tuple[str, str, list[str]]] = []
    for message in snap.values.get("messages", []) or []:
        role = str(getattr(message, "role", type(message).__name__))
        text = str(getattr(message, "content", message))
        calls = [f"{c.name}({c.arguments})" for c in getattr(message, "tool_calls", ()) or ()]
        if role == "tool":
            text = f"{getattr(message, 'name', '')}: {text}"
        rows.append((role, text, calls))
    return rows


def written_by(snap: Shown) -> str:
    """What wrote the checkpoint: its nodes (``"a, b"``), else its source (``"input"``)."""
    return ", ".join(map(str, snap.metadata.get("nodes", ()))) or str(
        snap.metadata.get("source", "")
    )


def _thought_and_parts(message: Any) -> tuple[str, str]:
    """A message's reasoning (folded, above its text) and its images as thumbnails and
    files as names (below it), as HTML."""
    thought = getattr(message, "reasoning", "") or ""
    above = (
        '<details style="color:#777"><summary style="cursor:pointer;font-style:italic">'
        f"thinking ({len(thought):,} chars)</summary>"
        f'<div style="white-space:pre-wrap">{esc(thought)}</div></details>'
        if thought
        else ""
    )
    below: list[str] = []
    for part in getattr(message, "parts", ()) or ():
        if getattr(part, "kind", "") == "image":
            below.append(
                f'<img src="{esc(part.data_url, quote=True)}" alt="image" '
                'style="max-height:96px;max-width:160px;margin:4px 6px 0 0;'
                'border:1px solid #d0d7de;border-radius:4px">'
            )
        else:
            label = getattr(part, "name", None) or part.url or part.mime_type
            below.append(f'<div style="color:#555">&#128206; {esc(str(label))}</div>')
    return above, "".join(below)


def _messages(snap: Shown) -> str:
    rows: list[str] = []
    listed = list(snap.values.get("messages", []) or [])
    for message, (role, text, calls) in zip(listed, conversation(snap), strict=True):
        extra = "".join(f'<div style="color:#6a1b9a">&rarr; {_expandable(c)}</div>' for c in calls)
        above, below = _thought_and_parts(message)
        rows.append(
            f'<tr><td {_TD}><b style="color:#555">{esc(role)}</b></td>'
            f"<td {_TD}>{above}{_expandable(text) if text else ''}{below}{extra}</td></tr>"
        )
    return f"<table {_TABLE}>{''.join(rows)}</table>" if rows else ""


def snapshot_html(snap: Shown, drawing: str | None = None) -> str:
    """A state card: where the thread stands, any question waiting, the conversation, the
    other keys, and (``drawing``) the run drawn over the graph."""
    thread = snap.config.thread_id
    if snap.checkpoint_id is None:
        return (
            f"<div {_BOX}><b>no such thread</b> <code>{esc(repr(thread))}</code>: nothing is "
            "saved under this id yet (a thread starts with its first run)</div>"
        )
    nxt = ", ".join(snap.next) or ("nothing (finished)" if not snap.interrupts else "-")
    head = (
        f"<b>thread <code>{esc(repr(thread))}</code> &middot; step {snap.step}</b>"
        f" &middot; written by <code>{esc(written_by(snap))}</code>"
        f" &middot; next: <code>{esc(nxt)}</code>"
        f'<div style="color:#666;font-size:12px">{esc(_when(snap.created_at))} &middot; '
        f"checkpoint <code>{esc(str(snap.checkpoint_id))}</code></div>"
    )
    parts = [f"<div {_BOX}>{head}"]
    if snap.interrupts:
        parts.append(_approval(snap))
    elif snap.at_breakpoint:
        parts.append(_breakpoint(snap))
    parts.append(_messages(snap))
    others = "".join(
        f"<tr><td {_TD}><code>{esc(str(k))}</code></td>"
        f"<td {_TD}><code>{_expandable(_value_text(v))}</code></td></tr>"
        for k, v in _public(snap.values).items()
        if k != "messages"
    )
    if others:
        parts.append(f"<table {_TABLE}>{others}</table>")
    if drawing:
        # an image, not inline <svg>: untrusted notebooks strip inline SVG to loose text
        parts.append(
            '<details open><summary style="cursor:pointer;color:#546e7a">the run on its graph'
            f"</summary>{svg_img(drawing)}</details>"
        )
    parts.append("</div>")
    return "".join(parts)


def changed(snap: Shown, parent: Shown | None, known: list[str] | None = None) -> list[str]:
    """The public keys whose value differs from the parent checkpoint's.

    ``known``: the keys the listing found changed from what it stores (then no state is
    built for the row); ``None`` compares the two states.
    """
    if known is not None:
        return [key for key in known if not str(key).startswith("__")]
    new = _public(snap.values)
    if parent is None:
        return list(new)
    old = _public(parent.values)
    out = []
    for key in dict.fromkeys([*new, *old]):
        a, b = new.get(key, _MISSING), old.get(key, _MISSING)
        if a is b:
            continue
        # appended lists (a conversation) differ in length: no need to compare every item
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) != len(b):
            out.append(key)
            continue
        try:
            same = bool(a == b)
        except Exception:  # a value whose == raises or is not a bool (arrays)
            same = False
        if not same:
            out.append(key)
    return out


_MISSING = object()


def history_html(
    history: Sequence[Shown],
    known: Sequence[list[str] | None],
    counts: Sequence[int] | None,
) -> str:
    """The timeline: one row per checkpoint, newest first, with the keys each step changed.

    ``known``: per row, the keys its listing found changed (``None``: compare states);
    ``counts``: per row, its number of messages (``None``: the thread keeps no messages,
    and the column is left out).
    """
    if not history:
        return f"<div {_BOX}>no checkpoints (no such thread, or nothing saved yet)</div>"
    by_id = {s.checkpoint_id: s for s in history}
    rows: list[str] = []
    for index, snap in enumerate(history):
        source = str(snap.metadata.get("source", ""))
        colour = {"input": "#43a047", "update": "#8e24aa"}.get(source, "#1e88e5")
        waiting = " (waiting for an answer)" if snap.interrupts else ""
        keys = changed(snap, by_id.get(snap.parent_id), known[index])
        cells = [
            f"<b>{snap.step}</b>",
            f'<span style="color:{colour}">&#9679;</span> {esc(written_by(snap))}'
            f'<span style="color:#888"> ({esc(source)})</span>',
            f"<code>{esc(', '.join(keys) or '-')}</code>",
            f"<code>{esc(', '.join(snap.next) or '-')}</code>{waiting}",
        ]
        if counts is not None:
            cells.append(str(counts[index]))
        cells += [
            f'<span style="color:#666">{esc(_when(snap.created_at))}</span>',
            f"<code>{esc(str(snap.checkpoint_id))}</code>",
        ]
        rows.append("<tr>" + "".join(f"<td {_TD}>{c}</td>" for c in cells) + "</tr>")
    titles = ["step", "written by", "changed", "next"]
    titles += ["messages"] if counts is not None else []
    head = "".join(f"<th {_TH}>{h}</th>" for h in [*titles, "time", "checkpoint id"])
    thread = history[0].config.thread_id
    return (
        f"<div {_BOX}><b>thread <code>{esc(repr(thread))}</code>: {len(history)} "
        f"checkpoints</b>, newest first"
        f"<table {_TABLE}><tr>{head}</tr>{''.join(rows)}</table></div>"
    )
