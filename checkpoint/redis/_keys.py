"""Redis key names: the prefix rule, thread id escaping and one thread's keys.

Keys of one thread share the hash tag ``{<prefix>:<escaped thread>}`` so they live in one
cluster slot; see the package docstring for what each key holds.
"""

from __future__ import annotations

import re

__all__ = [
    "Keys",
    "check_prefix",
    "escape_thread_id",
    "glob_escape",
    "thread_of_head_key",
    "unescape_thread_id",
]

_PREFIX_SEPARATORS = ":{}"

_ESCAPE = {"%": "%25", "{": "%7B", "}": "%7D"}
_UNESCAPE = {v: k for k, v in _ESCAPE.items()}
_TO_ESCAPE = re.compile("[%{}\ud800-\udfff]")
_ESCAPED = re.compile("%(?:25|7B|7D|u[0-9A-F]{4})")


def check_prefix(prefix: str) -> str:
    """``prefix``, once known to be a valid key prefix.

    Raises:
        ValueError: it is empty or holds one of ``:{}``, naming the fix.
    """
    if not prefix or any(c in prefix for c in _PREFIX_SEPARATORS):
        # the first ':' inside the hash tag ends the prefix; allowing one in the prefix
        # would let thread 'eu:1' of prefix 'p' and thread '1' of prefix 'p:eu' share keys
        raise ValueError(
            f"invalid key prefix {prefix!r}: it must be non-empty and contain none of "
            f"{' '.join(_PREFIX_SEPARATORS)} (use '-' or '.' to separate tenants, e.g. "
            "'myapp-eu')"
        )
    return prefix


def glob_escape(text: str) -> str:
    """``text`` as a literal inside a Redis ``SCAN MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _escape_one(match: re.Match[str]) -> str:
    c = match.group()
    return _ESCAPE.get(c) or f"%u{ord(c):04X}"


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group()
    return _UNESCAPE.get(code) or chr(int(code[2:], 16))


def escape_thread_id(thread_id: str) -> str:
    """Make any thread id safe inside a hash-tagged key, injectively: ``%``, ``{`` and ``}``
    become ``%25``, ``%7B`` and ``%7D``, and a lone surrogate (which UTF-8 cannot encode)
    becomes ``%uD800``-style text."""
    return _TO_ESCAPE.sub(_escape_one, thread_id)


def unescape_thread_id(escaped: str) -> str:
    """Reverse :func:`escape_thread_id`."""
    return _ESCAPED.sub(_unescape_one, escaped)


def head_pattern(prefix: str) -> str:
    """The ``SCAN MATCH`` pattern of every thread's head key under ``prefix``."""
    return f"{{{glob_escape(prefix)}:*}}:head"


def thread_of_head_key(prefix: str, key: bytes | str) -> str:
    """The thread id a head key (one :func:`head_pattern` matched) names."""
    text = key.decode() if isinstance(key, bytes) else key
    return unescape_thread_id(text[len(prefix) + 2 : -len("}:head")])


class Keys:
    """One thread's keys."""

    __slots__ = ("cp", "data", "every", "first", "gone", "head", "lock", "read", "seq", "writes")

    def __init__(self, prefix: str, thread_id: str) -> None:
        tag = f"{{{prefix}:{escape_thread_id(thread_id)}}}"
        self.head = f"{tag}:head"
        self.cp = f"{tag}:cp"
        self.seq = f"{tag}:seq"
        self.data = f"{tag}:data"
        self.writes = f"{tag}:writes"
        # not in every: deleting a thread must not break the lock of a run holding it
        self.lock = f"{tag}:lock"
        self.every = [self.head, self.cp, self.data, self.writes, self.seq]
        # what a delete leaves: the id it minted, for DELETE_KEPT (see refuse_if_deleted)
        self.gone = f"{tag}:gone"
        self.first = [*self.every, self.gone]  # a new thread's first write's keys
        self.read = self.every[:4]  # the read script's keys
