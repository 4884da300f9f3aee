"""``bench.peers`` still measures our side of the cycle, through the very code path of the benchmark.

Only ours runs here (the peers are an optional extra, in a venv of their own): a first pass
and a fresh-process resume at the smallest state, with and without a bucket, then two fresh
processes racing to resume one approved pause. What must hold on any machine: every phase
sent DynamoDB requests that were priced, the side effect ran once per cycle, and exactly
once under two concurrent resumers. Never a time.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.long  # run with `python -m pytest -m long`


def test_our_approval_cycle_is_counted_and_resumes_exactly_once(tmp_path: object) -> None:
    from pathlib import Path

    from bench.peers.cycle import measure
    from bench.peers.report import markdown, totals, write

    measured = measure(systems=["ours"], sizes={"1 KB": 1024}, buckets=(False, True))

    assert [(c["system"], c["bucket"]) for c in measured["cycles"]] == [("ours", False), ("ours", True)]
    for cycle in measured["cycles"]:
        assert cycle["start"]["ok"] and cycle["resume"]["ok"], cycle
        for phase in ("start", "resume"):
            usage = cycle[phase]["usage"]
            assert sum(usage["dynamodb"].values()) > 0 and usage["write_units"] > 0, (phase, usage)
            assert usage["unmetered"] == 0
        assert cycle["side_effect_runs"] == 1
        t = totals(cycle)
        assert t["dynamodb_requests"] == sum(t["dynamodb_requests_by_phase"]) > 0
        assert t["slack_calls"].get("chat.postMessage (card)") == 1
        assert t["slack_calls"].get("chat.postMessage (final)") == 1

    (race,) = measured["races"]
    assert race["ok"], race
    assert race["side_effect_runs"] == 1
    assert len(race["resumers"]) == 2 and all(r["ok"] for r in race["resumers"]), race

    md, js = write(measured, out_dir=Path(str(tmp_path)))
    assert md.read_text(encoding="utf-8").startswith("## ")
    assert "| ours | 1 KB | none |" in markdown(measured)
    assert js.stat().st_size > 0
