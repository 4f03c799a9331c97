"""What every store shares and none of them does I/O for: checking namespaces, keys and
values, the namespace encoding that SQL and Redis sort and prefix-match on, filters compiled
to predicates, text matching and cosine scores.

The stores differ in where they keep items; what an item *is* and which items a search
returns is decided here once, so the four backends cannot drift apart.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from checkpoint.errors import CheckpointError
from checkpoint.store._paths import texts_at

__all__ = [
    "Condition",
    "InvalidNamespaceError",
    "StoreError",
    "check_key",
    "check_namespace",
    "check_prefix",
    "compile_filter",
    "decode_field",
    "decode_namespace",
    "dumps",
    "encode_field",
    "encode_namespace",
    "namespace_matches",
    "own_value",
    "text_matches",
]


class StoreError(CheckpointError):
    """A store could not do what was asked (bad input, or stored data it cannot read)."""


class InvalidNamespaceError(StoreError, ValueError):
    """A namespace (or one of its labels) that a store refuses: empty, or not text."""


# ---------------------------------------------------------------- names


def check_namespace(namespace: Any, what: str = "namespace") -> tuple[str, ...]:
    """``namespace`` as a tuple of non-empty labels, or :class:`InvalidNamespaceError`."""
    if isinstance(namespace, str) or not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(
            f"{what} must be a tuple of strings, e.g. ('memories', 'user-42'); got {namespace!r}"
        )
    if not namespace:
        raise InvalidNamespaceError(
            f"{what} is empty: give at least one label, e.g. ('memories', 'user-42')"
        )
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise InvalidNamespaceError(
                f"{what} {tuple(namespace)!r} has an empty or non-text label {label!r}: "
                "every label must be a non-empty string"
            )
    return tuple(namespace)


def check_prefix(prefix: Any, what: str = "namespace_prefix") -> tuple[str, ...]:
    """A search prefix: like a namespace, but ``()`` (everything) is allowed."""
    if isinstance(prefix, (tuple, list)) and not prefix:
        return ()
    return check_namespace(prefix, what)


def check_key(key: Any) -> str:
    """``key`` if it is a non-empty string, else a clear ``ValueError``."""
    if not isinstance(key, str) or not key:
        raise StoreError(f"an item key must be a non-empty string; got {key!r}")
    return key


# Escaping makes the encoding injective and keeps '/' as the one separator: a label can
# hold any character ('/', '%', NUL, lone surrogates) and still sort and prefix-match.
_TO_ESCAPE = re.compile("[%/\x00\ud800-\udfff]")
_ESCAPED = re.compile("%(?:25|2F|00|u[0-9A-F]{4})")
_ESC = {"%": "%25", "/": "%2F", "\x00": "%00"}
_UNESC = {v: k for k, v in _ESC.items()}


def escape_key(key: str) -> str:
    """A key as SQL columns hold it (no NUL, no lone surrogate); labels are escaped alike."""
    if key.isascii() and "%" not in key and "/" not in key and "\x00" not in key:
        return key  # the usual label or key: nothing to escape, no regex pass
    return _TO_ESCAPE.sub(lambda m: _ESC.get(m.group()) or f"%u{ord(m.group()):04X}", key)


_esc = escape_key


def _unesc(text: str) -> str:
    return _ESCAPED.sub(lambda m: _UNESC.get(m.group()) or chr(int(m.group()[2:], 16)), text)


def encode_namespace(namespace: Sequence[str]) -> str:
    """``('a', 'b')`` -> ``'a/b/'``: every namespace under prefix P starts with P's code."""
    return "/".join(map(_esc, namespace)) + "/" if namespace else ""


def decode_namespace(code: str) -> tuple[str, ...]:
    """Reverse :func:`encode_namespace`."""
    return tuple(_unesc(label) for label in code.split("/")[:-1])


def encode_field(namespace: Sequence[str], key: str) -> str:
    """One text naming an item: its namespace code, then its escaped key."""
    return encode_namespace(namespace) + _esc(key)


def decode_field(field: str) -> tuple[tuple[str, ...], str]:
    """Reverse :func:`encode_field`."""
    code, _, key = field.rpartition("/")
    return decode_namespace(code + "/"), _unesc(key)


def unescape_key(key: str) -> str:
    """Reverse :func:`escape_key`."""
    return _unesc(key)


def namespace_matches(
    namespace: tuple[str, ...],
    prefix: Sequence[str] | None,
    suffix: Sequence[str] | None,
) -> bool:
    """Whether ``namespace`` starts with ``prefix`` and ends with ``suffix`` ("*" = any label)."""
    if prefix:
        if len(namespace) < len(prefix):
            return False
        for want, label in zip(prefix, namespace[: len(prefix)], strict=True):
            if want != "*" and want != label:
                return False
    if suffix:
        if len(namespace) < len(suffix):
            return False
        for want, label in zip(suffix, namespace[len(namespace) - len(suffix) :], strict=True):
            if want != "*" and want != label:
                return False
    return True


# ---------------------------------------------------------------- values


Where = Any  # None for the value itself, else (parent, key or index): built only as needed


def _path(where: Where) -> str:
    parts: list[str] = []
    while where is not None:
        where, step = where
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return "value" + "".join(reversed(parts))


def _bad_value(where: Where, problem: str) -> StoreError:
    return StoreError(
        f"the value at {_path(where)} {problem}: a store keeps JSON-like values (dict with "
        "string keys, list, str, int, float, bool, None) so every backend reads back the "
        "same thing"
    )


def _own(value: Any, where: Where, depth: int) -> Any:
    kind = type(value)
    if kind is str:
        if (not value.isascii() or "\x00" in value) and _TEXT_PROBLEM.search(value):
            raise _bad_value(where, "holds a NUL or a lone surrogate, which PostgreSQL refuses")
        return value
    if kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _bad_value(where, f"is {value!r}, which JSON cannot hold")
        return value
    if depth > 64:
        raise _bad_value(where, "nests deeper than 64 levels")
    if kind is dict or isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _bad_value(where, f"has a non-string key {k!r}")
            if (not k.isascii() or "\x00" in k) and _TEXT_PROBLEM.search(k):
                raise _bad_value(
                    where,
                    f"has a key holding a NUL or a lone surrogate ({k!r}), which PostgreSQL "
                    "refuses",
                )
            t = type(v)
            # the usual atoms inline (a call per field was a third of a put)
            if t is int or t is bool or v is None or (t is str and v.isascii() and "\x00" not in v):
                out[k] = v
            else:
                out[k] = _own(v, (where, k), depth + 1)
        return out
    if kind is list or kind is tuple:
        return [_own(v, (where, i), depth + 1) for i, v in enumerate(value)]
    raise _bad_value(where, f"is a {kind.__name__}")


_TEXT_PROBLEM = re.compile("[\x00\ud800-\udfff]")


def own_value(value: Any) -> dict[str, Any]:
    """A private deep copy of ``value`` after checking it is a JSON-like dict."""
    if type(value) is not dict and not isinstance(value, Mapping):
        raise StoreError(
            f"an item's value must be a dict, e.g. {{'text': 'likes tea'}}; got "
            f"{type(value).__name__}"
        )
    out: dict[str, Any] = _own(value, None, 0)
    return out


_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_value(value: Any) -> Any:
    """A deep copy of an already-checked value (what reads hand out)."""
    kind = type(value)
    if kind is dict:
        # atoms are shared (immutable); only containers are copied, without a call each
        atoms = _ATOMS
        return {k: v if type(v) in atoms else copy_value(v) for k, v in value.items()}
    if kind is list:
        return [copy_value(v) for v in value]
    return value


_scan: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(raw: Any, namespace: Sequence[str], key: str) -> dict[str, Any]:
    """A stored value read back: JSON text (or an already decoded dict) that must be an
    object; anything else is a :class:`StoreError` naming the item, never a crash."""
    try:
        if type(raw) is str:
            # the C scanner straight away (what json.loads reaches after two Python
            # frames); anything it does not take whole goes through json.loads
            try:
                value, end = _scan(raw, 0)
            except StopIteration:
                end = -1
            if end != len(raw):
                value = json.loads(raw)
        elif isinstance(raw, (str, bytes, bytearray)):
            value = json.loads(raw)
        else:
            value = raw
    except (ValueError, RecursionError) as exc:
        raise StoreError(
            f"the stored value of {'/'.join(namespace)} {key!r} is not JSON ({exc}); "
            "delete the item or write it again"
        ) from None
    if type(value) is not dict:
        raise StoreError(
            f"the stored value of {'/'.join(namespace)} {key!r} is not a JSON object; "
            "delete the item or write it again"
        )
    return value


def dumps(value: Any) -> str:
    """The JSON text the SQL and Redis stores keep (compact, key order kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def value_text(value: Any) -> str:
    """The text a plain-text query is matched against: the value's JSON."""
    return json.dumps(value, ensure_ascii=False)


def text_matches(value: Any, needle: str) -> bool:
    """Case-insensitive substring test of ``needle`` (already casefolded) in ``value``."""
    return needle in value_text(value).casefold()


def field_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[tuple[str, str]]:
    """The ``(field, text)`` pairs an index embeds for ``value`` ("$" is the whole value;
    see ``_paths`` for the path syntax)."""
    out = []
    for field in fields:
        if field == "$":
            out.append((field, value_text(value)))
            continue
        texts = texts_at(value, field)
        # a field naming several texts ("items[*].text") keeps a vector for each
        out += [(field if i == 0 else f"{field}#{i}", text) for i, text in enumerate(texts)]
    return out


# ---------------------------------------------------------------- filters

OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


class Condition:
    """One ``field op operand`` test; ``kind`` is 'num', 'str', 'bool' or 'null'."""

    __slots__ = ("kind", "op", "operand", "path")

    def __init__(self, path: tuple[str, ...], op: str, operand: Any) -> None:
        self.path = path
        self.op = op
        self.operand = operand
        self.kind = kind_of(operand)

    def __repr__(self) -> str:
        return f"Condition({'.'.join(self.path)} {self.op} {self.operand!r})"


def kind_of(value: Any) -> str:
    """The comparison class of a JSON value: 'null', 'bool', 'num', 'str' or 'other'."""
    if value is None:
        return "null"
    kind = type(value)
    if kind is bool:
        return "bool"
    if kind is int or kind is float:
        return "num"
    if kind is str:
        return "str"
    return "other"


def compile_filter(filter: Mapping[str, Any] | None) -> list[Condition]:
    """``{"age": {"$gte": 30}, "city": "Paris"}`` as checked conditions (``[]``: no filter)."""
    if not filter:
        return []
    if not isinstance(filter, Mapping):
        raise StoreError(
            f"filter must be a dict of field -> value or {{op: value}}; got {filter!r}"
        )
    conditions = []
    for field, spec in filter.items():
        if (
            not isinstance(field, str)
            or any(not p for p in field.split("."))
            or _TEXT_PROBLEM.search(field)
            or '"' in field
        ):
            raise StoreError(
                f"filter field {field!r} must be a non-empty dotted name without '\"', a NUL "
                "or a lone surrogate (no stored key holds one), e.g. 'a.b'"
            )
        path = tuple(field.split("."))
        if isinstance(spec, Mapping) and spec and all(str(k).startswith("$") for k in spec):
            pairs = list(spec.items())
        else:
            pairs = [("$eq", spec)]
        for op, operand in pairs:
            if op not in OPS:
                raise StoreError(
                    f"unknown filter operator {op!r} on {field!r}: use one of {', '.join(OPS)}"
                )
            kind = kind_of(operand)
            if kind == "other":
                if type(operand) not in (list, dict) or op not in ("$eq", "$ne"):
                    raise StoreError(
                        f"filter {field!r} {op} takes a string, number, bool or None (or, for "
                        f"$eq and $ne, a list or dict); got {type(operand).__name__}"
                    )
                # a list or dict is compared whole (json_equal), checked as a value is
                operand = _own(operand, (None, field), 0)
            if op not in ("$eq", "$ne") and kind not in ("num", "str"):
                raise StoreError(
                    f"filter {field!r} {op} orders values, so it takes a number or a string; "
                    f"got {operand!r}"
                )
            if kind == "num" and not math.isfinite(operand):
                raise StoreError(f"filter {field!r} {op} takes a finite number; got {operand!r}")
            if kind == "str" and _TEXT_PROBLEM.search(operand):
                # no stored value holds one (put refuses it), and PostgreSQL cannot take it
                raise StoreError(
                    f"filter {field!r} {op} holds a NUL or a lone surrogate, which no stored "
                    "value can hold"
                )
            conditions.append(Condition(path, op, operand))
    return conditions


def _lookup(value: Any, path: Sequence[str]) -> tuple[bool, Any]:
    for part in path:
        if type(value) is not dict or part not in value:
            return False, None
        value = value[part]
    return True, value


def _holds(cond: Condition, value: Mapping[str, Any]) -> bool:
    _, got = _lookup(value, cond.path)
    same = kind_of(got) == cond.kind
    op = cond.op
    if cond.kind == "other":
        eq = same and json_equal(got, cond.operand)
        return eq if op == "$eq" else not eq
    if op == "$eq":
        return same and got == cond.operand
    if op == "$ne":
        return not (same and got == cond.operand)
    if not same:
        return False
    if op == "$gt":
        return bool(got > cond.operand)
    if op == "$gte":
        return bool(got >= cond.operand)
    if op == "$lt":
        return bool(got < cond.operand)
    return bool(got <= cond.operand)


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JSON: objects whatever their key order,
    numbers as numbers (1 == 1.0), booleans only to booleans (as PostgreSQL's jsonb)."""
    ka, kb = kind_of(a), kind_of(b)
    if ka != kb:
        return False
    if ka != "other":
        return bool(a == b)
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    return False


def predicate(conditions: Sequence[Condition]) -> Callable[[Mapping[str, Any]], bool] | None:
    """A function telling whether a value passes every condition (``None``: no filter)."""
    if not conditions:
        return None
    if len(conditions) == 1:
        (only,) = conditions
        if only.op == "$eq" and len(only.path) == 1 and only.kind in ("str", "num"):
            # the common case, a field equal to a constant, without the general walk
            name, want, cls = only.path[0], only.operand, only.kind

            def equal(value: Mapping[str, Any]) -> bool:
                got = value.get(name, _MISSING)
                return got == want and kind_of(got) == cls

            return equal
        return lambda value: _holds(only, value)
    return lambda value: all(_holds(c, value) for c in conditions)


_MISSING = object()


# ---------------------------------------------------------------- vectors


def normalize(vector: Sequence[float], dims: int) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero), checked against ``dims``."""
    if len(vector) != dims:
        raise StoreError(
            f"the embedder returned a vector of {len(vector)} numbers but the index says "
            f"dims={dims}: set index['dims'] to the model's dimension"
        )
    floats = [float(x) for x in vector]
    norm = math.sqrt(sum(x * x for x in floats))
    return [x / norm for x in floats] if norm else floats
