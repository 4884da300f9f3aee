"""The benchmarks still run and produce numbers that mean something.

Only the shape of the results is checked (positive, finite ratios), never their size:
this machine is shared and noisy, and ratio thresholds would make the suite flaky. The
one absolute bound is Slack's: an ack later than 3 s is a failed request, on any machine.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from bench.run import Plan, collect, well_formed
from graph_defs.registry import unregister

pytestmark = pytest.mark.long  # run with `python -m pytest -m long`


@pytest.fixture(autouse=True)
def forget_bench_graphs() -> Iterator[None]:
    """The bench registers its graphs globally; later tests must not see them in ``/graph list``."""
    yield
    from bench.graphs import CHATTY, SMALL

    for name in (SMALL, CHATTY):
        unregister(name)


async def test_quick_benchmarks_produce_well_formed_ratios() -> None:
    outcome = await collect(plan=Plan.of(quick=True, samples=3), dynamodb=True)
    data = outcome.data

    assert well_formed(data) == []
    ack_names = [c["name"] for c in data["ack"]["comparisons"]]
    assert len(ack_names) == 6, ack_names  # help, run, click; as served and inline
    assert data["ack"]["worst_ours_ms"] < data["ack"]["slack_deadline_ms"]  # Slack's 3 s contract
    backends = {b["backend"]: b for b in data["resume"]["backends"]}
    assert set(backends) == {"sqlite", "dynamodb"}
    for backend in backends.values():
        assert len(backend["comparisons"]) == 2
        for size in backend["snapshots"]:
            assert 0 < size["stored_bytes"] <= size["raw_bytes"] + 1, size
    assert all(math.isfinite(c["ratio"]) for c in data["ack"]["comparisons"])
    assert "ratio" in outcome.text


async def test_cold_start_produces_a_well_formed_result() -> None:
    """One cold start of each handler in a fresh interpreter: only the result's shape is checked."""
    outcome = await collect(plan=Plan.of(quick=True, samples=1), ack=False, resume=False, cold_start=True)
    data = outcome.data

    assert well_formed(data) == []
    cold = data["cold_start"]
    assert [c["samples"] for c in cold["comparisons"]] == [1] * len(cold["comparisons"])
    # warm-up, the sample and the -X importtime run each handed their work to a self-invocation
    assert cold["self_invocations"] == {"ours": 3, "baseline": 3}
    assert cold["boto3_clients"]["ours"] == ["lambda"]  # the handoff's, and no DynamoDB client
    assert cold["dynamodb_client_created"] is False
    assert "cold-start ratio" in outcome.text


def test_a_listing_costs_the_same_requests_whatever_the_table_size() -> None:
    from bench.listing_cost import measure

    report = measure(small=50, large=500, samples=3)
    assert [c.name for c in report.comparisons] == [
        "sqlite: 500 runs vs 50",
        "dynamodb (moto): 500 runs vs 50",
        "moto's bare index query: 500 vs 50",
    ]
    assert all(math.isfinite(c.ratio) and c.ratio > 0 for c in report.comparisons)
    small, large = report.requests.values()
    assert small == large == {"Query": 1, "BatchGetItem": 1}, report.requests
