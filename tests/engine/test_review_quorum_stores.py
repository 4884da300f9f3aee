"""Found by review (issue 19): the quorum "may have acted" flow on both stores (votes, same person twice, Skip race,
a Retry under a quorum), through the engine."""

from __future__ import annotations

import time

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.records import AskStatus, Decision, RunStatus, Verdict
from tests.engine.conftest import RecordingPublisher, RegistrySource
from tests.persistence.conftest import Backend, backend  # noqa: F401

both = pytest.mark.parametrize("backend", ["sqlite", "dynamodb"], indirect=True)


def engine(store, publisher):  # type: ignore[no-untyped-def]
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)


@both
async def test_quorum_may_have_acted_on_each_store(backend: Backend, publisher: RecordingPublisher) -> None:  # noqa: F811
    store = backend.store()
    first = engine(store, publisher)
    run = await first.start(graph="guarded-quorum", task="x", user="U0ALICE", channel="C1")
    (ask,) = run.pending_asks()
    for user in ("U0BOB", "U0CAROL"):
        assert (
            await first.decide(
                run_id=run.run_id,
                ask_key=ask.key,
                decision=Decision(verdict=Verdict.APPROVE, user=user, at=time.time()),
            )
        ).accepted
    decided = store.load(run.run_id, snapshot=False)
    assert decided is not None and decided.asks[ask.key].status is AskStatus.DECIDED
    store.claim(
        run.run_id,
        expected_version=decided.version,
        status=RunStatus.RESUMING,
        owner="dead/1",
        lease_until=time.time() - 1,
        now=time.time(),
        handing=[ask.key],
    )
    sweeper = engine(store, publisher)
    (swept,) = await sweeper.sweep()
    (again,) = swept.pending_asks()
    d = lambda v, u: Decision(verdict=v, user=u, at=time.time())  # noqa: E731
    # A Retry (one person) under the quorum: not offered.
    r = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=d(Verdict.RETRY, "U0BOB"), claim=True)
    assert not r.accepted
    # Self-approval by the starter: refused.
    r = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=d(Verdict.APPROVE, "U0ALICE"), claim=True)
    assert not r.accepted and r.refusal is not None, r
    # A non-approver: refused.
    r = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=d(Verdict.APPROVE, "U0EVE"), claim=True)
    assert not r.accepted and r.refusal is not None, r
    # One vote, then the same person again: refused.
    r = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=d(Verdict.APPROVE, "U0BOB"), claim=True)
    assert r.accepted and r.counted
    r = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=d(Verdict.APPROVE, "U0BOB"), claim=True)
    assert not r.accepted, r
    # Skip by the other approver: decides as a rejection; the tool does not run again.
    r = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=d(Verdict.REJECT, "U0CAROL"), claim=True)
    assert r.accepted
    done = await sweeper.follow_up(r)
    # A late vote after the Skip: not pending.
    vote = d(Verdict.APPROVE, "U0CAROL")
    late = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=vote, claim=True)
    assert not late.accepted
    assert test_graphs.markers() == [], test_graphs.markers()
    assert done is not None and done.status.terminal, done.status
