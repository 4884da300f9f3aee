"""Run every benchmark, print one table per benchmark, optionally write ``bench/results.json``.

Results are written only on request (``--write``): numbers from a shared, noisy machine
are one observation, not a reference to commit and compare against blindly.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import math
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.stats import Comparison, table

RESULTS = Path(__file__).with_name("results.json")


@dataclass(frozen=True, kw_only=True)
class Plan:
    """How many samples each benchmark takes; ``quick`` is for smoke tests and a first look."""

    ack_samples: int
    resume_samples: int
    dynamodb_samples: int
    warmup: int
    cold_start_samples: int = 15
    """Fresh interpreters per side; each costs a few hundred ms, so the plan keeps this low."""

    @classmethod
    def of(cls, *, quick: bool, samples: int | None = None) -> Plan:
        if quick:
            plan = cls(ack_samples=8, resume_samples=6, dynamodb_samples=4, warmup=1)
        else:
            plan = cls(ack_samples=40, resume_samples=20, dynamodb_samples=12, warmup=3)
        if samples is not None:
            plan = cls(ack_samples=samples, resume_samples=samples, dynamodb_samples=samples, warmup=plan.warmup)
        cold_start_samples = samples if samples is not None else (3 if quick else 15)
        return dataclasses.replace(plan, cold_start_samples=cold_start_samples)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    data: dict[str, Any]
    """Plain data, as ``--write`` stores it."""
    text: str
    """The tables a person reads: milliseconds for context, ratios to compare."""


async def collect(
    *,
    plan: Plan,
    ack: bool = True,
    resume: bool = True,
    dynamodb: bool = False,
    cold_start: bool = False,
    no_pyc: bool = False,
) -> Outcome:
    """Run the chosen benchmarks; return their results as data and as printable tables.

    ``cold_start`` adds the Lambda cold start (off unless asked, ``python -m bench`` asks);
    with ``dynamodb`` our handler runs with ``DYNAMODB_TABLE`` at moto, with ``no_pyc`` both
    compile every module outside the standard library from source, as a ``sam build``
    package does.
    """
    data: dict[str, Any] = {
        "note": "one run on one machine; compare ratios, not milliseconds",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "plan": plan.__dict__,
    }
    parts: list[str] = []
    if ack:
        from bench.ack_latency import BASELINE, SLACK_ACK_DEADLINE, measure_ack

        acks = [
            await measure_ack(samples=plan.ack_samples, warmup=plan.warmup, inline=inline) for inline in (False, True)
        ]
        rows = [c for report in acks for c in report.comparisons]
        worst = max(report.worst_ours for report in acks)
        data["ack"] = {
            "baseline": BASELINE,
            "comparisons": [c.as_dict() for c in rows],
            "worst_ours_ms": round(worst * 1000, 3),
            "slack_deadline_ms": SLACK_ACK_DEADLINE * 1000,
        }
        parts.append(table(rows, baseline_label=BASELINE))
        parts.append(f"slowest ack of ours: {worst * 1000:.1f} ms (Slack's limit: {SLACK_ACK_DEADLINE * 1000:.0f} ms)")
    if resume:
        from bench.resume_cost import BASELINE as RESUME_BASELINE
        from bench.resume_cost import measure_dynamodb, measure_sqlite

        reports = [await measure_sqlite(samples=plan.resume_samples, warmup=plan.warmup)]
        if dynamodb:
            reports.append(await measure_dynamodb(samples=plan.dynamodb_samples, warmup=plan.warmup))
        data["resume"] = {
            "baseline": RESUME_BASELINE,
            "backends": [
                {
                    "backend": r.backend,
                    "comparisons": [c.as_dict() for c in r.comparisons],
                    "snapshots": [s.as_dict() for s in r.sizes],
                }
                for r in reports
            ],
        }
        comparisons: list[Comparison] = [c for r in reports for c in r.comparisons]
        parts.append(table(comparisons, baseline_label=RESUME_BASELINE))
        sizes = [
            f"snapshot {s.graph} ({r.backend}): {s.raw_bytes} bytes raw, {s.stored_bytes} stored "
            f"({s.stored_bytes / s.raw_bytes:.0%})"
            for r in reports
            for s in r.sizes
        ]
        parts.append("\n".join(sizes))
    if cold_start:
        from bench.cold_start import measure_cold_start
        from bench.cold_start import text as cold_start_text

        report = await measure_cold_start(
            samples=plan.cold_start_samples, warmup=min(plan.warmup, 1), dynamodb=dynamodb, bytecode=not no_pyc
        )
        data["cold_start"] = report.as_dict()
        parts.append(cold_start_text(report))
    return Outcome(data=data, text="\n\n".join(parts))


def well_formed(data: dict[str, Any]) -> list[str]:
    """Problems with the numbers themselves (not with their size): what the smoke test checks."""
    problems: list[str] = []
    comparisons = list(data.get("ack", {}).get("comparisons", []))
    for backend in data.get("resume", {}).get("backends", []):
        comparisons += backend["comparisons"]
    for c in comparisons:
        for key in ("ratio", "p95_ratio", "ours_median_ms", "baseline_median_ms"):
            value = c[key]
            if not (isinstance(value, float | int) and math.isfinite(value) and value > 0):
                problems.append(f"{c['name']}: {key} = {value!r}")
    if "cold_start" in data:
        from bench.cold_start import well_formed as cold_start_well_formed

        problems += [f"cold start: {p}" for p in cold_start_well_formed(data["cold_start"])]
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few samples (< 15 s): a smoke run, not a measurement")
    parser.add_argument(
        "--dynamodb",
        action="store_true",
        help="also resume on DynamoDB (moto's server, in process); cold start: ours with DYNAMODB_TABLE at moto",
    )
    parser.add_argument("--only", choices=("ack", "resume", "cold-start"), help="run one benchmark")
    parser.add_argument(
        "--no-pyc", action="store_true", help="cold start: compile from source, as a sam-built Lambda package does"
    )
    parser.add_argument("--samples", type=int, help="samples per measurement (overrides the plan)")
    parser.add_argument("--write", action="store_true", help=f"write the results to {RESULTS}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    plan = Plan.of(quick=args.quick, samples=args.samples)
    started = time.perf_counter()
    outcome = asyncio.run(
        collect(
            plan=plan,
            ack=args.only in (None, "ack"),
            resume=args.only in (None, "resume"),
            dynamodb=args.dynamodb,
            cold_start=args.only in (None, "cold-start"),
            no_pyc=args.no_pyc,
        )
    )
    print(outcome.text)
    print(f"\n({time.perf_counter() - started:.1f} s; ratio = ours / baseline at the median, lower is better)")
    if args.write:
        RESULTS.write_text(json.dumps(outcome.data, indent=2) + "\n")
        print(f"wrote {RESULTS}")
    return 0
