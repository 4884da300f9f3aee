"""The cold-start section: the issue's handling ratio and the wall ratio, from at least 11 samples each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cold_start import HEAVY, MIN_RECORDED_SAMPLES, ColdStartReport, ImportProfile, Sample, markdown, write


def _sample(*, imports: float, handle: float) -> Sample:
    return Sample(
        wall=0.03 + imports + handle,
        startup=0.03,
        imports=imports,
        handle=handle,
        loaded=dict.fromkeys(HEAVY, False),
        modules=800,
        handle_imports=[],
        clients=["lambda"],
        service_models=["lambda"],
    )


def _report(samples: int) -> ColdStartReport:
    return ColdStartReport(
        ours=[_sample(imports=0.400, handle=0.006)] * samples,
        bare=[_sample(imports=0.200, handle=0.080)] * samples,
        store="SQLite",
        bare_auth="guide",
        bytecode=True,
        invocations={"ours": samples, "baseline": samples},
        auth_tests={"ours": 0, "baseline": samples},
        profiles={"ours": ImportProfile(entries=()), "baseline": ImportProfile(entries=())},
    )


def test_the_section_names_the_handling_ratio_and_the_wall_ratio(tmp_path: Path) -> None:
    report = _report(MIN_RECORDED_SAMPLES)
    assert report.handle.ratio == pytest.approx(0.075) and report.wall.ratio == pytest.approx(0.436 / 0.31)
    text = markdown(report, command="python -m bench.cold_start --write")
    assert "First event's handling (issue 23, item 3): **0.07**" in text and "target at most 1.15" in text
    assert "Wall time" in text and f"{MIN_RECORDED_SAMPLES} cold starts of each side" in text
    md, js = write(report, command="cmd", results=tmp_path)
    data = json.loads(js.read_text())
    assert md.read_text() == markdown(report, command="cmd")
    assert data["handle_ratio"] == 0.075 and data["samples"] == MIN_RECORDED_SAMPLES and data["produced_by"] == "cmd"


def test_fewer_than_eleven_cold_starts_are_not_recorded(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 11"):
        write(_report(MIN_RECORDED_SAMPLES - 1), command="cmd", results=tmp_path)
    assert not list(tmp_path.iterdir())
