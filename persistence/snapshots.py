"""The snapshot codec both backends share.

Snapshots are UTF-8 JSON from ``graph.serialize_state()`` and grow with the interrupted
node's conversation, so stores keep them compressed. The first byte names the format so
that a stored blob stays readable when the encoding changes: old runs may wait for a
human for days while new code is deployed.
"""

from __future__ import annotations

import zlib

from persistence.base import StoreError

RAW = b"\x00"  # stored as is: what zlib cannot shrink (already compressed or random data)
ZLIB = b"\x01"
_LEVEL = 6  # zlib's default: most of the gain of level 9 at a fraction of the CPU


class SnapshotCorrupt(StoreError):
    """A stored snapshot cannot be decoded (unknown format or damaged data)."""


def encode(raw: bytes) -> bytes:
    packed = zlib.compress(raw, _LEVEL)
    if len(packed) < len(raw):
        return ZLIB + packed
    return RAW + raw


def decode(blob: bytes) -> bytes:
    header, body = blob[:1], blob[1:]
    if header == ZLIB:
        try:
            return zlib.decompress(body)
        except zlib.error as exc:
            raise SnapshotCorrupt(f"damaged zlib snapshot: {exc}") from exc
    if header == RAW:
        return bytes(body)
    raise SnapshotCorrupt(f"unknown snapshot format {header!r}")
