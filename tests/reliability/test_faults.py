"""Random faults at the HTTP level, from a seed, against the real bot: no decision lost, nothing run twice.

Hand-written fault tests (tests/e2e/test_store_faults.py, test_slack_faults.py,
test_crash_points.py) each prove one failure at one moment. Here a seeded schedule mixes
them over many runs of graphs of every shape (tool interrupt, hook gate, node gate,
HumanInTheLoop, result review, a quorum of approvers), with people clicking, and checks
the promises after the sweeper settled: every acked decision is in the store and reached
the graph, no side effect ran twice beyond the documented at-least-once, every run ended,
no card offers buttons for an ask that is gone, and no request waited over Slack's 3 s.

The seed and each run's faults are printed; ``FAULT_SEED`` and ``FAULT_RUNS`` replay or
widen a sweep. The fast test runs in CI; the long one (``-m long``) runs every graph on both
stores with Slack timeouts and SIGKILLs mid-resume, and writes ``bench/results/faults.*``
(the fast one does too, but only with ``RELIABILITY_REPORT=1``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.records import Run
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import Backend, BotProcess, StartBot
from tests.reliability.driver import Sweep
from tests.reliability.figures import Figures, measure, write_report
from tests.reliability.schedule import CASES, FAST_GRAPHS, plan_runs, seed_and_runs
from tests.support.faults import FaultProxy

LONG_COMMAND = ".venv/bin/python -m pytest -q -p no:cacheprovider -m long tests/reliability/test_faults.py -s"


async def sweep_once(
    *,
    backend: Backend,
    proxy: FaultProxy | None,
    local_slack: LocalSlack,
    start_bot: StartBot,
    user_for: Callable[[BotProcess], LocalSlackUser],
    markers_file: Path,
    graphs: tuple[str, ...],
    default_runs: int,
    long: bool,
) -> Figures:
    seed, runs = seed_and_runs(default_runs=default_runs)
    print(f"\nFAULT_SEED={seed} FAULT_RUNS={runs} store={backend.name}", flush=True)
    plans = plan_runs(seed=seed, runs=runs, graphs=graphs, dynamodb=proxy is not None, long=long)
    sweep = Sweep(
        slack=local_slack,
        backend=backend,
        start_bot=start_bot,
        user_for=user_for,
        proxy=proxy,
        run_seconds=150.0 if long else 25.0,
    )
    for plan in plans:
        await sweep.run(plan)
    # Faults off, one healthy bot sweeping every second: everything owed must now settle.
    if proxy is not None:
        proxy.clear()
    local_slack.clear_failures()
    await sweep.ensure_bot()
    await settle(sweep, timeout=200.0 if long else 20.0)
    markers = markers_file.read_text().splitlines() if markers_file.exists() else []
    figures = measure(sweep=sweep, plans=plans, seed=seed, markers=markers)
    print(f"faults injected: {figures.faults}", flush=True)
    print(figures.row(), flush=True)
    for line in sweep.notes + figures.observations + figures.problems:
        print("  " + line, flush=True)
    return figures


CALM_SECONDS = 3.0
"""How long every run must stay settled: three sweep periods. A delivery still in flight (a
sweeper's edit slowed by a 5xx retry) may land after a newer one and leave the newer state
owed again, which the next sweep pays; a single look could catch the moment between."""


async def settle(sweep: Sweep, *, timeout: float) -> None:
    """Until every run has ended with Slack showing it, and stays so for ``CALM_SECONDS`` (or ``timeout``)."""
    store = sweep.backend.open_store()
    deadline = time.monotonic() + timeout
    calm_since: float | None = None
    while time.monotonic() < deadline:
        loaded: list[Run | None] = [store.load(r, snapshot=False) for r in sweep.run_ids.values()]
        if all(r is not None and r.status.terminal and not r.owes_slack for r in loaded):
            calm_since = calm_since or time.monotonic()
            if time.monotonic() - calm_since >= CALM_SECONDS:
                return
        else:
            calm_since = None
        await asyncio.sleep(0.5)


def assert_promises_kept(figures: Figures) -> None:
    assert figures.decisions > 0, "the sweep decided nothing: it tested nothing"
    assert sum(figures.faults.values()) > 0, "no fault was injected"
    assert figures.decisions_lost == 0, figures.problems
    assert figures.side_effects_doubled == 0, figures.problems
    assert figures.runs_stuck == 0, figures.problems
    assert figures.live_cards_for_gone_asks == 0, figures.problems
    assert figures.acks_over_3s == 0, f"slowest ack {figures.slowest_ack:.2f} s"
    assert figures.problems == [], figures.problems


async def test_a_seeded_fault_sweep_loses_no_decision(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    fault_proxy: FaultProxy,
    local_slack: LocalSlack,
    user_for: Callable[[BotProcess], LocalSlackUser],
    markers_file: Path,
) -> None:
    """Six runs (one per graph shape) on DynamoDB behind the fault proxy, with crashes."""
    figures = await sweep_once(
        backend=dynamodb_backend,
        proxy=fault_proxy,
        local_slack=local_slack,
        start_bot=start_bot,
        user_for=user_for,
        markers_file=markers_file,
        graphs=FAST_GRAPHS,
        default_runs=len(FAST_GRAPHS),
        long=False,
    )
    if os.environ.get("RELIABILITY_REPORT") == "1":
        write_report([figures], command="RELIABILITY_REPORT=1 " + LONG_COMMAND.replace("-m long", "-k seeded"))
    assert_promises_kept(figures)


@pytest.mark.long
@pytest.mark.parametrize("store", ["dynamodb", "sqlite"])
async def test_a_long_fault_sweep_over_every_graph_and_both_stores(
    store: str,
    request: pytest.FixtureRequest,
    start_bot: StartBot,
    local_slack: LocalSlack,
    user_for: Callable[[BotProcess], LocalSlackUser],
    markers_file: Path,
) -> None:
    """Every graph several times, Slack timeouts (answers held past the client's 30 s) and SIGKILLs mid-resume."""
    proxy: FaultProxy | None = request.getfixturevalue("fault_proxy") if store == "dynamodb" else None
    backend: Backend = request.getfixturevalue(f"{store}_backend")
    figures = await sweep_once(
        backend=backend,
        proxy=proxy,
        local_slack=local_slack,
        start_bot=start_bot,
        user_for=user_for,
        markers_file=markers_file,
        graphs=tuple(CASES),
        default_runs=3 * len(CASES),
        long=True,
    )
    _LONG_RESULTS.append(figures)
    if len(_LONG_RESULTS) == 2:
        workers = os.environ.get("FAULT_WORKERS")
        command = f"FAULT_WORKERS={workers} {LONG_COMMAND}" if workers else LONG_COMMAND
        write_report(_LONG_RESULTS, command=command, workers=int(workers or 0))
    assert_promises_kept(figures)


_LONG_RESULTS: list[Figures] = []
