"""Summaries of paired samples: medians, 95th percentiles and the ratio between two series.

Ratios are taken between medians (and between p95s) of series sampled interleaved in the
same process, so machine-wide noise hits both sides alike and mostly cancels out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: a value that was really observed, no interpolation.

    With the few dozen samples a bench takes, interpolating between the two largest
    values would invent a latency nobody saw.
    """
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True, kw_only=True)
class Series:
    """One side of a comparison, in seconds."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 0.95)

    @property
    def p99(self) -> float:
        return percentile(self.samples, 0.99)


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Ours against a baseline that did the same job in the same process, interleaved."""

    name: str
    ours: Series
    baseline: Series

    @property
    def ratio(self) -> float:
        """ours / baseline at the median: 1.0 means no overhead, 2.0 twice the time."""
        return self.ours.median / self.baseline.median

    @property
    def p95_ratio(self) -> float:
        return self.ours.p95 / self.baseline.p95

    @property
    def p99_ratio(self) -> float:
        return self.ours.p99 / self.baseline.p99

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "name": self.name,
            "samples": len(self.ours.samples),
            "ours_median_ms": round(self.ours.median * 1000, 3),
            "ours_p95_ms": round(self.ours.p95 * 1000, 3),
            "baseline_median_ms": round(self.baseline.median * 1000, 3),
            "baseline_p95_ms": round(self.baseline.p95 * 1000, 3),
            "ratio": round(self.ratio, 3),
            "p95_ratio": round(self.p95_ratio, 3),
            "ours_p99_ms": round(self.ours.p99 * 1000, 3),
            "baseline_p99_ms": round(self.baseline.p99 * 1000, 3),
            "p99_ratio": round(self.p99_ratio, 3),
        }


def compare(*, name: str, ours: Sequence[float], baseline: Sequence[float]) -> Comparison:
    if len(ours) != len(baseline) or not ours:
        raise ValueError(f"{name}: need the same, non-zero number of samples on both sides")
    return Comparison(name=name, ours=Series(samples=tuple(ours)), baseline=Series(samples=tuple(baseline)))


def table(rows: Sequence[Comparison], *, baseline_label: str) -> str:
    """A plain-text table: milliseconds for context, then the ratios (what to compare)."""
    columns = ("n", "ours med", "ours p95", "base med", "base p95", "ratio", "p95 r")
    widths = (3, 9, 9, 9, 9, 6, 6)
    header = f"{'measurement':<34} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True))
    lines = [f"baseline: {baseline_label}", header, "-" * len(header)]
    for row in rows:
        ms = [row.ours.median, row.ours.p95, row.baseline.median, row.baseline.p95]
        cells = [f"{len(row.ours.samples):>3}", *(f"{v * 1000:>9.2f}" for v in ms)]
        cells += [f"{row.ratio:>6.2f}", f"{row.p95_ratio:>6.2f}"]
        lines.append(f"{row.name:<34} " + " ".join(cells))
    return "\n".join(lines)
