"""Every measured figure the docs quote, computed from ``bench/results/*.json``.

A doc quotes a figure by writing it followed by a marker, ``9<!-- figure: cost.cycle.requests -->``
(invisible once rendered); ``tests/docs/test_figures.py`` checks that the number right before
each marker is what :data:`FIGURES` computes from the results, formatted the same way. When a
benchmark is re-run and a result moves, that test names every sentence that must change. Dollar
figures are computed here from the results and the prices in :data:`PRICES`, which the docs
state beside them (and which are figures too, so the two cannot part).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"

Results = dict[str, Any]

# A person's very first start also creates their small start-limit item: one PutItem more,
# of one write unit (tests/persistence/test_start_counts.py); a later start only updates it.
# bench/cycle_cost.py measures a fresh table, so its cycle includes that first start.
FIRST_START_UNITS = 1

# us-east-1 on-demand list prices, as docs/deploy.md states them beside the dollar figures.
PRICES = {
    "lambda_requests_per_million": 0.20,
    "lambda_arm_gb_second": 0.0000133334,
    "dynamodb_wru_per_million": 0.625,
    "dynamodb_rru_per_million": 0.125,
}
# docs/deploy.md's stated assumptions for one approval cycle on Lambda.
FUNCTION_GB = 1769 / 1024
LAMBDA_INVOCATIONS = 4  # the command's ack, its work, the click's ack, its work (tests/e2e/test_lambda.py)
LAMBDA_SECONDS = 2 * 0.3 + 2 * 1.0  # 0.3 s per ack, 1 s per worker apart from model calls


@cache
def results(name: str) -> Any:
    return json.loads((RESULTS / f"{name}.json").read_text())


def _cycle(size: str, *, bucket: bool) -> Results:
    return next(c for c in results("cost")["cycles"] if c["size"] == size and c["bucket"] is bucket)


def _requests(size: str, *, bucket: bool) -> int:
    return sum(_cycle(size, bucket=bucket)["dynamodb"].values())


def _later_requests() -> int:
    """The 1 KB cycle of a person who started before: the first start's extra PutItem taken off."""
    cycle = _cycle("1 KB", bucket=False)
    run_creates = 1
    return _requests("1 KB", bucket=False) - (cycle["dynamodb"]["PutItem"] - run_creates)


def _later_units() -> int:
    cycle = _cycle("1 KB", bucket=False)
    extra_puts = cycle["dynamodb"]["PutItem"] - 1
    return int(cycle["write_units"]) - extra_puts * FIRST_START_UNITS


def _peer(system: str, size: str = "1 KB", *, bucket: bool = False) -> Results:
    return next(
        t for t in results("peers")["totals"] if t["system"] == system and t["size"] == size and t["bucket"] is bucket
    )


def _race_runs(system: str) -> int:
    return int(next(r for r in results("peers")["races"] if r["system"] == system)["side_effect_runs"])


def _comparisons(section: str, *, inline: bool) -> list[Results]:
    rows = results("ack")[section]["comparisons"]
    return [r for r in rows if ("[inline]" in r["name"]) is inline]


def _load(name: str) -> Results:
    return next(r for r in results("ack")["load"]["comparisons"] if r["name"] == name)


def _steady_all() -> Results:
    return next(r for r in results("ack")["load"]["steady"] if r["name"].startswith("50 clients: all"))


def _steady_workers_all() -> Results:
    """The steady-traffic row of ``approval-bot serve --workers`` (``bench/ack_load.py``)."""
    rows = results("ack")["load"]["steady_workers"]["comparisons"]
    return next(r for r in rows if r["name"].startswith("50 clients: all"))


def _faults(key: str) -> int:
    return sum(int(run[key]) for run in results("faults"))


# Not a fault injected but what an outage did: a start answered "Nothing was recorded", typed again.
_CONSEQUENCES = ("starts refused",)


def _injected(kind: Callable[[str], bool]) -> int:
    return sum(
        n
        for run in results("faults")
        for name, n in run["faults"].items()
        if kind(name) and not name.startswith(_CONSEQUENCES)
    )


def _refused_starts() -> int:
    return sum(n for run in results("faults") for name, n in run["faults"].items() if name.startswith(_CONSEQUENCES))


def _store_faults(backend: str) -> Results:
    return next(run for run in results("faults") if run["backend"] == backend)


def _fuzz(key: str) -> int:
    return sum(int(part[key]) for part in results("fuzz")["fuzz"].values())


def _scale(backend: str) -> Results:
    return results("scale")["backends"][backend]


def _bot_listing_ratios(backend: str) -> list[float]:
    """The bot's own listings (not moto's bare query, measured beside them)."""
    return [r["ratio"] for r in _scale(backend)["listings"] if not r["name"].startswith("moto")]


def _listing_requests(listing: str) -> int:
    """DynamoDB requests of one listing, the same with 1,000 waiting runs as with 10."""
    sizes = results("scale")["backends"]["dynamodb"]["listing_requests"][listing]
    large, small = (sum(sizes[size].values()) for size in ("large", "small"))
    assert large == small, f"{listing}: {small} requests at the small size, {large} at the large"
    return int(large)


def _inbox(name: str) -> Results:
    return next(r for r in results("scale")["inbox"]["comparisons"] if r["name"] == name)


def _resume_overheads(backend: str) -> list[float]:
    return [r["overhead_ms"] for r in results("resume")["rows"] if r["backend"] == backend]


def _snapshots(*, handoff: bool) -> list[Results]:
    return [r for r in results("snapshots")["rows"] if r["case"].startswith("handoff") is handoff]


def _dynamodb_dollars() -> float:
    return _later_units() * PRICES["dynamodb_wru_per_million"] / 1e6


def _lambda_request_dollars() -> float:
    return LAMBDA_INVOCATIONS * PRICES["lambda_requests_per_million"] / 1e6


def _lambda_duration_dollars() -> float:
    return LAMBDA_SECONDS * FUNCTION_GB * PRICES["lambda_arm_gb_second"]


def _cycle_dollars() -> float:
    return _dynamodb_dollars() + _lambda_request_dollars() + _lambda_duration_dollars()


def whole(value: float) -> str:
    """A count as the docs write it: 1,214."""
    return f"{round(value):,}"


def dec(places: int) -> Callable[[float], str]:
    return lambda value: f"{value:,.{places}f}"


def _kib(value: float) -> str:
    return f"{value / 1024:,.1f}"


FIGURES: dict[str, tuple[Callable[[], float], Callable[[float], str]]] = {
    # One approval cycle through the real bot (bench/results/cost.json).
    "cost.cycle.requests": (_later_requests, whole),
    "cost.cycle.write_units": (_later_units, whole),
    "cost.first.requests": (lambda: _requests("1 KB", bucket=False), whole),
    "cost.first.write_units": (lambda: _cycle("1 KB", bucket=False)["write_units"], whole),
    "cost.first.extra_requests": (lambda: _requests("1 KB", bucket=False) - _later_requests(), whole),
    "cost.index_write_units": (lambda: _cycle("1 KB", bucket=False)["index_write_units"], whole),
    "cost.1kb.read_units": (lambda: _cycle("1 KB", bucket=False)["read_units"], dec(1)),
    "cost.1kb.stored_kb": (lambda: _cycle("1 KB", bucket=False)["stored_state_bytes"], _kib),
    "cost.120kb.requests": (lambda: _requests("120 KB", bucket=False), whole),
    "cost.120kb.write_units": (lambda: _cycle("120 KB", bucket=False)["write_units"], whole),
    "cost.120kb.read_units": (lambda: _cycle("120 KB", bucket=False)["read_units"], dec(1)),
    "cost.120kb.stored_kb": (lambda: _cycle("120 KB", bucket=False)["stored_state_bytes"] / 1024, whole),
    "cost.1.6mb.requests": (lambda: _requests("1.6 MB", bucket=False), whole),
    "cost.1.6mb.write_units": (lambda: _cycle("1.6 MB", bucket=False)["write_units"], whole),
    "cost.1.6mb.read_units": (lambda: _cycle("1.6 MB", bucket=False)["read_units"], dec(1)),
    "cost.1.6mb.stored_mb": (lambda: _cycle("1.6 MB", bucket=False)["stored_state_bytes"] / 1048576, dec(1)),
    "cost.bucket.requests": (lambda: _requests("1.6 MB", bucket=True), whole),
    "cost.bucket.write_units": (lambda: _cycle("1.6 MB", bucket=True)["write_units"], whole),
    "cost.bucket.read_units": (lambda: _cycle("1.6 MB", bucket=True)["read_units"], dec(1)),
    "cost.bucket.s3_requests": (lambda: sum(_cycle("1.6 MB", bucket=True)["s3"].values()), whole),
    "cost.slack_calls": (lambda: sum(_cycle("1 KB", bucket=False)["slack"].values()), whole),
    "cost.slack_calls_warm": (
        lambda: sum(n for m, n in _cycle("1 KB", bucket=False)["slack"].items() if m != "auth.test"),
        whole,
    ),
    # Dollars: the measured write units at the prices stated beside them (docs/deploy.md).
    "price.lambda_requests": (lambda: PRICES["lambda_requests_per_million"], dec(2)),
    "price.lambda_gb_second": (lambda: PRICES["lambda_arm_gb_second"], dec(10)),
    "price.dynamodb_wru": (lambda: PRICES["dynamodb_wru_per_million"], dec(3)),
    "price.dynamodb_rru": (lambda: PRICES["dynamodb_rru_per_million"], dec(3)),
    "dollars.cycle.dynamodb": (_dynamodb_dollars, dec(7)),
    "dollars.cycle.lambda_requests": (_lambda_request_dollars, dec(7)),
    "dollars.cycle.lambda_duration": (_lambda_duration_dollars, dec(7)),
    "dollars.cycle.total": (_cycle_dollars, dec(6)),
    "dollars.per_1000_cycles": (lambda: 1000 * _cycle_dollars(), dec(2)),
    # Beside the peers (bench/results/peers.json): the engine alone, as the peers are libraries.
    "peers.ours.requests": (lambda: _peer("ours")["dynamodb_requests"], whole),
    "peers.ours.write_units": (lambda: _peer("ours")["write_units"], whole),
    "peers.ours.120kb.write_units": (lambda: _peer("ours", "120 KB")["write_units"], whole),
    "peers.langgraph.requests": (lambda: _peer("langgraph")["dynamodb_requests"], whole),
    "peers.langgraph.write_units": (lambda: _peer("langgraph")["write_units"], whole),
    "peers.langgraph_z.write_units": (lambda: _peer("langgraph-z")["write_units"], whole),
    "peers.langgraph.120kb.write_units": (lambda: _peer("langgraph", "120 KB")["write_units"], whole),
    "peers.langgraph_z.120kb.write_units": (lambda: _peer("langgraph-z", "120 KB")["write_units"], whole),
    "peers.strands.requests": (lambda: _peer("strands")["dynamodb_requests"], whole),
    "peers.strands.write_units": (lambda: _peer("strands")["write_units"], whole),
    "peers.strands_z.write_units": (lambda: _peer("strands-z")["write_units"], whole),
    "peers.strands.120kb.write_units": (lambda: _peer("strands", "120 KB")["write_units"], whole),
    "peers.strands_z.120kb.write_units": (lambda: _peer("strands-z", "120 KB")["write_units"], whole),
    "peers.race.ours": (lambda: _race_runs("ours"), whole),
    "peers.race.langgraph": (lambda: _race_runs("langgraph"), whole),
    "peers.race.strands": (lambda: _race_runs("strands"), whole),
    # Acks (bench/results/ack.json).
    "ack.served.ratio.min": (lambda: min(r["ratio"] for r in _comparisons("sequential", inline=False)), dec(2)),
    "ack.served.ratio.max": (lambda: max(r["ratio"] for r in _comparisons("sequential", inline=False)), dec(2)),
    "ack.inline.ratio.min": (lambda: min(r["ratio"] for r in _comparisons("sequential", inline=True)), dec(2)),
    "ack.inline.ratio.max": (lambda: max(r["ratio"] for r in _comparisons("sequential", inline=True)), dec(2)),
    "ack.burst.p99_ratio": (lambda: _load("50 clients: all")["p99_ratio"], dec(2)),
    "ack.burst.inline.p99_ratio": (lambda: _load("50 clients: all [inline]")["p99_ratio"], dec(2)),
    "ack.burst.p99_goal": (lambda: results("ack")["load"]["p99_goal"], dec(1)),
    "ack.steady.p99_ms": (lambda: _steady_all()["ours_p99_ms"], whole),
    "ack.steady.baseline_p99_ms": (lambda: _steady_all()["baseline_p99_ms"], whole),
    "ack.steady.p99_ratio": (lambda: results("ack")["load"]["steady_p99_ratio"], dec(1)),
    "ack.steady.worst_ms": (lambda: results("ack")["load"]["steady_worst_ours_ms"], whole),
    "ack.steady.workers.p99_ms": (lambda: _steady_workers_all()["ours_p99_ms"], whole),
    "ack.steady.workers.baseline_p99_ms": (lambda: _steady_workers_all()["baseline_p99_ms"], whole),
    "ack.steady.workers.p99_ratio": (lambda: results("ack")["load"]["steady_workers"]["p99_ratio"], dec(2)),
    "ack.steady.workers.p99_goal": (lambda: results("ack")["load"]["steady_workers"]["p99_goal"], dec(1)),
    # The Lambda cold ack as deployed (bench/results/cold.json: ours reading its Slack secret).
    "cold.wall_ratio": (lambda: results("cold")["ratio"], dec(2)),
    "cold.handle_ratio": (lambda: results("cold")["handle_ratio"], dec(2)),
    "cold.worst_ms": (lambda: results("cold")["worst_ours_ms"], whole),
    "cold.median_s": (lambda: results("cold")["comparisons"][0]["ours_median_ms"] / 1000, dec(1)),
    "cold.samples": (lambda: results("cold")["samples"], whole),
    # Resume against state size (bench/results/resume.json).
    "resume.sqlite.min_ms": (lambda: min(_resume_overheads("sqlite")), dec(1)),
    "resume.sqlite.max_ms": (lambda: max(_resume_overheads("sqlite")), whole),
    # Stored state size (bench/results/snapshots.json).
    "snapshots.handoff.zlib_bytes": (lambda: _snapshots(handoff=True)[0]["zlib_bytes"], whole),
    "snapshots.handoff.stored_bytes": (lambda: _snapshots(handoff=True)[0]["stored_bytes"], whole),
    "snapshots.handoff.ratio": (lambda: _snapshots(handoff=True)[0]["ratio"], dec(2)),
    "snapshots.others.size_ratio.max": (lambda: max(r["ratio"] for r in _snapshots(handoff=False)), dec(2)),
    "snapshots.others.cpu_ratio.max": (
        lambda: max(
            r["compress_ms"] / r["zlib_compress_ms"] for r in _snapshots(handoff=False) if r["zlib_compress_ms"] >= 1
        ),
        dec(2),
    ),
    # The inbox and scale (bench/results/scale.json).
    "inbox.sqlite.ratio": (lambda: _inbox("sqlite inbox: 10,000 vs 100")["ratio"], dec(2)),
    "inbox.dynamodb.queries": (
        lambda: results("scale")["inbox"]["requests"]["dynamodb 10,000 runs, inbox"]["Query"],
        whole,
    ),
    "inbox.dynamodb.net_ratio": (
        lambda: results("scale")["inbox"]["net_of_moto"]["dynamodb (moto) inbox: 10,000 vs 100"],
        dec(2),
    ),
    "inbox.dynamodb.raw_ratio": (lambda: _inbox("dynamodb (moto) inbox: 10,000 vs 100")["ratio"], dec(2)),
    "scale.sqlite.listing_ratio.min": (lambda: min(r["ratio"] for r in _scale("sqlite")["listings"]), dec(2)),
    "scale.sqlite.listing_ratio.max": (lambda: max(r["ratio"] for r in _scale("sqlite")["listings"]), dec(2)),
    "scale.dynamodb.listing_ratio.min": (lambda: min(_bot_listing_ratios("dynamodb")), dec(1)),
    "scale.dynamodb.listing_ratio.max": (lambda: max(_bot_listing_ratios("dynamodb")), dec(1)),
    "scale.listing.requests": (lambda: _listing_requests("/graph runs"), whole),
    "scale.sqlite.sweep_ms": (lambda: _scale("sqlite")["sweep"]["comparison"]["ours_median_ms"], dec(1)),
    "scale.sqlite.rss_mib": (lambda: _scale("sqlite")["rss_kib_idle"]["large"] / 1024, whole),
    "scale.burst.sqlite.p99_ms": (lambda: _scale("sqlite")["burst"]["ack_p99_ms"], whole),
    "scale.burst.dynamodb.p99_ms": (lambda: _scale("dynamodb")["burst"]["ack_p99_ms"], whole),
    "scale.burst.sqlite.seconds": (lambda: _scale("sqlite")["burst"]["seconds_to_last_card"], dec(1)),
    "scale.burst.dynamodb.seconds": (lambda: _scale("dynamodb")["burst"]["seconds_to_last_card"], dec(1)),
    # The long fault sweep (bench/results/faults.json).
    "faults.runs": (lambda: _faults("runs"), whole),
    "faults.injected": (lambda: _injected(lambda kind: True), whole),
    "faults.dynamodb_faults": (lambda: _injected(lambda kind: kind.startswith("dynamodb ")), whole),
    "faults.slack_faults": (lambda: _injected(lambda kind: kind.startswith("slack ")), whole),
    "faults.slack_timeouts": (lambda: _injected(lambda kind: kind == "slack timeout"), whole),
    "faults.sigkills": (lambda: _injected(lambda kind: kind.startswith("SIGKILL")), whole),
    "faults.starts_refused": (lambda: _refused_starts(), whole),
    "faults.completed": (lambda: _faults("runs_completed"), whole),
    "faults.decisions": (lambda: _faults("decisions"), whole),
    "faults.dynamodb.acks": (lambda: _store_faults("dynamodb")["acks"], whole),
    "faults.sqlite.acks": (lambda: _store_faults("sqlite")["acks"], whole),
    "faults.dynamodb.slowest_ack_s": (lambda: _store_faults("dynamodb")["slowest_ack"], dec(2)),
    "faults.sqlite.slowest_ack_s": (lambda: _store_faults("sqlite")["slowest_ack"], dec(2)),
    "faults.dynamodb.completed": (lambda: _store_faults("dynamodb")["runs_completed"], whole),
    "faults.sqlite.completed": (lambda: _store_faults("sqlite")["runs_completed"], whole),
    "faults.decisions_lost": (lambda: _faults("decisions_lost"), whole),
    "faults.side_effects_doubled": (lambda: _faults("side_effects_doubled"), whole),
    "faults.runs_stuck": (lambda: _faults("runs_stuck"), whole),
    "faults.live_cards": (lambda: _faults("live_cards_for_gone_asks"), whole),
    "faults.acks_over_3s": (lambda: _faults("acks_over_3s"), whole),
    "faults.acks": (lambda: _faults("acks"), whole),
    "faults.slowest_ack_s": (lambda: max(run["slowest_ack"] for run in results("faults")), dec(2)),
    "faults.per_store_runs": (lambda: results("faults")[0]["runs"], whole),
    # Fuzzing the real process (bench/results/fuzz.json).
    "fuzz.examples": (lambda: _fuzz("examples"), whole),
    "fuzz.http_examples": (lambda: results("fuzz")["fuzz"]["HTTP (approval-bot serve)"]["examples"], whole),
    "fuzz.unsigned": (lambda: _fuzz("unsigned or badly signed"), whole),
    "fuzz.forgeries": (lambda: _fuzz("of which forgeries aimed at the real question"), whole),
    "fuzz.5xx": (lambda: _fuzz("5xx"), whole),
    "fuzz.state_changes": (lambda: _fuzz("state changes from bad input"), whole),
}

_DEPLOYMENTS = {
    "http": "HTTP (approval-bot serve)",
    "socket": "Socket Mode (approval-bot socket)",
    "lambda": "Lambda (Function URL events)",
}
_FUZZ_FIELDS = {
    "examples": "examples",
    "unsigned": "unsigned or badly signed",
    "forgeries": "of which forgeries aimed at the real question",
}
for _short, _deployment in _DEPLOYMENTS.items():
    for _field, _key in _FUZZ_FIELDS.items():
        FIGURES[f"fuzz.{_short}.{_field}"] = (
            lambda d=_deployment, k=_key: results("fuzz")["fuzz"][d][k],
            whole,
        )

# The test suite as the README's second command runs it (bench/results/suite.json).
FIGURES["suite.tests"] = (lambda: round(results("suite")["tests"], -1), whole)
FIGURES["suite.minutes"] = (lambda: -(-results("suite")["seconds"] // 60), whole)

# The Lambda package of an `approval-bot init` project (bench/results/package.json, which
# .ci/package-check measures and holds within a few MB of the build it makes).
FIGURES["package.arm64_mb"] = (lambda: results("package")["arm64_mb"], dec(1))
for _part in results("package")["largest"]:
    FIGURES[f"package.{_part['name']}_mb"] = (lambda n=_part["name"]: _package_part(n), dec(1))


def _package_part(name: str) -> float:
    return float(next(p["mb"] for p in results("package")["largest"] if p["name"] == name))


def expected(key: str) -> str:
    compute, show = FIGURES[key]
    return show(compute())
