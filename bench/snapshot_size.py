"""What a paused state costs to store: zlib alone against the codec both stores use.

Why: zlib sees 32 KB back, so a node output repeated in the next node's conversation was
stored twice or more; ``persistence.snapshots.encode`` now takes long repeats out first
(``persistence/long_repeats.py``). This bench shows what that gains where it should (the
``bench-state-handoff`` graph: a 160 KB report handed to the next node, which asks; the
state keeps it in the writer's result, in its conversation and in the reviewer's) and
that it costs nothing in bytes and little CPU everywhere else: each state of
``bench/state_graphs.py`` and ``bench-chatty``, paused at its ask, then encoded and decoded
both ways (best of ``--repeats`` runs, one thread, the same process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import lzma
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from strands.multiagent.graph import Graph

from persistence import snapshots

RESULTS = Path(__file__).with_name("results")


def _factories() -> dict[str, Callable[[], Graph]]:
    from bench import state_graphs
    from bench.graphs import bench_chatty

    return {
        "chatty (80 KB)": bench_chatty,
        "10 KB": state_graphs.state_10kb,
        "100 KB": state_graphs.state_100kb,
        "1 MB": state_graphs.state_1mb,
        "10 MB": state_graphs.state_10mb,
        "handoff (160 KB, kept 3 times)": state_graphs.state_handoff,
    }


async def _paused(graph: Graph) -> bytes:
    from engine.snapshot import dump_state

    await graph.invoke_async("go")
    return dump_state(graph)


def _best_ms(work: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return round(best * 1000, 2)


def _lzma_filters(raw: bytes) -> list[dict[str, Any]]:
    """The alternative we measured: lzma's fast preset with a window as large as the state."""
    return [{"id": lzma.FILTER_LZMA2, "preset": 1, "dict_size": max(4096, len(raw))}]


def _row(case: str, raw: bytes, *, repeats: int) -> dict[str, Any]:
    old = snapshots.ZLIB + zlib.compress(raw, 6)
    new = snapshots.encode(raw)
    if snapshots.decode(new) != raw:
        raise RuntimeError(f"{case}: the snapshot did not round-trip")
    filters = _lzma_filters(raw)
    squeezed = lzma.compress(raw, format=lzma.FORMAT_RAW, filters=filters)
    return {
        "case": case,
        "raw_bytes": len(raw),
        "zlib_bytes": len(old),
        "stored_bytes": len(new),
        "format": new[:1].hex(),
        "ratio": round(len(new) / len(old), 3),
        "zlib_compress_ms": _best_ms(lambda: zlib.compress(raw, 6), repeats),
        "compress_ms": _best_ms(lambda: snapshots.encode(raw), repeats),
        "zlib_decompress_ms": _best_ms(lambda: snapshots.decode(old), repeats),
        "decompress_ms": _best_ms(lambda: snapshots.decode(new), repeats),
        "lzma_bytes": len(squeezed),
        "lzma_compress_ms": _best_ms(lambda: lzma.compress(raw, format=lzma.FORMAT_RAW, filters=filters), repeats),
        "lzma_decompress_ms": _best_ms(
            lambda: lzma.decompress(squeezed, format=lzma.FORMAT_RAW, filters=filters), repeats
        ),
    }


def measure(*, repeats: int) -> list[dict[str, Any]]:
    return [_row(case, asyncio.run(_paused(factory())), repeats=repeats) for case, factory in _factories().items()]


def markdown(rows: Sequence[dict[str, Any]], *, command: str, repeats: int) -> str:
    lines = [
        "## Stored state size",
        "",
        f"Produced by `{command}` (CPU time, best of {repeats}). Each graph runs to its ask; its "
        "snapshot is encoded by zlib alone (level 6, what both stores kept before) and by "
        "`persistence.snapshots.encode` (long repeats out, then zlib: format `02`; zlib alone, `01`, "
        "when nothing repeats beyond zlib's window). The last column is the alternative we measured "
        "and did not take: lzma at preset 1 with a window as large as the state.",
        "",
        "| case | raw | zlib | stored | stored / zlib | compress: zlib → ours | decompress: zlib → ours "
        "| lzma: bytes, compress, decompress |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['raw_bytes']:,} B | {r['zlib_bytes']:,} B | {r['stored_bytes']:,} B "
            f"(`{r['format']}`) | {r['ratio']:.2f} | {r['zlib_compress_ms']:.1f} → {r['compress_ms']:.1f} ms | "
            f"{r['zlib_decompress_ms']:.2f} → {r['decompress_ms']:.2f} ms | {r['lzma_bytes']:,} B, "
            f"{r['lzma_compress_ms']:.1f} ms, {r['lzma_decompress_ms']:.2f} ms |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.snapshot_size", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    command = " ".join(["python -m bench.snapshot_size", *(argv if argv is not None else sys.argv[1:])])
    rows = measure(repeats=args.repeats)
    text = markdown(rows, command=command, repeats=args.repeats)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "snapshots.md").write_text(text)
    data = {"command": command, "repeats": args.repeats, "rows": rows}
    (RESULTS / "snapshots.json").write_text(json.dumps(data, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
