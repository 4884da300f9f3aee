"""The two-person rule across teams (``AskRules.all_of``) on every store, case by case.

One approval from each entry is required, each counting toward the quorum; the store
picks the entry an approval fills (the first missing one the person is shown to be in)
and keeps it with the vote. What the generated cases of ``test_rules_agree`` reach only
now and then is pinned here: two of one team, one of each, a person in both teams, the
approval that meets the quorum but leaves a team missing, a person not yet looked up.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from engine.audit import AuditEvent
from engine.decision_rules import ALL_OF_LOOKED_UP
from engine.policy import AskRules, Refusal
from engine.records import AskStatus, Decision, Run, Verdict
from engine.store import DecisionRefused, RunStore, VerdictNotOffered
from tests.persistence.conftest import Backend, make_run

NOW = time.time()
FIN, LEGAL = "S0FIN", "S0LEGAL"
SEEN = frozenset({ALL_OF_LOOKED_UP})


def _store(
    backend: Backend,
    *,
    quorum: int = 2,
    approvers: tuple[str, ...] | None = None,
    all_of: tuple[str, ...] = (FIN, LEGAL),
) -> tuple[RunStore, Run]:
    if backend.bucket:
        pytest.skip("where the state lives does not change a decision's rules")
    base = make_run(f"r-allof-{time.monotonic_ns()}", started_by="U0S")
    rules = AskRules(approvers=approvers, quorum=quorum, all_of=all_of)
    offered = (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.EDIT, Verdict.TRUST)
    run = base.evolve(asks={"a1": replace(base.asks["a1"], rules=rules, verdicts=offered)})
    store = backend.store()
    store.create(run)
    return store, run


def _approve(
    store: RunStore, run: Run, user: str, member_of: frozenset[str], verdict: Verdict = Verdict.APPROVE
) -> Run:
    decision = Decision(verdict=verdict, user=user, at=NOW)
    event = AuditEvent(at=NOW, kind="decided", by=user, ask="a1", text=verdict.value)
    return store.decide(run.run_id, "a1", decision, now=NOW, member_of=member_of | {"C1"}, event=event)


def test_two_of_one_team_do_not_decide_one_of_each_does(backend: Backend) -> None:
    store, run = _store(backend)
    ask = _approve(store, run, "U0A", SEEN | {FIN}).asks["a1"]
    assert ask.status is AskStatus.PENDING and ask.filled == {FIN: "U0A"}
    # The quorum is met, but legal has not approved: recorded as a vote, the ask waits.
    ask = _approve(store, run, "U0B", SEEN | {FIN}).asks["a1"]
    assert ask.status is AskStatus.PENDING and set(ask.votes) == {"U0A", "U0B"} and ask.filled == {FIN: "U0A"}
    ask = _approve(store, run, "U0C", SEEN | {LEGAL}).asks["a1"]
    assert ask.status is AskStatus.DECIDED and ask.decision is not None and ask.decision.counts_for == LEGAL
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None and stored.asks["a1"].decision is not None
    assert stored.asks["a1"].decision.counts_for == LEGAL
    assert [(e.kind, e.by, e.text) for e in stored.audit] == [
        ("voted", "U0A", f"approve (for {FIN})"),
        ("voted", "U0B", "approve"),
        ("decided", "U0C", f"approve (for {LEGAL})"),
    ], "the trail says which team each approval counted for"


def test_a_person_in_both_teams_fills_the_first_missing_one_only(backend: Backend) -> None:
    store, run = _store(backend)
    ask = _approve(store, run, "U0BOTH", SEEN | {FIN, LEGAL}).asks["a1"]
    assert ask.status is AskStatus.PENDING and ask.filled == {FIN: "U0BOTH"}, "one approval fills one team"
    store2, run2 = _store(backend)
    _approve(store2, run2, "U0A", SEEN | {FIN})
    ask = _approve(store2, run2, "U0BOTH", SEEN | {FIN, LEGAL}).asks["a1"]
    assert ask.status is AskStatus.DECIDED and ask.decision is not None and ask.decision.counts_for == LEGAL


def test_an_approval_waits_for_the_all_of_lookup(backend: Backend) -> None:
    store, run = _store(backend, approvers=("U0A",))
    with pytest.raises(DecisionRefused) as refused:
        _approve(store, run, "U0A", frozenset())  # a listed approver, not yet looked up in the teams
    assert refused.value.refusal is Refusal.UNCOUNTED
    ask = _approve(store, run, "U0A", SEEN | {FIN}).asks["a1"]
    assert ask.filled == {FIN: "U0A"}, "once looked up, the approval speaks for finance"


def test_a_team_member_may_reject_but_not_approve_for_a_team_already_counted(backend: Backend) -> None:
    store, run = _store(backend, approvers=("U0A",))
    _approve(store, run, "U0F1", SEEN | {FIN})
    with pytest.raises(DecisionRefused) as refused:
        _approve(store, run, "U0F2", SEEN | {FIN})
    assert refused.value.refusal is Refusal.NOT_APPROVER
    ask = _approve(store, run, "U0F2", SEEN | {FIN}, verdict=Verdict.REJECT).asks["a1"]
    assert ask.status is AskStatus.DECIDED and ask.decision is not None and ask.decision.verdict is Verdict.REJECT


def test_no_one_persons_trust_or_yes_reply_stands_in_for_a_team(backend: Backend) -> None:
    store, run = _store(backend, quorum=1, approvers=("U0A",), all_of=(FIN,))
    run = store.load(run.run_id, snapshot=False) or run
    trust = Decision(verdict=Verdict.TRUST, user="U0A", at=NOW)
    with pytest.raises(VerdictNotOffered):  # a Trust would let later asks skip finance
        store.decide(run.run_id, "a1", trust, now=NOW, member_of=SEEN | {FIN, "C1"})
    yes = Decision(verdict=Verdict.REPLY, user="U0A", at=NOW, text="yes")
    with pytest.raises(DecisionRefused) as refused:  # HumanInTheLoop would read it as an approval
        store.decide(run.run_id, "a1", yes, now=NOW, member_of=SEEN | {"C1"})
    assert refused.value.refusal is Refusal.NEEDS_APPROVE
    ask = _approve(store, run, "U0F", SEEN | {FIN}).asks["a1"]
    assert ask.status is AskStatus.DECIDED and ask.decision is not None and ask.decision.counts_for == FIN
