"""The lifecycle's invariants, the merge that keeps them under concurrent decisions, and the brake."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.brake import Brake
from engine.execution import Step, StepStatus
from engine.invariants import STRANDED_ERROR, InvariantBroken, enforced, lost_decisions, repaired, violations
from engine.oversight import what_ran
from engine.records import Ask, AskStatus, Closed, Decision, MessageRef, Run, RunStatus, Verdict
from engine.settle import merge_concurrent_decisions, settle

CARD = MessageRef(channel="C1", ts="1.0")
YES = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=5.0)


def _ask(key: str, status: AskStatus = AskStatus.PENDING, **changes: object) -> Ask:
    ask = Ask(key=key, interrupt_id=f"i-{key}", name=f"n-{key}", reason=None, node_id=key, status=status, created_at=0)
    return replace(ask, card=CARD, **changes)  # type: ignore[arg-type]


def _run(status: RunStatus, *asks: Ask, **changes: object) -> Run:
    run = Run(
        run_id="r1",
        graph="g",
        task="t",
        started_by="U0A",
        status=status,
        version=3,
        created_at=0,
        updated_at=1,
        thread=CARD,
        asks={a.key: a for a in asks},
    )
    return run.evolve(**changes)


def test_a_sound_waiting_run_breaks_nothing() -> None:
    assert violations(_run(RunStatus.WAITING, _ask("a"))) == []
    assert violations(_run(RunStatus.WAITING, _ask("a", AskStatus.DECIDED, decision=YES))) == []
    assert violations(_run(RunStatus.COMPLETED, _ask("a", AskStatus.CONSUMED, decision=YES))) == []


def test_each_invariant() -> None:
    moved_on = _ask("b", AskStatus.OBSOLETE, closed=Closed.MOVED_ON, decision=YES)
    assert violations(_run(RunStatus.WAITING, moved_on)) == ["waiting with no open ask"]
    assert violations(_run(RunStatus.COMPLETED, _ask("a"))) == ["completed with open asks ['a']"]
    assert violations(_run(RunStatus.CANCELLED, _ask("a", AskStatus.OBSOLETE))) == [
        "asks ['a'] closed without a reason"
    ]
    assert violations(_run(RunStatus.WAITING, _ask("a"), cancelled_by="U0A")) == ["cancelled by U0A yet waiting"]
    unseen = _run(RunStatus.WAITING, replace(_ask("a"), card=None), thread=None, channel=None)
    assert violations(unseen) == ["pending asks ['a'] have no card and none is owed"]


def test_a_decision_never_vanishes() -> None:
    before = _run(RunStatus.RESUMING, _ask("a", AskStatus.DECIDED, decision=YES))
    assert lost_decisions(before, _run(RunStatus.WAITING, _ask("a", AskStatus.CONSUMED, decision=YES))) == []
    dropped = _run(RunStatus.WAITING, _ask("a", AskStatus.OBSOLETE, closed=Closed.MOVED_ON), _ask("b"))
    assert lost_decisions(before, dropped) == ["the decision on ask a was dropped (obsolete)"]


def test_strict_mode_raises_production_repairs(monkeypatch: pytest.MonkeyPatch) -> None:
    stranded = _run(RunStatus.WAITING, _ask("b", AskStatus.OBSOLETE, closed=Closed.MOVED_ON, decision=YES))
    monkeypatch.setenv("APPROVAL_BOT_STRICT_INVARIANTS", "1")
    with pytest.raises(InvariantBroken, match="waiting with no open ask"):
        enforced(stranded, now=9.0, where="a test")
    monkeypatch.setenv("APPROVAL_BOT_STRICT_INVARIANTS", "0")
    fixed = enforced(stranded, now=9.0, where="a test")
    assert fixed.status is RunStatus.FAILED and fixed.error == STRANDED_ERROR  # fail closed: the requester is told
    assert violations(fixed) == []


def test_repairs_leave_a_run_someone_can_act_on() -> None:
    ended = repaired(_run(RunStatus.CANCELLED, _ask("a"), _ask("b", AskStatus.OBSOLETE)), now=9.0)
    assert {k: (a.status, a.closed) for k, a in ended.asks.items()} == {
        "a": (AskStatus.OBSOLETE, Closed.CANCELLED),
        "b": (AskStatus.OBSOLETE, Closed.CANCELLED),
    }
    marked = repaired(_run(RunStatus.WAITING, _ask("a"), cancelled_by="U0A"), now=9.0)
    assert marked.status is RunStatus.CANCELLED and marked.asks["a"].closed is Closed.CANCELLED
    for fixed in (ended, marked):
        assert violations(fixed) == []


# -- merging a decision that landed while a pass ran ----------------------------------------


def _claimed() -> Run:
    return _run(RunStatus.RESUMING, _ask("a", AskStatus.DECIDED, decision=YES), _ask("b"), lease_owner="me")


def _stored_meanwhile() -> Run:
    later = Decision(verdict=Verdict.APPROVE, user="U0CAROL", at=6.0)
    claimed = _claimed()
    return claimed.evolve(version=4, asks={**claimed.asks, "b": _ask("b", AskStatus.DECIDED, decision=later)})


def _pass(*, raised_again: bool, status: StepStatus = StepStatus.INTERRUPTED) -> Run:
    from engine.execution import Raised

    raised = [Raised(interrupt_id="i-b", name="n-b", reason=None, node_id="b", verdicts=(Verdict.APPROVE,))]
    step = Step(status=status, snapshot=b"{}", raised=raised if raised_again else [])
    claimed = _claimed()
    if raised_again:  # same content as the ask: the same ask
        claimed = claimed.evolve(asks={**claimed.asks, "b": replace(claimed.asks["b"], digest=_digest())})
    return settle(claimed, step, sent=["a"], now=7.0).run


def _digest() -> str:
    from engine.records import ask_digest

    return ask_digest(name="n-b", reason=None, tool=None)


def test_a_decision_merged_twice_stays_decided() -> None:
    """Two conflicting saves in a row (a card update landed too): the merge is idempotent."""
    mine = _pass(raised_again=True)
    assert mine.asks["b"].status is AskStatus.PENDING
    fresh = _stored_meanwhile()
    once = merge_concurrent_decisions(claimed=_claimed(), mine=mine, fresh=fresh)
    twice = merge_concurrent_decisions(claimed=_claimed(), mine=once, fresh=fresh.evolve(version=5))
    for merged in (once, twice):
        assert merged.status is RunStatus.WAITING
        assert merged.asks["b"].status is AskStatus.DECIDED and merged.asks["b"].decision == fresh.asks["b"].decision
        assert violations(merged) == [] and lost_decisions(fresh, merged) == []


def test_a_decision_on_an_ask_the_pass_closed_is_carried_while_the_run_waits() -> None:
    mine = _pass(raised_again=False)
    other = _ask("c")  # the pass asked something else: the run waits
    mine = mine.evolve(asks={**mine.asks, "c": other})
    assert mine.asks["b"].status is AskStatus.OBSOLETE
    merged = merge_concurrent_decisions(claimed=_claimed(), mine=mine, fresh=_stored_meanwhile())
    assert merged.asks["b"].status is AskStatus.DECIDED and merged.asks["b"].closed is None
    assert merged.sweep_at is not None  # claimable: due for a sweep at once


def test_a_decision_on_a_run_the_pass_ended_stays_on_the_closed_ask() -> None:
    mine = _pass(raised_again=False, status=StepStatus.COMPLETED)
    merged = merge_concurrent_decisions(claimed=_claimed(), mine=mine, fresh=_stored_meanwhile())
    b = merged.asks["b"]
    assert (merged.status, b.status, b.closed) == (RunStatus.COMPLETED, AskStatus.OBSOLETE, Closed.MOVED_ON)
    assert b.decision is not None and b.decision.user == "U0CAROL"
    assert violations(merged) == []


def test_an_answer_the_graph_no_longer_awaits_is_closed_not_consumed() -> None:
    step = Step(status=StepStatus.COMPLETED, snapshot=b"{}", unawaited=("i-a",))
    run = settle(_claimed(), step, sent=["a"], now=7.0).run
    assert (run.asks["a"].status, run.asks["a"].closed) == (AskStatus.OBSOLETE, Closed.MOVED_ON)
    assert run.asks["a"].decision == YES


def test_a_braked_pass_ends_the_run_cancelled_with_what_ran() -> None:
    step = Step(status=StepStatus.CANCELLED, snapshot=None, trail=("a",), stopped_before="next", cancelled_by="U0A")
    run = settle(_claimed(), step, sent=["a"], now=7.0).run
    assert run.status is RunStatus.CANCELLED and run.cancelled_by == "U0A" and run.snapshot is None
    assert run.asks["b"].closed is Closed.CANCELLED and run.asks["a"].status is AskStatus.CONSUMED
    assert run.audit[-1].kind == "cancelled" and run.audit[-1].text == "stopped before node next; ran: a"
    assert violations(run) == []
    assert (
        what_ran(run.evolve(trail=("a",)))
        == "nodes finished: a; answers the graph received: n-a; stopped before node next"
    )


def test_what_a_held_run_is_doing_is_told() -> None:
    assert (
        what_ran(_claimed())
        == "no node finished; the pass running now received n-a (what they approved may be running)"
    )


# -- the brake ------------------------------------------------------------------------------------


async def test_the_brake_skips_the_first_node_and_reads_at_most_every_so_often() -> None:
    now = [0.0]
    mark: list[str | None] = [None]

    async def look() -> str | None:
        return mark[0]

    brake = Brake(look=look, every=1.0, clock=lambda: now[0])
    assert not await brake.stops("first") and brake.looks == 0  # the claim just read the mark
    now[0] = 0.5
    mark[0] = "U0A"
    assert not await brake.stops("soon") and brake.looks == 0  # within the interval: no read
    now[0] = 1.5
    assert await brake.stops("later") and brake.looks == 1
    assert (brake.by, brake.before) == ("U0A", "later")
    assert await brake.stops("after") and brake.looks == 1  # once found, never read again


async def test_an_unreadable_store_stops_nothing() -> None:
    async def look() -> str | None:
        raise OSError("down")

    brake = Brake(look=look, every=0.0)
    assert not await brake.stops("first")
    assert not await brake.stops("second") and brake.looks == 1


# -- the sweeper's look at the invariants ------------------------------------------------------


async def test_the_sweeper_repairs_a_broken_record_it_finds(
    make_engine, store, publisher, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """A run that ended with a live card (say, saved by an older version): its card is
    closed and the record repaired; with strict invariants the sweep refuses it instead."""
    engine = make_engine()
    run = await engine.start(graph="guarded-write", task="t", user="U0A", channel="C1")
    assert run.status is RunStatus.WAITING
    broken = run.evolve(status=RunStatus.COMPLETED, final=None, snapshot=None, state_ref=None)
    store.save(broken, expected_version=run.version)

    monkeypatch.setenv("APPROVAL_BOT_STRICT_INVARIANTS", "1")
    with pytest.raises(InvariantBroken, match="completed with open asks"):
        await engine.sweep_run(run.run_id)

    monkeypatch.setenv("APPROVAL_BOT_STRICT_INVARIANTS", "0")
    swept = await engine.sweep_run(run.run_id)
    assert swept is not None and violations(swept) == []
    (ask,) = swept.asks.values()
    assert (ask.status, ask.closed) == (AskStatus.OBSOLETE, Closed.MOVED_ON)
    assert publisher.of("changed") == [("changed", run.run_id, f"{ask.key}:closed:moved_on")]
    assert publisher.of("finished") == [("finished", run.run_id, "completed")]
