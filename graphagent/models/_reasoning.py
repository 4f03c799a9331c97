"""A model's thinking, where servers put it: a field beside the content (DeepSeek's and
DashScope's ``reasoning_content``, vLLM's and Ollama's ``reasoning``) or ``<think>`` tags
at the start of the content (Qwen3, DeepSeek-R1 served without a reasoning parser)."""

from __future__ import annotations

from typing import Any

__all__ = ["ThinkSplitter", "reasoning_field", "split_think"]

_OPEN, _CLOSE = "<think>", "</think>"


def reasoning_field(message: dict[str, Any]) -> str:
    """The reasoning text of a chat completions message or delta (``""`` when none)."""
    value = message.get("reasoning_content")
    if not value:
        value = message.get("reasoning")
    return value if isinstance(value, str) else ""


def _partial_suffix(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could begin ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class ThinkSplitter:
    """Splits content that opens with ``<think>...</think>`` into reasoning and answer.

    Fed piece by piece (a stream), it holds back only what could be half a tag.

    Example:
        >>> s = ThinkSplitter()
        >>> s.feed("<think>let me see</thi"), s.feed("nk>\\n\\nParis"), s.flush()
        (('let me see', ''), ('', 'Paris'), ('', ''))
    """

    def __init__(self) -> None:
        self.state = "start"  # start -> think -> after (answer's leading blanks) -> answer
        self.buffer = ""

    def feed(self, text: str) -> tuple[str, str]:
        """``(reasoning, content)`` that this piece makes certain."""
        self.buffer += text
        reasoning = content = ""
        if self.state == "start":
            head = self.buffer.lstrip()
            if not head or (len(head) < len(_OPEN) and _OPEN.startswith(head)):
                return "", ""
            if head.startswith(_OPEN):
                self.state, self.buffer = "think", head[len(_OPEN) :]
            else:
                self.state = "answer"
        if self.state == "think":
            end = self.buffer.find(_CLOSE)
            if end < 0:
                keep = _partial_suffix(self.buffer, _CLOSE)
                cut = len(self.buffer) - keep
                reasoning, self.buffer = self.buffer[:cut], self.buffer[cut:]
                return reasoning, ""
            reasoning = self.buffer[:end]
            self.state, self.buffer = "after", self.buffer[end + len(_CLOSE) :]
        if self.state == "after":
            self.buffer = self.buffer.lstrip()
            if not self.buffer:
                return reasoning, ""
            self.state = "answer"
        content, self.buffer = self.buffer, ""
        return reasoning, content

    def flush(self) -> tuple[str, str]:
        """What is held back, at the end of the answer."""
        rest, self.buffer = self.buffer, ""
        if self.state == "think":
            return rest, ""
        return ("", rest) if self.state in ("start", "answer") else ("", "")


def split_think(text: str) -> tuple[str, str]:
    """``(reasoning, answer)`` of a whole answer (``("", text)`` without think tags)."""
    splitter = ThinkSplitter()
    r1, c1 = splitter.feed(text)
    r2, c2 = splitter.flush()
    return r1 + r2, c1 + c2
