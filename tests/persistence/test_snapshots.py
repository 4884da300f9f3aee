from __future__ import annotations

import os

import pytest

from persistence import snapshots


def test_json_is_compressed_behind_a_format_byte() -> None:
    raw = b'{"messages": [' + b'{"role": "user", "content": "hello"},' * 1000 + b"]}"
    blob = snapshots.encode(raw)
    assert blob[:1] == snapshots.ZLIB and len(blob) < len(raw) // 10
    assert snapshots.decode(blob) == raw


def test_incompressible_data_is_kept_as_is() -> None:
    raw = os.urandom(100_000)
    blob = snapshots.encode(raw)
    assert blob == snapshots.RAW + raw and snapshots.decode(blob) == raw
    assert snapshots.decode(snapshots.encode(b"")) == b""


@pytest.mark.parametrize("blob", [b"\x07abc", b"\x01not zlib", b""])
def test_unknown_or_damaged_blobs_raise(blob: bytes) -> None:
    with pytest.raises(snapshots.SnapshotCorrupt):
        snapshots.decode(blob)
