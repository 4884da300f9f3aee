"""Found by review (issue 19): a pass that begins inside its claim's last third loses its lease at the first
heartbeat (renew(now=) refuses a lease that ran out; the first renewal comes lease/3 after
the hold began, i.e. after the claim's end): the tool ran, its result is dropped."""

from __future__ import annotations

import asyncio
import time

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.records import Decision, RunStatus, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource


async def test_a_pass_begun_in_its_claims_last_third_keeps_its_lease(
    store: SqliteRunStore, publisher: RecordingPublisher, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=6)
    run = await eng.start(graph="guarded-write", task="x", user="U0START", channel="C1")
    (ask,) = run.pending_asks()
    approve = Decision(verdict=Verdict.APPROVE, user="U0A", at=time.time())
    result = await eng.decide(run_id=run.run_id, ask_key=ask.key, decision=approve, claim=True)
    assert result.claimed
    await asyncio.sleep(4.5)  # a stall before the follow-up, still inside the 6 s claim
    monkeypatch.setenv("APPROVAL_BOT_TEST_SLOW_SECONDS", "3")  # the tool takes 3 s
    other = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=6)

    async def sweep_later() -> None:
        await asyncio.sleep(2.8)  # after the heartbeat's first beat (at 1/3 of 6 s), while the tool runs
        await other.sweep()

    sweeping = asyncio.create_task(sweep_later())
    await eng.follow_up(result)
    await sweeping
    assert len(test_graphs.markers()) == 1, test_graphs.markers()
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None and stored.status is RunStatus.COMPLETED, (
        f"the tool ran once, yet its pass's result was dropped: {stored.status if stored else None}, "
        f"pending {[(a.key, a.retry_of is not None) for a in stored.pending_asks()] if stored else None}"
    )
