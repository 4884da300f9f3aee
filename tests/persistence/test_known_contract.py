"""``RunStore.decide(known=...)``: the record a refusal carried is a hint, never a judgement.

The ballot hands the store the record its last refusal returned, so that DynamoDB shapes
its next write by it (a vote, the ``all_of`` entry it fills) instead of writing blind.
Whatever that record says, the outcome is what the rules say of the record as stored:
a stale one (a vote or decision landed since) and a forged one (rules that would allow
the person) change nothing. Both stores, the same answers.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from engine.ballot import Ballot
from engine.decision_rules import ALL_OF_LOOKED_UP
from engine.policy import AskRules, Refusal
from engine.records import Ask, AskStatus, Decision, Run, Verdict
from engine.store import AskNotPending, DecisionRefused, Lease
from tests.engine.conftest import FakeDirectory
from tests.persistence.conftest import IN_C1, Backend, make_run


def _created(backend: Backend, rules: AskRules) -> Run:
    if backend.bucket:
        pytest.skip("where the state lives does not change a decision's rules")
    base = make_run(f"r-known-{time.monotonic_ns()}", started_by="U0S")
    run = base.evolve(asks={"a1": replace(base.asks["a1"], rules=rules)})
    backend.store().create(run)
    return run


def _yes(user: str) -> Decision:
    return Decision(verdict=Verdict.APPROVE, user=user, at=time.time())


def test_a_stale_record_that_shows_a_vote_still_to_come_does_not_keep_the_last_one_a_vote(backend: Backend) -> None:
    run = _created(backend, AskRules(approvers=("U0A", "U0B"), quorum=2))
    store = backend.store()
    store.decide(run.run_id, "a1", _yes("U0A"), now=time.time(), member_of=IN_C1)
    claim = Lease(owner="p1", until=time.time() + 60)
    # ``known`` shows no vote yet (U0B's would be a vote); U0A's landed since: U0B's decides.
    done = store.decide(run.run_id, "a1", _yes("U0B"), now=time.time(), member_of=IN_C1, claim=claim, known=run)
    assert done.asks["a1"].status is AskStatus.DECIDED and set(done.asks["a1"].votes) == {"U0A"}
    assert done.lease_owner == "p1", "decided and claimed in one write"


def test_a_stale_record_that_shows_the_ask_pending_does_not_decide_it_twice(backend: Backend) -> None:
    run = _created(backend, AskRules(approvers=("U0A", "U0B")))
    store = backend.store()
    store.decide(run.run_id, "a1", _yes("U0A"), now=time.time(), member_of=IN_C1)
    with pytest.raises(AskNotPending):
        store.decide(run.run_id, "a1", _yes("U0B"), now=time.time(), member_of=IN_C1, known=run)


def test_a_record_that_would_allow_the_person_does_not_let_them_decide(backend: Backend) -> None:
    run = _created(backend, AskRules(approvers=("U0A",), quorum=2))
    store = backend.store()
    forged = run.evolve(asks={"a1": replace(run.asks["a1"], rules=AskRules())})  # anyone, one approval
    for known in (forged, run):
        with pytest.raises(DecisionRefused) as caught:
            store.decide(run.run_id, "a1", _yes("U0X"), now=time.time(), member_of=IN_C1, known=known)
        assert caught.value.refusal is Refusal.NOT_APPROVER
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None and stored.version == run.version and stored.asks == run.asks, "nothing written"


def test_a_stale_record_does_not_fill_an_all_of_entry_twice(backend: Backend) -> None:
    run = _created(backend, AskRules(quorum=2, all_of=("S0FIN", "S0LEGAL")))
    store = backend.store()
    seen = frozenset({ALL_OF_LOOKED_UP, "C1"})
    store.decide(run.run_id, "a1", _yes("U0A"), now=time.time(), member_of=seen | {"S0FIN"})
    # ``known`` shows finance missing; U0A filled it since: U0B's approval counts for nothing.
    again = store.decide(run.run_id, "a1", _yes("U0B"), now=time.time(), member_of=seen | {"S0FIN"}, known=run)
    ask = again.asks["a1"]
    assert ask.status is AskStatus.PENDING and ask.filled == {"S0FIN": "U0A"} and set(ask.votes) == {"U0A", "U0B"}
    assert ask.votes["U0B"].counts_for is None


async def test_a_process_whose_record_went_stale_still_counts_each_approval_right(backend: Backend) -> None:
    """Two processes: the one that posted the card remembers it; the other takes finance's
    approval meanwhile. The first then counts a second finance approval for nothing (its
    record said finance was missing), and legal's as the decision that fills legal."""
    run = _created(backend, AskRules(quorum=2, all_of=("S0FIN", "S0LEGAL")))
    store = backend.store()
    directory = FakeDirectory(groups={"S0FIN": {"U0A", "U0B"}, "S0LEGAL": {"U0C"}})
    posted, other = (Ballot(store=store, directory=directory, clock=time.time) for _ in range(2))
    posted.remember(run)

    async def click(ballot: Ballot, user: str) -> Ask:
        result = await ballot.record(run_id=run.run_id, ask_key="a1", decision=_yes(user), claim=None, card=None)
        assert result.accepted and result.ask is not None, result
        return result.ask

    assert (await click(other, "U0A")).filled == {"S0FIN": "U0A"}
    ask = await click(posted, "U0B")
    assert ask.status is AskStatus.PENDING and ask.filled == {"S0FIN": "U0A"} and ask.votes["U0B"].counts_for is None
    ask = await click(posted, "U0C")
    assert ask.status is AskStatus.DECIDED and ask.decision is not None and ask.decision.counts_for == "S0LEGAL"
