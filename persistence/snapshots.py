"""The snapshot codec both backends share.

Snapshots are UTF-8 JSON from ``graph.serialize_state()`` and grow with the interrupted
node's conversation, so stores keep them compressed. The first byte names the format so
that a stored blob stays readable when the encoding changes: old runs may wait for a
human for days while new code is deployed.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from typing import Any, Literal

from engine.store import StoreBroken
from persistence import long_repeats

RAW = b"\x00"  # stored as is: what zlib cannot shrink (already compressed or random data)
ZLIB = b"\x01"
LONG_ZLIB = b"\x02"  # long repeats replaced by copies (persistence/long_repeats.py), then zlib
_LEVEL = 6  # zlib's default: most of the gain of level 9 at a fraction of the CPU
_WINDOW = 32 * 1024  # zlib sees this far back: a shorter snapshot has no repeat it misses


class SnapshotCorrupt(StoreBroken):
    """A stored snapshot cannot be decoded (unknown format or damaged data)."""


def encode(raw: bytes) -> bytes:
    """The smallest of the formats tried: long repeats out then zlib, zlib alone, or as is."""
    copies = long_repeats.find(raw) if len(raw) > _WINDOW else []
    if copies:
        header, packed = LONG_ZLIB, zlib.compress(long_repeats.pack(raw, copies), _LEVEL)
    else:
        header, packed = ZLIB, zlib.compress(raw, _LEVEL)
    if len(packed) < len(raw):
        return header + packed
    return RAW + raw


def decode(blob: bytes) -> bytes:
    header, body = blob[:1], blob[1:]
    if header == ZLIB:
        return _inflate(body)
    if header == LONG_ZLIB:
        try:
            return long_repeats.unpack(_inflate(body))
        except long_repeats.Malformed as exc:
            raise SnapshotCorrupt(f"damaged snapshot: {exc}") from exc
    if header == RAW:
        return bytes(body)
    raise SnapshotCorrupt(f"unknown snapshot format {header!r}")


def _inflate(body: bytes) -> bytes:
    try:
        return zlib.decompress(body)
    except zlib.error as exc:
        raise SnapshotCorrupt(f"damaged zlib snapshot: {exc}") from exc


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class StatePlan:
    """What a save does with a run's state: keep what is stored, drop it, or write ``raw``.

    Shared by both backends so that "written only when it changes" means the same in each:
    a run loaded without its state (``snapshot`` None, ``state_ref`` set) keeps it; a run
    whose state was dropped on purpose (both None) loses it; a snapshot whose digest is the
    stored one is not written again (a claim, a card re-post or a decision changes nothing
    in it).
    """

    action: Literal["keep", "drop", "write"]
    raw: bytes | None = None
    sha256: str | None = None


def plan(snapshot: bytes | None, state_ref: dict[str, Any] | None) -> StatePlan:
    if snapshot is None:
        return StatePlan("keep") if state_ref is not None else StatePlan("drop")
    sha = digest(snapshot)
    if state_ref is not None and state_ref.get("sha256") == sha:
        return StatePlan("keep")
    return StatePlan("write", raw=snapshot, sha256=sha)
