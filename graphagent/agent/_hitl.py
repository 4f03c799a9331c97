"""``HumanInTheLoopHook``: pause before chosen tools run; a human approves, edits or rejects."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from graphagent.agent._hooks import ModelHook
from graphagent.agent._react_tools import pending_tool_calls
from graphagent.agent._record import answer_tool_calls
from graphagent.config import RunnableConfig
from graphagent.errors import UserError
from graphagent.graph import OverAllState, interrupt
from graphagent.messages import ToolCall

__all__ = ["HumanInTheLoopHook"]


class HumanInTheLoopHook(ModelHook):
    """Before listed tools run, pause the run and ask a human.

    The run interrupts with ``{"action_requests": [{"id", "name", "arguments",
    "description"}, ...]}``. Resume the same thread (any process) with
    ``Command(resume={call_id: decision, ...})`` (or a list in call order), where a
    decision is ``{"type": "approve"}``, ``{"type": "edit", "arguments": {...}}`` or
    ``{"type": "reject", "reason": "..."}``; the model sees a rejection's reason.

    Args:
        approval_on: tool name -> why it needs approval (shown to the human).

    Example:
        >>> hitl = HumanInTheLoopHook(approval_on={"send_email": "emails leave the company"})
    """

    def __init__(self, approval_on: Mapping[str, str], *, name: str | None = None) -> None:
        if not approval_on:
            raise UserError("HumanInTheLoopHook needs approval_on={tool_name: why, ...}")
        self.approval_on = dict(approval_on)
        self._name = name or "human_in_the_loop"

    def after_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        """Ask about the listed calls; apply the decisions."""
        last, pending = pending_tool_calls(state.get("messages", []))
        asked = [c for c in pending if c.name in self.approval_on]
        if last is None or not asked:
            return None
        answer = interrupt(
            {
                "action_requests": [
                    {
                        "id": c.id,
                        "name": c.name,
                        "arguments": _args(c),
                        "description": self.approval_on[c.name],
                    }
                    for c in asked
                ]
            }
        )
        decisions = self._decisions(answer, asked)
        calls: list[ToolCall] = []
        answers: dict[str, str] = {}
        edits = False
        for call in last.tool_calls:
            decision = decisions.get(call.id, {"type": "approve"})
            kind = decision.get("type")
            if kind == "edit":
                arguments = decision.get("arguments", {})
                text = arguments if isinstance(arguments, str) else json.dumps(arguments)
                calls.append(call.model_copy(update={"arguments": text}))
                edits = True
                continue
            calls.append(call)
            if kind == "reject":
                reason = decision.get("reason") or "no reason given"
                answers[call.id] = f"The user rejected this call: {reason}"
        # rejected calls are answered, not run: the tools node writes their results in
        # call order with the others
        update = answer_tool_calls(state, answers) if answers else {}
        if edits:
            edited = last.model_copy(update={"tool_calls": tuple(calls)})
            update["messages"] = [edited]
        return update or None

    @staticmethod
    def _decisions(answer: Any, asked: list[ToolCall]) -> dict[str, dict[str, Any]]:
        if isinstance(answer, list):
            if len(answer) != len(asked):
                raise UserError(
                    f"{len(asked)} tool calls await a decision but {len(answer)} were given; "
                    "give one decision per call, in order, or a {call_id: decision} dict"
                )
            answer = {c.id: d for c, d in zip(asked, answer, strict=True)}
        if not isinstance(answer, Mapping):
            raise UserError(
                "resume a human-in-the-loop pause with Command(resume={call_id: {'type': "
                "'approve' | 'edit' | 'reject', ...}}) or a list of decisions"
            )
        missing = [c.id for c in asked if c.id not in answer]
        if missing:
            raise UserError(
                f"no decision for tool call(s) {', '.join(missing)}; every pending call needs "
                "approve, edit or reject"
            )
        out: dict[str, dict[str, Any]] = {}
        for call_id, decision in answer.items():
            d = {"type": decision} if isinstance(decision, str) else dict(decision)
            if d.get("type") not in ("approve", "edit", "reject"):
                raise UserError(
                    f"decision for {call_id} has type {d.get('type')!r}; use approve, edit "
                    "or reject"
                )
            if d["type"] == "edit" and "arguments" not in d:
                raise UserError(f"an edit decision for {call_id} needs 'arguments'")
            out[str(call_id)] = d
        return out


def _args(call: ToolCall) -> Any:
    try:
        return call.args
    except json.JSONDecodeError:
        return call.arguments
