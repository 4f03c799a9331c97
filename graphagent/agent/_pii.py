"""``PIIDetectionHook``: find personal data in what the model is sent and says, and
redact, mask, hash or block it (Spring AI Alibaba's ``PIIDetectionHook``).

The hook rewrites the thread's messages in place (same ids), so what is stored holds
the redacted text too, never the original.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from graphagent.agent._hooks import ModelHook
from graphagent.agent._record import AgentRecord
from graphagent.config import RunnableConfig
from graphagent.errors import PIIDetectionError, UserError
from graphagent.graph import OverAllState
from graphagent.messages import AssistantMessage, Message, ToolResponseMessage, UserMessage

__all__ = ["PII_DETECTORS", "PIIDetectionHook", "PIIMatch", "regex_detector"]

Strategy = Literal["redact", "mask", "hash", "block"]


@dataclass(frozen=True)
class PIIMatch:
    """One piece of personal data found in a text.

    Attributes:
        kind: what it is (``"email"``, ``"credit_card"``, a custom name, ...).
        value: the text found.
        start: where it starts in the text.
        end: where it ends (exclusive).
    """

    kind: str
    value: str
    start: int
    end: int


Detector = Callable[[str], Sequence[PIIMatch]]
"""``text -> matches``: finds one kind of personal data."""


def regex_detector(kind: str, pattern: str | re.Pattern[str]) -> Detector:
    """A detector that reports every match of ``pattern`` as ``kind``.

    Example:
        >>> phone = regex_detector("phone", r"\\b1[3-9]\\d{9}\\b")
        >>> [m.value for m in phone("call 13812345678 now")]
        ['13812345678']
    """
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern

    def detect(text: str) -> list[PIIMatch]:
        return [PIIMatch(kind, m.group(), m.start(), m.end()) for m in compiled.finditer(text)]

    return detect


def _luhn(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")


def _cards(text: str) -> list[PIIMatch]:
    # only numbers that pass the Luhn check: order numbers and phone numbers do not
    return [
        PIIMatch("credit_card", m.group(), m.start(), m.end())
        for m in _CARD.finditer(text)
        if 13 <= sum(c.isdigit() for c in m.group()) <= 19 and _luhn(m.group())
    ]


def _ips(text: str) -> list[PIIMatch]:
    found = []
    for m in _IPV4.finditer(text):
        try:
            ipaddress.IPv4Address(m.group())
        except ValueError:
            continue  # 999.1.1.1 is not an address
        found.append(PIIMatch("ip", m.group(), m.start(), m.end()))
    return found


PII_DETECTORS: dict[str, Detector] = {
    "email": regex_detector("email", r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
    "credit_card": _cards,
    "ip": _ips,
    "mac_address": regex_detector("mac_address", r"\b(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\b"),
    "url": regex_detector("url", r"\bhttps?://[^\s<>\"']+"),
    # international numbers with a +country code, or 10-11 digit national numbers
    "phone": regex_detector(
        "phone", r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?)?\d{3,4}[ .-]?\d{3,4}(?!\w)"
    ),
}
"""The built-in detectors, by kind."""


class PIIDetectionHook(ModelHook):
    """Find one kind of personal data and redact, mask, hash or block it.

    Before each model call it checks the conversation (the user's messages; with
    ``apply_to_tool_results`` the tools' results; with ``apply_to_output`` the model's
    earlier answers); after each model call (with ``apply_to_output``) the new answer.
    What it changes is changed in the thread itself, so the original never reaches the
    model nor the saver. Strategies:

    - ``"redact"``: ``[REDACTED_EMAIL]``;
    - ``"mask"``: all but the last 4 characters as ``*``;
    - ``"hash"``: ``<email_hash:1a2b3c4d>`` (the same value hashes the same, so the model
      can still tell two addresses apart);
    - ``"block"``: raise :class:`~graphagent.errors.PIIDetectionError` (naming the kind,
      never the data).

    Args:
        pii_type: ``"email"``, ``"credit_card"`` (Luhn-checked), ``"ip"``,
            ``"mac_address"``, ``"url"``, ``"phone"``, or your own name with ``detector``.
        strategy: what to do with what is found.
        detector: a regex (str) or a function ``text -> [PIIMatch]`` (required for a
            kind that is not built in).
        apply_to_input: check the user's messages.
        apply_to_output: check the model's answers.
        apply_to_tool_results: check the tools' results.
        name: the hook's node name (default ``pii_<type>``).

    Example:
        >>> from graphagent.agent import ReactAgent
        >>> from graphagent.models import FunctionChatModel
        >>> model = FunctionChatModel(lambda messages, tools: "Heard: " + messages[-1].text)
        >>> agent = ReactAgent(name="a", model=model, hooks=[PIIDetectionHook("email")])
        >>> agent.call("Mail me at ada@example.com").text
        'Heard: Mail me at [REDACTED_EMAIL]'
    """

    def __init__(
        self,
        pii_type: str,
        *,
        strategy: Strategy = "redact",
        detector: str | re.Pattern[str] | Detector | None = None,
        apply_to_input: bool = True,
        apply_to_output: bool = False,
        apply_to_tool_results: bool = False,
        name: str | None = None,
    ) -> None:
        if strategy not in ("redact", "mask", "hash", "block"):
            raise UserError(
                f"PIIDetectionHook strategy {strategy!r}: use 'redact', 'mask', 'hash' or 'block'"
            )
        if isinstance(detector, (str, re.Pattern)):
            detector = regex_detector(pii_type, detector)
        if detector is None:
            detector = PII_DETECTORS.get(pii_type)
            if detector is None:
                raise UserError(
                    f"no built-in detector for {pii_type!r} (built in: "
                    f"{', '.join(PII_DETECTORS)}); pass detector=r'regex' or a function"
                )
        self.pii_type = pii_type
        self.strategy = strategy
        self.detector: Detector = detector
        self.apply_to_input = apply_to_input
        self.apply_to_output = apply_to_output
        self.apply_to_tool_results = apply_to_tool_results
        self._name = name or f"pii_{re.sub(r'[^a-z0-9_]', '_', pii_type.lower())}"

    def points(self) -> list[str]:
        """``before_model`` always; ``after_model`` when it checks the model's answers."""
        return ["before_model", "after_model"] if self.apply_to_output else ["before_model"]

    # -- text ---------------------------------------------------------------------------

    def _replacement(self, value: str) -> str:
        if self.strategy == "mask":
            return "****" if len(value) <= 4 else "*" * (len(value) - 4) + value[-4:]
        if self.strategy == "hash":
            digest = hashlib.sha256(value.encode()).hexdigest()[:8]
            return f"<{self.pii_type.lower()}_hash:{digest}>"
        return f"[REDACTED_{self.pii_type.upper()}]"

    def process(self, text: str) -> str:
        """``text`` with what the detector finds replaced (or blocked).

        Raises:
            PIIDetectionError: the strategy is ``"block"`` and something was found.
        """
        matches = sorted(self.detector(text), key=lambda m: m.start)
        if not matches:
            return text
        if self.strategy == "block":
            raise PIIDetectionError(
                f"{len(matches)} {self.pii_type} value(s) found in a message; the "
                f"PIIDetectionHook {self.name!r} blocks them (strategy='block')",
                pii_types=(self.pii_type,),
            )
        out, last = [], 0
        for m in matches:
            if m.start < last:
                continue  # overlapping matches: the first one covers it
            out.append(text[last : m.start])
            out.append(self._replacement(m.value))
            last = m.end
        out.append(text[last:])
        return "".join(out)

    # -- messages -------------------------------------------------------------------------

    def _checks(self, message: Message) -> bool:
        if isinstance(message, UserMessage):
            return self.apply_to_input
        if isinstance(message, AssistantMessage):
            return self.apply_to_output
        if isinstance(message, ToolResponseMessage):
            return self.apply_to_tool_results
        return False

    def _cleaned(self, message: Message) -> Message | None:
        """The message with its text processed, or ``None`` if nothing changed."""
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content:
            return None
        processed = self.process(content)
        if processed == content:
            return None
        return message.model_copy(update={"content": processed})

    def _rewrite(self, messages: Sequence[Message]) -> dict[str, Any] | None:
        changed = []
        for message in messages:
            if self._checks(message):
                cleaned = self._cleaned(message)
                if cleaned is not None:
                    changed.append(cleaned)  # same id: it replaces the original
        return {"messages": changed} if changed else None

    def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        """Process the conversation the model is about to be sent: all of it on a run's
        first model call (a thread may predate the hook), then what came after the
        model's last answer (earlier messages were processed on earlier calls)."""
        messages = state.get("messages", ())
        if AgentRecord.of(state).run_model_calls:
            for i in range(len(messages) - 1, -1, -1):
                if isinstance(messages[i], AssistantMessage):
                    messages = messages[i + 1 :]
                    break
        return self._rewrite(messages)

    def after_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        """Process the model's new answer."""
        messages = state.get("messages", ())
        if messages and isinstance(messages[-1], AssistantMessage):
            return self._rewrite(messages[-1:])
        return None
