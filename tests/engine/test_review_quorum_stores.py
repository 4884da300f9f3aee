"""Found by review (issue 19): the quorum "may have acted" flow on both stores (votes, same person twice, Skip race,
a Retry under a quorum), through the engine."""

from __future__ import annotations

import time

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.records import Decision, Verdict
from tests.engine.conftest import RecordingPublisher, RegistrySource, died_holding_approval
from tests.persistence.conftest import Backend, backend  # noqa: F401

both = pytest.mark.parametrize("backend", ["sqlite", "dynamodb"], indirect=True)


def engine(store, publisher):  # type: ignore[no-untyped-def]
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)


@both
async def test_quorum_may_have_acted_on_each_store(backend: Backend, publisher: RecordingPublisher) -> None:  # noqa: F811
    store = backend.store()
    run = await died_holding_approval(
        store, publisher, graph="guarded-quorum", starter="U0ALICE", approvers=("U0BOB", "U0CAROL")
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
