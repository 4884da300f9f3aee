"""Resume overhead against the size of the paused state: 10 KB to 10 MB.

Why: resuming anywhere means loading, decompressing, restoring, then dumping, compressing
and saving the whole state, so our fixed cost over an in-memory resume should grow with
the state. This bench shows how fast: for each size, ours (``RunEngine.resume``: load,
claim, rebuild, restore, resume, snapshot, save; ``bench/resume_cost.py``) beside Strands
resuming the same live graph in memory, interleaved, on SQLite and on DynamoDB (moto's
server). Strands' resume is the graph's own work; ours minus it is what resuming from the
store costs ("overhead").

The graphs (``bench/state_graphs.py``) are one node whose tool returns English-like text of
the given size, then asks; so the paused snapshot carries that text once, in the node's
conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.resume_cost import BASELINE, ResumeReport, measure_dynamodb, measure_sqlite
from bench.state_graphs import MODULE, SIZES, graph_name

RESULTS = Path(__file__).with_name("results")


async def measure(*, sizes: Sequence[str], samples: int, warmup: int, dynamodb: bool = True) -> list[ResumeReport]:
    graphs = [graph_name(s) for s in sizes]
    reports = [await measure_sqlite(samples=samples, warmup=warmup, graphs=graphs, modules=[MODULE])]
    if dynamodb:
        reports.append(await measure_dynamodb(samples=samples, warmup=warmup, graphs=graphs, modules=[MODULE]))
    return reports


def rows(reports: Sequence[ResumeReport], *, sizes: Sequence[str]) -> list[dict[str, Any]]:
    """One row per backend and size: the state's bytes, both medians, the overhead and the ratio."""
    out: list[dict[str, Any]] = []
    for report in reports:
        snapshot = {s.graph: s for s in report.sizes}
        for size, comparison in zip(sizes, report.comparisons, strict=True):
            stored = snapshot.get(graph_name(size))
            out.append(
                {
                    "backend": report.backend,
                    "state": size,
                    "raw_bytes": stored.raw_bytes if stored else 0,
                    "stored_bytes": stored.stored_bytes if stored else 0,
                    "overhead_ms": round((comparison.ours.median - comparison.baseline.median) * 1000, 3),
                    **comparison.as_dict(),
                }
            )
    return out


def markdown(table: Sequence[dict[str, Any]], *, command: str, samples: int) -> str:
    lines = [
        "## Resume overhead against state size",
        "",
        f"Produced by `{command}` ({samples} samples per size and side, interleaved). Ours: "
        "`RunEngine.resume` from the store (load, claim, rebuild the graph, restore the snapshot, resume "
        "with the decision, snapshot and save; no Slack). Baseline: "
        f"{BASELINE}: the graph's own work. Overhead = ours minus baseline at the median. The state is "
        "English-like text in the node's conversation; stored = as `persistence.snapshots.encode` writes it "
        "(DynamoDB: inline, or chunk items past the item limit).",
        "",
        "| store | state | snapshot raw → stored | ours p50 | Strands p50 | overhead | ratio | p95 ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in table:
        lines.append(
            f"| {r['backend']} | {r['state']} | {r['raw_bytes']:,} → {r['stored_bytes']:,} B | "
            f"{r['ours_median_ms']:.2f} ms | {r['baseline_median_ms']:.2f} ms | {r['overhead_ms']:.2f} ms | "
            f"{r['ratio']:.2f} | {r['p95_ratio']:.2f} |"
        )
    lines += [
        "",
        "DynamoDB here is moto's server in the same process: its round trips and its handling of "
        "large items are Python's, so the DynamoDB rows show the shape of the growth, not what "
        "DynamoDB itself would take.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.resume_size", description=__doc__)
    parser.add_argument("--sizes", nargs="*", choices=tuple(SIZES), default=list(SIZES))
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--no-dynamodb", action="store_true", help="SQLite only")
    args = parser.parse_args(argv)
    command = " ".join(["python -m bench.resume_size", *(argv if argv is not None else sys.argv[1:])])
    reports = asyncio.run(
        measure(sizes=args.sizes, samples=args.samples, warmup=args.warmup, dynamodb=not args.no_dynamodb)
    )
    table = rows(reports, sizes=args.sizes)
    text = markdown(table, command=command, samples=args.samples)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "resume.md").write_text(text)
    data = {"command": command, "baseline": BASELINE, "samples": args.samples, "rows": table}
    (RESULTS / "resume.json").write_text(json.dumps(data, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
