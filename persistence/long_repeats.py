"""Long repeats taken out of a snapshot before zlib, and put back after.

Why: zlib only sees 32 KB back, and a graph's state repeats far more than that. A node's
output is kept in its result and again in the next node's conversation (and a completed
agent's conversation may hold it a third time), so a 160 KB report was stored compressed
three times. ``lzma`` with a window as large as the snapshot finds the repeat too, but it
stored the bench's prose about a third larger than zlib at its fast presets and
decompressed five times slower (``python -m bench.snapshot_size``); this pass keeps zlib
for everything else and costs a few milliseconds per MB.

How: the bytes are cut at content-defined points (where a pseudo-random bit per byte, over
the last ``len(_PATTERN)`` bytes, spells a fixed pattern), so a repeated stretch is cut the same
way wherever it appears, at any offset. A piece already seen becomes a copy of the earlier
bytes. Only the decoder's format is fixed; how pieces are cut can change freely.

Format (before zlib): ``varint(len(raw)) varint(n)`` then ``n`` copies, each
``varint(literal bytes before it) varint(source offset) varint(length)``, then every
literal byte, in order (kept together so that zlib still compresses them as one text).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_MIN_PIECE = 512  # a copy costs a few bytes; below this zlib's own matches do as well
_MAX_BACK = 64 * 1024  # how far a copy is stretched back over the piece before it (bounds the CPU)
_PATTERN = b"10110010111"  # 11 bits: on random bytes one cut every ~2 KB past the minimum
_BITS = bytes(0x31 if hashlib.sha256(bytes([b])).digest()[0] & 1 else 0x30 for b in range(256))
_CUT = re.compile(re.escape(_PATTERN))


class Malformed(ValueError):
    """The copy table does not describe bytes (damaged or not this format)."""


@dataclass(frozen=True)
class Copy:
    """``length`` bytes equal to the output at ``source``, after ``literal`` new bytes."""

    literal: int
    source: int
    length: int


def _cuts(raw: bytes) -> list[int]:
    cuts: list[int] = []
    last = 0
    for match in _CUT.finditer(raw.translate(_BITS)):
        end = match.end()
        if end - last >= _MIN_PIECE:
            cuts.append(end)
            last = end
    if len(raw) > last:
        cuts.append(len(raw))
    return cuts


def find(raw: bytes) -> list[Copy]:
    """The copies that rebuild ``raw`` from its new bytes; empty when nothing long repeats."""
    seen: dict[bytes, int] = {}
    copies: list[Copy] = []
    literal_from = 0  # where the bytes not yet covered by a copy start
    run_dest = run_src = run_len = -1  # the copy being extended, if any
    start = 0
    for end in _cuts(raw):
        piece = raw[start:end]
        source = seen.setdefault(piece, start)
        if source != start and end - start >= _MIN_PIECE:
            follows = run_dest + run_len == start and run_src + run_len == source
            if run_len > 0 and follows and source + (end - start) <= run_dest:
                run_len += end - start
            else:
                if run_len > 0:
                    copies.append(Copy(literal=run_dest - literal_from, source=run_src, length=run_len))
                    literal_from = run_dest + run_len
                gap = start - (source + end - start)  # the copy's source must end before it starts
                back = _common_suffix(raw, source, start, limit=min(source, start - literal_from, gap, _MAX_BACK))
                run_dest, run_src, run_len = start - back, source - back, end - start + back
        start = end
    if run_len > 0:
        copies.append(Copy(literal=run_dest - literal_from, source=run_src, length=run_len))
    return copies


def _common_suffix(raw: bytes, a: int, b: int, *, limit: int) -> int:
    """How many bytes before ``a`` equal those before ``b`` (at most ``limit``)."""
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if raw[a - mid : a] == raw[b - mid : b]:
            low = mid
        else:
            high = mid - 1
    return low


def pack(raw: bytes, copies: list[Copy]) -> bytes:
    table = bytearray()
    _varint(table, len(raw))
    _varint(table, len(copies))
    literals: list[bytes] = []
    position = 0
    for copy in copies:
        _varint(table, copy.literal)
        _varint(table, copy.source)
        _varint(table, copy.length)
        literals.append(raw[position : position + copy.literal])
        position += copy.literal + copy.length
    literals.append(raw[position:])
    return bytes(table) + b"".join(literals)


def unpack(packed: bytes) -> bytes:
    view = memoryview(packed)
    offset = 0

    def read() -> int:
        nonlocal offset
        value = shift = 0
        while True:
            if offset >= len(view) or shift > 63:
                raise Malformed("truncated copy table")
            byte = view[offset]
            offset += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    size = read()
    table = [(read(), read(), read()) for _ in range(read())]
    out = bytearray()
    for literal, source, length in table:
        if offset + literal > len(view):
            raise Malformed("literal bytes run past the end")
        out += view[offset : offset + literal]
        offset += literal
        if length <= 0 or source + length > len(out):
            raise Malformed("copy from bytes not yet written")
        if len(out) + length > size:  # checked before copying: a damaged table must not balloon
            raise Malformed(f"copies run past the {size} bytes announced")
        out += out[source : source + length]
    out += view[offset:]
    if len(out) != size:
        raise Malformed(f"rebuilt {len(out)} bytes, expected {size}")
    return bytes(out)


def _varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
