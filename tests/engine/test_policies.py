"""Policies through the engine with real graphs and the SQLite store: who may decide,
quorum, expiry, reminders and escalation by the sweeper, cancel and the audit trail."""

from __future__ import annotations

import time

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.oversight import CancelOutcome
from engine.policy import Refusal
from engine.ports import StartRefused
from engine.records import AskStatus, Closed, Decision, RunStatus, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import FakeDirectory, RecordingPublisher, RegistrySource


def vote(user: str, verdict: Verdict = Verdict.APPROVE, text: str | None = None) -> Decision:
    return Decision(verdict=verdict, user=user, at=time.time(), text=text)


@pytest.fixture
def directory() -> FakeDirectory:
    return FakeDirectory(groups={"S0OPS": {"U0CAROL"}, "S0LEADS": {"U0LEAD"}})


def engine_at(store: SqliteRunStore, publisher: RecordingPublisher, directory: FakeDirectory, ahead: float = 0.0):  # type: ignore[no-untyped-def]
    made = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, directory=directory)
    if ahead:
        made._clock = lambda: time.time() + ahead  # type: ignore[method-assign]
    return made


async def test_only_approvers_decide_directly_or_through_a_group(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-approvers", task="t", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key

    refused = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0MALLORY"))
    assert not refused.accepted and refused.refusal is Refusal.NOT_APPROVER
    stored = store.load(run.run_id)
    assert stored is not None and stored.asks[key].status is AskStatus.PENDING
    assert stored.audit[-1].kind == "refused" and stored.audit[-1].by == "U0MALLORY"

    accepted = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0CAROL"), claim=True)
    assert accepted.accepted and accepted.claimed
    final = await engine.follow_up(accepted)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:t"]


async def test_the_requester_may_reject_but_not_approve(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key
    own = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0REQ"))
    assert own.refusal is Refusal.SELF_APPROVAL
    stop = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0REQ", Verdict.REJECT, "no"))
    assert stop.accepted

    allowed = await engine.start(graph="guarded-self", task="t", user="U0REQ", channel="C1")
    ok = await engine.decide(run_id=allowed.run_id, ask_key=allowed.pending_asks()[0].key, decision=vote("U0REQ"))
    assert ok.accepted


async def test_two_of_three_resume_on_the_second_distinct_approval(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-quorum", task="pay", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key

    first = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0ALICE"), claim=True)
    assert first.accepted and first.counted and not first.claimed
    await engine.follow_up(first)
    assert test_graphs.markers() == [], "one approval of two runs nothing"
    assert ("changed", run.run_id, f"{key}:live:1") in publisher.events, "the card shows the approval"

    again = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0ALICE"))
    assert again.refusal is Refusal.ALREADY_APPROVED

    second = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0BOB"), claim=True)
    assert second.accepted and second.claimed and not second.counted
    final = await engine.follow_up(second)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:pay | approvers: U0ALICE,U0BOB"]
    kinds = [e.kind for e in final.audit]
    assert kinds[:4] == ["started", "asked", "voted", "refused"] and "decided" in kinds and kinds[-1] == "completed"


async def test_a_reject_under_a_quorum_rejects(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-quorum", task="pay", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key
    await engine.follow_up(await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0ALICE")))
    no = await engine.decide(
        run_id=run.run_id, ask_key=key, decision=vote("U0BOB", Verdict.REJECT, "too much"), claim=True
    )
    final = await engine.follow_up(no)
    assert final is not None and final.output == "writer result: rejected by U0BOB: too much"
    assert test_graphs.markers() == []


async def test_a_refused_start_creates_nothing(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    with pytest.raises(StartRefused) as refused:
        await engine.start(graph="guarded-starters", task="t", user="U0MALLORY", channel="C1", run_id="r-no")
    assert refused.value.allowed == ("U0ALICE", "S0OPS")
    assert store.load("r-no") is None and publisher.events == []
    run = await engine.start(graph="guarded-starters", task="t", user="U0CAROL", channel="C1")
    assert run.status is RunStatus.WAITING


async def test_the_sweeper_reminds_once_escalates_then_expires_and_the_run_goes_on(store, publisher, directory) -> None:
    run = await engine_at(store, publisher, directory).start(
        graph="guarded-expiring", task="t", user="U0REQ", channel="C1"
    )
    key = run.pending_asks()[0].key
    assert run.sweep_at is not None and run.sweep_at <= time.time() + 11

    for _ in range(3):  # three sweeps (and two sweepers) after the reminder fell due: one reminder
        await engine_at(store, publisher, directory, ahead=12).sweep()
    assert publisher.of("notice") == [("notice", run.run_id, f"{key}:remind")]

    lead = await engine_at(store, publisher, directory, ahead=12).decide(
        run_id=run.run_id, ask_key=key, decision=vote("U0LEAD")
    )
    assert lead.refusal is Refusal.NOT_APPROVER, "not before the escalation"
    await engine_at(store, publisher, directory, ahead=22).sweep()
    await engine_at(store, publisher, directory, ahead=23).sweep()
    assert publisher.of("notice")[1:] == [("notice", run.run_id, f"{key}:escalate")]
    stored = store.load(run.run_id)
    assert stored is not None and stored.asks[key].escalated and stored.asks[key].view == "live:0:escalated"

    (swept,) = await engine_at(store, publisher, directory, ahead=31).sweep()
    assert swept.status is RunStatus.COMPLETED
    decision = swept.asks[key].decision
    assert decision is not None and decision.expired and decision.user == ""
    assert swept.output is not None and swept.output.startswith("writer result: rejected by None: Nobody decided")
    assert [e.kind for e in swept.audit if e.kind in ("reminded", "escalated", "expired")] == [
        "reminded",
        "escalated",
        "expired",
    ]
    assert await engine_at(store, publisher, directory, ahead=60).sweep() == []


async def test_cancel_closes_the_cards_and_a_later_click_does_nothing(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-approvers", task="t", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key
    refused = await engine.cancel(run_id=run.run_id, user="U0MALLORY")
    assert refused.outcome is CancelOutcome.NOT_ALLOWED and refused.allowed == ("U0ALICE", "S0OPS")

    done = await engine.cancel(run_id=run.run_id, user="U0CAROL")
    assert done.outcome is CancelOutcome.CANCELLED
    stored = store.load(run.run_id)
    assert stored is not None and stored.status is RunStatus.CANCELLED and stored.cancelled_by == "U0CAROL"
    assert stored.asks[key].closed is Closed.CANCELLED and stored.snapshot is None
    assert ("finished", run.run_id, "cancelled") in publisher.events
    assert ("changed", run.run_id, f"{key}:closed:cancelled") in publisher.events

    late = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0ALICE"), claim=True)
    assert not late.accepted and late.refusal is None
    assert (await engine.cancel(run_id=run.run_id, user="U0REQ")).outcome is CancelOutcome.FINISHED
    assert test_graphs.markers() == []


@pytest.mark.parametrize("ends", [False, True], ids=["pass-pauses-again", "pass-ends-the-run"])
async def test_a_cancel_during_a_pass_stops_it_at_its_save(store, publisher, directory, ends: bool) -> None:
    """A pass that pauses at a new question is stopped at its save (cancelled, nothing
    resumes it); a pass that ended the run keeps its ending, so a payment that went out
    is not reported as cancelled."""
    import asyncio

    engine = engine_at(store, publisher, directory)
    graph = "guarded-write" if ends else "two-asks"
    run = await engine.start(graph=graph, task="t", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key
    outcomes = []

    async def cancel_now() -> None:
        outcomes.append(await engine_at(store, publisher, directory).cancel(run_id=run.run_id, user="U0REQ"))

    loop = asyncio.get_running_loop()
    test_graphs.DURING_PASS.append(lambda: asyncio.run_coroutine_threadsafe(cancel_now(), loop).result(timeout=10))
    result = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0BOB"), claim=True)
    final = await engine.follow_up(result)
    assert outcomes and outcomes[0].outcome is CancelOutcome.STOPPING
    stored = store.load(run.run_id)
    assert final is not None and stored is not None
    kinds = [e.kind for e in stored.audit]
    assert "cancel_requested" in kinds
    if ends:
        assert stored.status is RunStatus.COMPLETED and kinds[-1] == "completed"
    else:
        assert stored.status is RunStatus.CANCELLED and stored.snapshot is None and kinds[-1] == "cancelled"
        assert all(a.status is not AskStatus.PENDING for a in stored.asks.values())
        assert await engine.resume(run.run_id) == stored.evolve(snapshot=None), "nothing resumes it"


async def test_under_a_quorum_a_reply_sends_the_question_back_and_no_retry_or_edit_is_offered(
    store, publisher, directory
) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-quorum", task="pay", user="U0REQ", channel="C1")
    ask = run.pending_asks()[0]
    assert ask.verdicts == (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY)
    result = await engine.decide(
        run_id=run.run_id, ask_key=ask.key, decision=vote("U0ALICE", Verdict.REPLY, "pay less"), claim=True
    )
    final = await engine.follow_up(result)
    assert final is not None and final.output == "writer result: rejected by U0ALICE: pay less"
    assert test_graphs.markers() == [], "one reply did not stand in for two approvals"


async def test_a_click_after_the_expiry_is_refused_before_the_sweeper_gets_there(store, publisher, directory) -> None:
    run = await engine_at(store, publisher, directory).start(
        graph="guarded-expiring", task="t", user="U0REQ", channel="C1"
    )
    late = engine_at(store, publisher, directory, ahead=31)
    result = await late.decide(run_id=run.run_id, ask_key=run.pending_asks()[0].key, decision=vote("U0ALICE"))
    assert result.refusal is Refusal.EXPIRED and test_graphs.markers() == []


async def test_repeated_refused_clicks_add_one_line_to_the_trail(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-approvers", task="t", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key
    for _ in range(30):
        await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0MALLORY"))
    for n in range(40):
        await engine.decide(run_id=run.run_id, ask_key=key, decision=vote(f"U0X{n:03d}"))
    stored = store.load(run.run_id)
    assert stored is not None
    refused = [e for e in stored.audit if e.kind == "refused"]
    assert len([e for e in refused if e.by == "U0MALLORY"]) == 1
    assert len(refused) == 20 and [e.kind for e in stored.audit][:2] == ["started", "asked"]


async def test_without_approvers_only_the_runs_channel_may_oversee_it(store, publisher, directory) -> None:
    engine = engine_at(store, publisher, directory)
    run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
    assert await engine.may_oversee(run, "U0ANYONE", channel="C1") == (True, ())
    assert await engine.may_oversee(run, "U0ANYONE", channel="C2") == (False, ())
    assert await engine.may_oversee(run, "U0ANYONE", channel=None) == (False, ())
    assert await engine.may_oversee(run, "U0REQ", channel="D0DM") == (True, ()), "the requester, from anywhere"
    refused = await engine.cancel(run_id=run.run_id, user="U0ANYONE", channel="C2")
    assert refused.outcome is CancelOutcome.NOT_ALLOWED and refused.allowed == ()
