"""The report stitches the sections that exist, in order, and names those not run yet."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from bench.report import SECTIONS, render


def test_sections_in_order_and_the_missing_ones_named_with_their_command(tmp_path: Path) -> None:
    (tmp_path / "scale.md").write_text("## Scale\n\n| runs | ratio |\n|---|---|\n| 1000 | 1.1 |\n")
    (tmp_path / "ack.md").write_text("## Ack latency under load\n\np99 ratio 1.05\n")

    report = render(today=dt.date(2026, 11, 23), results=tmp_path)

    assert report.startswith("# Benchmark and reliability report")
    assert "2026-11-23" in report and "cores" in report and "strands-agents" in report
    assert report.index("p99 ratio 1.05") < report.index("| 1000 | 1.1 |"), "the fixed order: ack before scale"
    missing = report[report.index("## Not run yet") :]
    for section in SECTIONS:
        if section.name in ("ack", "scale"):
            assert section.command not in missing
        else:
            assert f"{section.title}: `{section.command}`" in missing


def test_nothing_run_yet_is_said_not_hidden(tmp_path: Path) -> None:
    report = render(today=dt.date(2026, 11, 23), results=tmp_path)
    assert report.count("\n- ") >= len(SECTIONS)
    assert "## Not run yet" in report
