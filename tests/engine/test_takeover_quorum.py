"""The "may have acted" card under the policy its question was raised with (found by review).

1. Under a quorum one person's Retry must not send an approval that needed two again: the
   rules do not offer Retry there (``engine.decision_rules``), and the card asks for votes
   instead, each counted until the quorum, the answer sent then naming the new voters.
2. The card keeps the terms the question was raised with, not the graph's policy as it is
   now: a definition loosened (or unreadable) since must not let anyone Retry.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.policy import Policy
from engine.records import AskStatus, Decision, Run, RunStatus, Verdict
from graph_defs import registry
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource, died_holding_approval


def engine(store: SqliteRunStore, publisher: RecordingPublisher) -> RunEngine:
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)


async def quorum_approval_handed_to_a_dead_pass(store: SqliteRunStore, publisher: RecordingPublisher) -> Run:
    """``guarded-quorum`` (approvers Alice, Bob, Carol; quorum 2) approved by Alice and Bob,
    the approval handed to a pass that died."""
    run = await died_holding_approval(
        store, publisher, graph="guarded-quorum", starter="U0", approvers=("U0ALICE", "U0BOB")
    )
    (ask,) = run.asks.values()
    assert ask.rules.quorum == 2 and ask.rules.approvers == ("U0ALICE", "U0BOB", "U0CAROL")
    return run


async def test_one_retry_does_not_stand_in_for_a_quorum_and_votes_do(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    run = await quorum_approval_handed_to_a_dead_pass(store, publisher)
    sweeper = engine(store, publisher)
    (swept,) = await sweeper.sweep()
    (again,) = swept.pending_asks()
    assert again.retry_of is not None and again.rules.quorum == 2
    retry = Decision(verdict=Verdict.RETRY, user="U0CAROL", at=time.time())  # one person, who never approved
    result = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=retry, claim=True)
    await sweeper.follow_up(result)
    assert not (result.accepted and result.ask is not None and result.ask.status is AskStatus.DECIDED), (
        "one person's Retry decided an ask that needs two approvals"
    )
    assert test_graphs.markers() == [], "the approved tool ran again on one person's word"
    assert result.ask is not None and Verdict.RETRY not in result.ask.verdicts, "the card asks for votes"
    for user in ("U0CAROL", "U0BOB"):
        vote = Decision(verdict=Verdict.APPROVE, user=user, at=time.time())
        counted = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=vote, claim=True)
        assert counted.accepted, counted
        done = await sweeper.follow_up(counted)
    assert done is not None and done.status is RunStatus.COMPLETED
    (line,) = test_graphs.markers()
    assert line.endswith("approvers: U0CAROL,U0BOB"), "sent again on the word of this card's voters, once"


async def test_the_may_have_acted_card_keeps_the_terms_it_was_raised_with(
    store: SqliteRunStore, publisher: RecordingPublisher, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await quorum_approval_handed_to_a_dead_pass(store, publisher)
    original = run.asks[next(iter(run.asks))]
    # A deploy changes the definition while the run waits (here: the policy keyword dropped).
    loosened = dict(registry._registry)
    loosened["guarded-quorum"] = replace(loosened["guarded-quorum"], policy=Policy())
    monkeypatch.setattr(registry, "_registry", loosened)
    (swept,) = await engine(store, publisher).sweep()
    (again,) = swept.pending_asks()
    assert (again.rules.approvers, again.rules.quorum) == (original.rules.approvers, original.rules.quorum), (
        f"now open to {again.rules.approvers or 'anyone in the channel'}, quorum {again.rules.quorum}"
    )
