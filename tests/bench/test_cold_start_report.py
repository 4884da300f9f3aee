"""The cold-start section: what Slack waits for (the wall ratio) first, the issue's handling ratio
beside it with why it is low, the localhost caveat, and at least 11 samples each."""

from __future__ import annotations

import dataclasses
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
        secrets_read=True,
        secret_reads={"ours": samples, "baseline": 0},
        profiles={"ours": ImportProfile(entries=()), "baseline": ImportProfile(entries=())},
    )


def test_the_section_leads_with_what_slack_waits_for_and_says_why_the_handling_ratio_is_low(
    tmp_path: Path,
) -> None:
    report = _report(MIN_RECORDED_SAMPLES)
    assert report.handle.ratio == pytest.approx(0.075) and report.wall.ratio == pytest.approx(0.436 / 0.31)
    text = markdown(report, command="python -m bench.cold_start --write")
    headline = text.index("**What Slack waits for on a cold start**")
    assert text.index("**1.41x**") > headline and "target at most 1.3: not met" in text
    handling = text.index("first event's handling: **0.07**")
    assert headline < handling < text.index("| measurement |") and "target at most 1.15: met" in text
    assert "moved into Lambda's init phase" in text and "provisioned concurrency" in text
    assert "The network is localhost" in text and "not measured here" in text
    assert "Secrets Manager in its init phase (`SLACK_SECRET_ARN`" in text
    assert f"{MIN_RECORDED_SAMPLES} cold starts of each side" in text
    md, js = write(report, command="cmd", results=tmp_path)
    data = json.loads(js.read_text())
    assert md.read_text() == markdown(report, command="cmd")
    assert data["handle_ratio"] == 0.075 and data["samples"] == MIN_RECORDED_SAMPLES and data["produced_by"] == "cmd"
    assert data["secret_reads"] == {"ours": MIN_RECORDED_SAMPLES, "baseline": 0}
    assert "Secrets Manager" in data["slack_secrets"]


def test_a_run_with_plain_secrets_says_it_left_the_read_out() -> None:
    report = dataclasses.replace(_report(MIN_RECORDED_SAMPLES), secrets_read=False, secret_reads={})
    assert "`--plain-secrets`: the deployed function reads them from Secrets Manager" in markdown(report, command="c")
    assert "--plain-secrets" in report.as_dict()["slack_secrets"]


def test_fewer_than_eleven_cold_starts_are_not_recorded(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 11"):
        write(_report(MIN_RECORDED_SAMPLES - 1), command="cmd", results=tmp_path)
    assert not list(tmp_path.iterdir())
