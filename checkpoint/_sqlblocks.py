"""Blocks: SQLite keeps each full run of ``BLOCK`` log items once more, in one row.

A cold read of a long log costs per row fetched: SQLite's module makes a tuple and a bytes
object per row and lets go of the GIL for each, and matching rows to items costs as much
again (~7.6k instructions per item at 10,000 messages, where decoding one costs ~13k).
So when a step's write completes items ``n * BLOCK .. (n + 1) * BLOCK - 1`` of a log
branch (all of them inside the branch), the write also stores them together in field
``k|<key>|<branch>|<n>``; a read fetches the blocks of a long range and only the few items
around them one by one.

The item fields stay the truth: a block is a copy of items that never change once written
(``_layout``), so it is never stale. A read that finds a block missing or unreadable
(a file written before blocks, a block pruned) reads the range's items as before; a
prune that deletes an item deletes the block holding it. Older versions of graphagent
ignore ``k|`` fields.

A block's bytes: ``FORMAT`` (one byte), the items' lengths (``BLOCK`` unsigned 32-bit
little-endian integers), then the items, one after another.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from io import BytesIO

from checkpoint._layout import SEP, Record, log_stem

__all__ = [
    "BLOCK",
    "assemble",
    "block_field",
    "blocks_in",
    "dropped_blocks",
    "items_of",
    "pack",
    "sealed",
    "unpack",
]

BLOCK = 256
FORMAT = 1
_HEAD = 1 + 4 * BLOCK


def block_field(key: str, branch: str, n: int) -> str:
    """The field holding block ``n`` (items ``n * BLOCK`` on) of a log branch."""
    return f"k{SEP}{key}{SEP}{branch}{SEP}{n}"


def blocks_in(start: int, end: int) -> range:
    """The blocks whose items all lie in ``start..end``."""
    return range(-(-start // BLOCK), end // BLOCK)


def pack(items: Sequence[bytes]) -> bytes:
    """A block's stored bytes from its ``BLOCK`` items."""
    lengths = array("I", map(len, items))
    if sys.byteorder == "big":
        lengths.byteswap()
    return b"".join([bytes([FORMAT]), lengths.tobytes(), *items])


def unpack(blob: bytes) -> list[bytes] | None:
    """A block's items, or ``None`` for bytes that are not a block this code reads."""
    if len(blob) < _HEAD or blob[0] != FORMAT:
        return None
    lengths = array("I")
    lengths.frombytes(blob[1:_HEAD])
    if sys.byteorder == "big":
        lengths.byteswap()
    if sum(lengths) != len(blob) - _HEAD:
        return None
    body = BytesIO(blob)  # shares the bytes; each read copies one item out
    body.seek(_HEAD)
    return list(map(body.read, lengths))


def sealed(parent: Record | None, last: Record) -> list[tuple[str, str, int]]:
    """The blocks a write completed: ``(key, branch, n)`` for each block of ``last``'s
    log branches that ``parent`` (the record the write grew from) did not hold whole."""
    out: list[tuple[str, str, int]] = []
    before = parent.logs if parent is not None else {}
    for key, ranges in last.logs.items():
        ends = {branch: end for branch, _, end in before.get(key, ())}
        for branch, start, end in ranges:
            held = max(ends.get(branch, start), start)
            first = max(-(-start // BLOCK), held // BLOCK)
            out.extend((key, branch, n) for n in range(first, end // BLOCK))
    return out


def items_of(key: str, branch: str, n: int) -> list[str]:
    """The item fields of block ``n``."""
    stem = log_stem(key, branch)
    return [f"{stem}{i}" for i in range(n * BLOCK, (n + 1) * BLOCK)]


def dropped_blocks(fields: Iterable[str]) -> list[str]:
    """The block fields holding any of the item fields ``fields`` (a prune deletes
    them with the items)."""
    out = set()
    for field in fields:
        if field.startswith("l" + SEP):
            stem, _, index = field.rpartition(SEP)
            if index.isdigit():
                out.add(f"k{stem[1:]}{SEP}{int(index) // BLOCK}")
    return sorted(out)


def assemble(blocks: Mapping[str, bytes], key: str, branch: str, span: range) -> list[bytes] | None:
    """The items of the blocks ``span`` from the block fields read, or ``None`` when one
    is missing or unreadable."""
    out: list[bytes] = []
    for n in span:
        blob = blocks.get(block_field(key, branch, n))
        items = None if blob is None else unpack(blob)
        if items is None or len(items) != BLOCK:
            return None
        out += items
    return out
