from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph_defs.registry import list_graphs, unregister
from persistence import long_repeats, snapshots

FIXTURES = Path(__file__).with_name("fixtures")
# Written by the encoder before LONG_ZLIB existed (zlib only): a 50 KB report kept twice.
V1_BLOB = FIXTURES / "zlib_v1_snapshot.bin"
V1_SHA256 = "2486cbb5b34474fcd14324ef4d0751ebddae44b934dfa4f6095a21ae223acbe1"


def _old_zlib(raw: bytes) -> bytes:
    """What ``encode`` wrote before LONG_ZLIB: the size the new format is measured against."""
    return snapshots.ZLIB + zlib.compress(raw, 6)


def test_json_is_compressed_behind_a_format_byte() -> None:
    raw = b'{"messages": [' + b'{"role": "user", "content": "hello"},' * 1000 + b"]}"
    blob = snapshots.encode(raw)
    assert blob[:1] in (snapshots.ZLIB, snapshots.LONG_ZLIB) and len(blob) < len(raw) // 10
    assert snapshots.decode(blob) == raw


def test_a_small_snapshot_is_written_as_before() -> None:
    raw = json.dumps({"text": "a b c " * 2000}).encode()
    assert snapshots.encode(raw) == _old_zlib(raw)


def test_incompressible_data_is_kept_as_is() -> None:
    raw = os.urandom(100_000)
    blob = snapshots.encode(raw)
    assert blob == snapshots.RAW + raw and snapshots.decode(blob) == raw
    assert snapshots.decode(snapshots.encode(b"")) == b""


def test_snapshots_written_by_the_old_encoder_still_decode() -> None:
    raw = snapshots.decode(V1_BLOB.read_bytes())
    assert V1_BLOB.read_bytes()[:1] == snapshots.ZLIB
    assert hashlib.sha256(raw).hexdigest() == V1_SHA256
    assert snapshots.decode(snapshots.RAW + raw) == raw
    # The same state written today sees the repeat zlib's window missed.
    assert len(snapshots.encode(raw)) < 0.6 * len(V1_BLOB.read_bytes())


def test_a_repeat_beyond_zlibs_window_is_stored_once_even_when_incompressible() -> None:
    rand = random.Random(7)
    output = rand.randbytes(160_000).hex().encode()  # what zlib alone can barely shrink
    raw = b'{"result":"' + output + b'","filler":"' + rand.randbytes(40_000).hex().encode() + b'"'
    raw += b',"next":"From writer: ' + output + b'"}'
    blob = snapshots.encode(raw)
    assert blob[:1] == snapshots.LONG_ZLIB and snapshots.decode(blob) == raw
    assert len(blob) <= 0.6 * len(_old_zlib(raw))


@pytest.mark.parametrize("seed", range(40))
def test_random_states_round_trip(seed: int) -> None:
    rand = random.Random(seed)
    pool = [rand.randbytes(rand.choice([1, 100, 5_000, 40_000])) for _ in range(6)]
    parts = [rand.choice(pool) if rand.random() < 0.6 else rand.randbytes(rand.randrange(0, 3000)) for _ in range(20)]
    for i, part in enumerate(parts):  # cut repeats at arbitrary offsets too
        if rand.random() < 0.3 and part:
            parts[i] = part[rand.randrange(len(part)) :]
    raw = b"".join(parts) * rand.choice([1, 1, 3])
    assert snapshots.decode(snapshots.encode(raw)) == raw
    packed = long_repeats.pack(raw, long_repeats.find(raw))
    assert long_repeats.unpack(packed) == raw


@pytest.fixture(scope="module")
def realistic_states() -> Iterator[dict[str, bytes]]:
    before = {d.name for d in list_graphs()}
    from bench import state_graphs
    from bench.graphs import bench_chatty
    from engine.snapshot import dump_state

    async def paused(graph: object) -> bytes:
        await graph.invoke_async("go")  # type: ignore[attr-defined]
        return dump_state(graph)  # type: ignore[arg-type]

    factories = {
        "chatty": bench_chatty,
        "100 KB": state_graphs.state_100kb,
        "1 MB": state_graphs.state_1mb,
        "handoff": state_graphs.state_handoff,
    }
    try:
        yield {name: asyncio.run(paused(factory())) for name, factory in factories.items()}
    finally:  # the bench modules register their graphs: later tests must not see them
        for definition in list_graphs():
            if definition.name not in before:
                unregister(definition.name)
                sys.modules.pop(definition.module, None)


def test_realistic_states_round_trip_and_never_grow(realistic_states: dict[str, bytes]) -> None:
    for name, raw in realistic_states.items():
        blob = snapshots.encode(raw)
        assert snapshots.decode(blob) == raw, name
        assert len(blob) <= len(_old_zlib(raw)), name


def test_a_handed_off_160kb_output_is_stored_at_most_0_6_times_zlibs_size(
    realistic_states: dict[str, bytes],
) -> None:
    raw = realistic_states["handoff"]
    blob = snapshots.encode(raw)
    assert blob[:1] == snapshots.LONG_ZLIB
    assert len(blob) <= 0.6 * len(_old_zlib(raw))


@pytest.mark.parametrize("blob", [b"\x07abc", b"\x01not zlib", b"", b"\x02not zlib"])
def test_unknown_or_damaged_blobs_raise(blob: bytes) -> None:
    with pytest.raises(snapshots.SnapshotCorrupt):
        snapshots.decode(blob)


def _long_blob() -> tuple[bytes, bytes]:
    raw = snapshots.decode(V1_BLOB.read_bytes())
    blob = snapshots.encode(raw)
    assert blob[:1] == snapshots.LONG_ZLIB and snapshots.decode(blob) == raw
    return raw, blob


def test_damaged_long_repeat_snapshots_raise() -> None:
    _, blob = _long_blob()
    rand = random.Random(3)
    for _ in range(200):
        damaged = bytearray(blob)
        damaged[rand.randrange(1, len(damaged))] ^= 1 << rand.randrange(8)
        with pytest.raises(snapshots.SnapshotCorrupt):  # zlib's checksum sees every flipped bit
            snapshots.decode(bytes(damaged))
    for cut in (1, 2, len(blob) // 2, len(blob) - 1):
        with pytest.raises(snapshots.SnapshotCorrupt):
            snapshots.decode(blob[:cut])


@pytest.mark.parametrize(
    "table",
    [
        b"",  # no length at all
        b"\x05\x01\x00\x00\x01",  # a copy before any byte is written
        b"\x05\x01\x01\x00\x09a",  # a copy longer than what precedes it
        b"\x05\x00abc",  # fewer bytes than announced
        b"\x80\x80\x80",  # a varint that never ends
    ],
)
def test_a_well_compressed_but_wrong_copy_table_raises(table: bytes) -> None:
    with pytest.raises(snapshots.SnapshotCorrupt):
        snapshots.decode(snapshots.LONG_ZLIB + zlib.compress(table))
