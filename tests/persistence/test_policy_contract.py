"""The approval policy as both stores apply it inside their decision write.

SQLite runs ``engine.store_rules.decided`` in a transaction; DynamoDB states the same
rules as a condition expression and judges a failed condition by those rules. These
tests hold both to the same answers, including under concurrent clicks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from engine.audit import MAX_EVENTS, AuditEvent
from engine.policy import AskRules, Refusal
from engine.records import AskStatus, Decision, Run, Verdict
from engine.sources import HITL_INTERRUPT_NAME
from engine.store import AskNotPending, DecisionRefused
from tests.persistence.conftest import IN_C1, Backend, make_run


def _run(run_id: str, rules: AskRules, *, name: str | None = None) -> Run:
    run = make_run(run_id)
    ask = replace(run.asks["a1"], rules=rules, name=name or run.asks["a1"].name)
    return run.evolve(asks={"a1": ask})


def _vote(
    user: str, verdict: Verdict = Verdict.APPROVE, *, text: str | None = None, at: float | None = None
) -> Decision:
    return Decision(verdict=verdict, user=user, at=at if at is not None else time.time(), text=text)


def _refused(
    backend: Backend, run_id: str, decision: Decision, *, member_of: frozenset[str] = IN_C1, **kwargs: object
) -> Refusal:
    store = backend.store()
    before = store.load(run_id)
    with pytest.raises(DecisionRefused) as caught:
        store.decide(run_id, "a1", decision, now=time.time(), member_of=member_of, **kwargs)  # type: ignore[arg-type]
    after = store.load(run_id)
    assert before is not None and after is not None
    assert after.version == before.version and after.asks == before.asks, "a refused decision writes nothing"
    assert caught.value.run.asks["a1"].status is AskStatus.PENDING
    return caught.value.refusal


def test_only_listed_approvers_decide(backend: Backend) -> None:
    backend.store().create(_run("r-list", AskRules(approvers=("U0ALICE", "S0OPS"))))
    assert _refused(backend, "r-list", _vote("U0MALLORY")) is Refusal.NOT_APPROVER
    assert _refused(backend, "r-list", _vote("U0MALLORY", Verdict.REJECT, text="no")) is Refusal.NOT_APPROVER
    run = backend.store().decide("r-list", "a1", _vote("U0ALICE"), now=time.time(), member_of=IN_C1)
    assert run.asks["a1"].status is AskStatus.DECIDED and run.asks["a1"].decision is not None


def test_a_group_member_decides_through_the_group(backend: Backend) -> None:
    backend.store().create(_run("r-group", AskRules(approvers=("S0OPS",))))
    assert _refused(backend, "r-group", _vote("U0CAROL"), member_of=frozenset({"S0OTHER"})) is Refusal.NOT_APPROVER
    run = backend.store().decide(
        "r-group", "a1", _vote("U0CAROL"), now=time.time(), member_of=frozenset({"C1", "S0OPS"})
    )
    assert run.asks["a1"].status is AskStatus.DECIDED


def test_the_requester_may_reject_but_not_approve_unless_allowed(backend: Backend) -> None:
    starter = make_run("x").started_by
    backend.store().create(_run("r-self", AskRules(approvers=("U0ALICE",))))
    for verdict in (Verdict.APPROVE, Verdict.REPLY):
        assert _refused(backend, "r-self", _vote(starter, verdict, text="ok")) is Refusal.SELF_APPROVAL
    run = backend.store().decide(
        "r-self", "a1", _vote(starter, Verdict.REJECT, text="stop"), now=time.time(), member_of=IN_C1
    )
    assert run.asks["a1"].decision is not None and run.asks["a1"].decision.verdict is Verdict.REJECT

    backend.store().create(_run("r-self-ok", AskRules(allow_self=True)))
    run = backend.store().decide("r-self-ok", "a1", _vote(starter), now=time.time(), member_of=IN_C1)
    assert run.asks["a1"].status is AskStatus.DECIDED


def test_an_ask_recorded_before_policies_forbids_self_approval_only(backend: Backend) -> None:
    """Default terms: anyone decides, the requester only rejects (fail closed)."""
    backend.store().create(make_run("r-old"))
    assert _refused(backend, "r-old", _vote(make_run("x").started_by)) is Refusal.SELF_APPROVAL
    assert (
        backend.store().decide("r-old", "a1", _vote("U0ANYONE"), now=time.time(), member_of=IN_C1).asks["a1"].decision
    )


def test_a_quorum_counts_distinct_approvers_and_decides_on_the_last(backend: Backend) -> None:
    backend.store().create(_run("r-q", AskRules(approvers=("U0A", "U0B", "U0C"), quorum=2)))
    store = backend.store()
    first = _vote("U0A")
    event = AuditEvent(at=first.at, kind="decided", by="U0A", ask="a1", text="approve")
    run = store.decide("r-q", "a1", first, now=time.time(), member_of=IN_C1, event=event)
    ask = run.asks["a1"]
    assert ask.status is AskStatus.PENDING and ask.decision is None and ask.votes == {"U0A": first}
    assert run.audit[-1].kind == "voted" and run.audit[-1].by == "U0A"
    assert store.decide("r-q", "a1", first, now=time.time(), member_of=IN_C1).version == run.version, (
        "the same vote again: done"
    )
    assert _refused(backend, "r-q", _vote("U0A")) is Refusal.ALREADY_APPROVED
    last = store.decide(
        "r-q", "a1", _vote("U0B"), now=time.time(), member_of=IN_C1, event=replace(event, by="U0B", id="")
    )
    ask = last.asks["a1"]
    assert ask.status is AskStatus.DECIDED and ask.decision is not None and ask.decision.user == "U0B"
    assert ask.voters() == ["U0A"] and last.audit[-1].kind == "decided"
    with pytest.raises(AskNotPending):
        store.decide("r-q", "a1", _vote("U0C"), now=time.time(), member_of=IN_C1)


def test_one_reject_rejects_under_a_quorum(backend: Backend) -> None:
    backend.store().create(_run("r-qr", AskRules(quorum=3)))
    store = backend.store()
    store.decide("r-qr", "a1", _vote("U0A"), now=time.time(), member_of=IN_C1)
    run = store.decide("r-qr", "a1", _vote("U0B", Verdict.REJECT, text="not today"), now=time.time(), member_of=IN_C1)
    decision = run.asks["a1"].decision
    assert decision is not None and decision.verdict is Verdict.REJECT and run.asks["a1"].status is AskStatus.DECIDED


def test_a_reply_cannot_approve_a_confirmation_alone_under_a_quorum(backend: Backend) -> None:
    backend.store().create(_run("r-hitl", AskRules(quorum=2), name=HITL_INTERRUPT_NAME))
    assert _refused(backend, "r-hitl", _vote("U0A", Verdict.REPLY, text=" Yes ")) is Refusal.NEEDS_APPROVE
    run = backend.store().decide(
        "r-hitl", "a1", _vote("U0A", Verdict.REPLY, text="why?"), now=time.time(), member_of=IN_C1
    )
    assert run.asks["a1"].status is AskStatus.DECIDED


def test_an_escalation_adds_its_group_to_who_may_decide(backend: Backend) -> None:
    rules = AskRules(approvers=("U0A",), escalate_to=("S0LEADS",), escalate_at=time.time())
    run = _run("r-esc", rules)
    backend.store().create(run)
    assert _refused(backend, "r-esc", _vote("U0LEAD"), member_of=frozenset({"S0LEADS"})) is Refusal.NOT_APPROVER
    store = backend.store()
    stored = store.load("r-esc")
    assert stored is not None
    escalated = stored.evolve(asks={"a1": replace(stored.asks["a1"], escalated=True)})
    store.save(escalated, expected_version=stored.version)
    done = store.decide("r-esc", "a1", _vote("U0LEAD"), now=time.time(), member_of=frozenset({"C1", "S0LEADS"}))
    assert done.asks["a1"].status is AskStatus.DECIDED


def test_an_expiry_is_decided_whatever_the_policy(backend: Backend) -> None:
    backend.store().create(_run("r-exp", AskRules(approvers=("U0A",), quorum=2)))
    expiry = Decision(verdict=Verdict.REJECT, user="", at=time.time(), text="expired", expired=True)
    run = backend.store().decide("r-exp", "a1", expiry, now=time.time(), member_of=IN_C1)
    decision = run.asks["a1"].decision
    assert decision is not None and decision.expired and decision.user == ""
    assert backend.store().load("r-exp", snapshot=False) == run.evolve(snapshot=None)


@pytest.mark.parametrize("quorum", [2, 3])
def test_concurrent_approvals_reach_the_quorum_once(backend: Backend, quorum: int) -> None:
    users = [f"U0P{i:02d}" for i in range(8)]
    backend.store().create(_run("r-rush", AskRules(approvers=tuple(users), quorum=quorum)))
    store = backend.store()
    barrier = threading.Barrier(len(users))
    results: list[Run] = []
    lost: list[AskNotPending] = []
    errors: list[BaseException] = []

    def click(user: str) -> None:
        barrier.wait()
        try:
            results.append(store.decide("r-rush", "a1", _vote(user), now=time.time(), member_of=IN_C1))
        except AskNotPending as exc:
            lost.append(exc)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=click, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    finals = [r for r in results if r.asks["a1"].status is AskStatus.DECIDED]
    votes_only = [r for r in results if r.asks["a1"].status is AskStatus.PENDING]
    assert len(finals) == 1 and len(votes_only) == quorum - 1 and len(lost) == len(users) - quorum
    stored = backend.store().load("r-rush")
    assert stored is not None
    ask = stored.asks["a1"]
    assert ask.decision == finals[0].asks["a1"].decision and len(ask.votes) == quorum - 1
    assert ask.decision is not None and ask.decision.user not in ask.votes


def test_a_note_appends_to_the_trail_until_it_is_full(backend: Backend) -> None:
    backend.store().create(make_run("r-note"))
    store = backend.store()
    event = AuditEvent(at=time.time(), kind="refused", by="U0X", ask="a1", text="approve: not_approver")
    store.note("r-note", event)
    run = store.load("r-note")
    assert run is not None and run.audit == (event,) and run.version == 2
    full = run.evolve(audit=tuple(AuditEvent(at=i, kind="asked") for i in range(MAX_EVENTS)))
    store.save(full, expected_version=run.version)
    store.note("r-note", replace(event, id=""))
    stored = store.load("r-note")
    assert stored is not None and len(stored.audit) == MAX_EVENTS and event not in stored.audit


def test_a_click_after_the_expiry_is_refused_even_before_any_sweep(backend: Backend) -> None:
    backend.store().create(_run("r-late", AskRules(quorum=2, expires_at=time.time() - 1)))
    assert _refused(backend, "r-late", _vote("U0A")) is Refusal.EXPIRED
    assert _refused(backend, "r-late", _vote("U0A", Verdict.REJECT, text="no")) is Refusal.EXPIRED
