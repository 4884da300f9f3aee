"""The issue-11 benchmarks (ack under load, cost of a cycle, resume against state size) still run
and measure real work.

Only shapes and invariants are checked, never times: every burst's runs started and clicks
took effect, a cycle completed and was counted, the state really went where the bucket
setting says. The one absolute bound is Slack's 3 s ack.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph_defs.registry import list_graphs, unregister

pytestmark = pytest.mark.long  # run with `python -m pytest -m long`


@pytest.fixture(autouse=True)
def forget_bench_graphs() -> Iterator[None]:
    """The benches register their graphs globally; later tests must not see them in ``/graph list``.

    The modules that defined them are forgotten too, so a later import registers them again.
    """
    before = {d.name for d in list_graphs()}
    yield
    for definition in list_graphs():
        if definition.name not in before:
            unregister(definition.name)
            sys.modules.pop(definition.module, None)


async def test_ack_under_load_measures_every_request_of_every_burst() -> None:
    from bench.ack_latency import SLACK_ACK_DEADLINE
    from bench.ack_load import measure_ack_under_load

    report = await measure_ack_under_load(clients=12, rounds=2, warmup=1)

    names = [c.name for c in report.comparisons]
    assert names == [
        "12 clients: /graph help",
        "12 clients: /graph run bench-ask",
        "12 clients: Approve click",
        "12 clients: all",
    ]
    every = report.comparisons[-1]
    assert len(every.ours.samples) == len(every.baseline.samples) == 12 * 2
    assert sum(len(c.ours.samples) for c in report.comparisons[:-1]) == 12 * 2
    assert report.runs_started == report.clicks_applied == 4 * 3  # a third of each burst, warm-up included
    for c in report.comparisons:
        for value in (c.ratio, c.p99_ratio, c.ours.p99, c.baseline.p99):
            assert math.isfinite(value) and value > 0, c.as_dict()
        assert c.ours.p99 >= c.ours.median and c.baseline.p99 >= c.baseline.median
    assert report.worst_ours < SLACK_ACK_DEADLINE

    control = await measure_ack_under_load(clients=12, rounds=1, warmup=0, help_only=True)
    assert [c.name for c in control.comparisons] == ["12 clients: all (help only)"]
    assert len(control.comparisons[0].ours.samples) == 12
    assert control.runs_started == control.clicks_applied == 0


async def test_steady_traffic_with_a_worker_process_measures_its_work_taking_effect() -> None:
    """``--workers``: the runs and clicks happen in a worker process, and each burst is
    measured once they took effect (the bench checks every card against them)."""
    from bench.ack_load import measure_ack_under_load

    report = await measure_ack_under_load(clients=6, rounds=1, warmup=1, chain=2, workers=1)

    every = report.comparisons[-1]
    assert every.name == "6 clients: all (steady: 2 bursts back to back) (1 worker)"
    assert len(every.ours.samples) == 6, "the chain's first burst is left out"
    assert report.runs_started == report.clicks_applied == 2 * 2 * 2  # a third of 6, 2 bursts, 2 rounds
    assert report.workers == 1


async def test_one_cycle_is_counted_and_the_bucket_takes_the_state(tmp_path: Path) -> None:
    from bench.cycle_cost import markdown, measure

    chunks, s3 = await measure(sizes=["120 KB"], buckets=(False, True))

    for cycle in (chunks, s3):
        assert cycle.completed, cycle
        assert cycle.unmetered == 0
        assert cycle.raw_state_bytes > 120_000 and cycle.stored_state_bytes > 80_000
        assert cycle.dynamodb.get("UpdateItem", 0) > 0 and cycle.dynamodb.get("PutItem", 0) > 0
        assert cycle.write_units > 0
        assert cycle.slack.get("chat.postMessage", 0) >= 3, cycle.slack  # announcement, card, final
        assert cycle.slack.get("chat.update", 0) >= 1, cycle.slack  # the card, answered
    assert chunks.state_kind == "chunks" and chunks.s3 == {}
    assert chunks.write_units >= chunks.stored_state_bytes / 1024  # the state is billed once, by size
    assert s3.state_kind == "s3" and s3.s3.get("PUT", 0) >= 1 and s3.s3.get("GET", 0) >= 1
    assert s3.write_units < chunks.write_units / 4  # with a bucket DynamoDB keeps only small records
    text = markdown([chunks, s3], command="test")
    assert text.startswith("## ") and text.count("| 120 KB |") == 2


async def test_resume_against_state_size_reports_every_size_and_store() -> None:
    from bench.resume_size import markdown, measure, rows

    sizes = ["10 KB", "1 MB"]
    table = rows(await measure(sizes=sizes, samples=2, warmup=0), sizes=sizes)

    assert [(r["backend"], r["state"]) for r in table] == [
        ("sqlite", "10 KB"),
        ("sqlite", "1 MB"),
        ("dynamodb", "10 KB"),
        ("dynamodb", "1 MB"),
    ]
    for r in table:
        assert r["raw_bytes"] > {"10 KB": 10_000, "1 MB": 1_000_000}[r["state"]], r
        assert 0 < r["stored_bytes"] < r["raw_bytes"], r
        for key in ("ratio", "p95_ratio", "ours_median_ms", "baseline_median_ms"):
            assert math.isfinite(r[key]) and r[key] > 0, r
        assert math.isfinite(r["overhead_ms"])
    assert markdown(table, command="test", samples=2).startswith("## ")
