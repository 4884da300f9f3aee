"""The lifecycle's transition table: every allowed change goes through, anything else raises."""

from __future__ import annotations

import itertools

import pytest

from engine.records import Ask, AskStatus, Closed, Run, RunStatus
from engine.transitions import (
    ASK_TRANSITIONS,
    CLOSED_BY,
    RUN_TRANSITIONS,
    Cause,
    IllegalTransition,
    ask_allowed,
    ask_to,
    closed_for,
    run_allowed,
    run_to,
)


def _run(status: RunStatus) -> Run:
    return Run(run_id="r1", graph="g", task="t", started_by="U0A", status=status, version=1, created_at=0, updated_at=0)


def _ask(status: AskStatus) -> Ask:
    return Ask(key="k1", interrupt_id="i", name="n", reason=None, node_id="a", status=status, created_at=0)


RUN_ALLOWED = [(a, b, c) for (a, b), causes in RUN_TRANSITIONS.items() for c in sorted(causes)]
ASK_ALLOWED = [(a, b, c) for (a, b), causes in ASK_TRANSITIONS.items() for c in sorted(causes)]


@pytest.mark.parametrize(("before", "after", "cause"), RUN_ALLOWED, ids=lambda v: getattr(v, "value", str(v)))
def test_every_allowed_run_transition_evolves_the_record(before: RunStatus, after: RunStatus, cause: Cause) -> None:
    moved = run_to(_run(before), after, cause=cause, version=2)
    assert (moved.status, moved.version) == (after, 2)


@pytest.mark.parametrize(("before", "after", "cause"), ASK_ALLOWED, ids=lambda v: getattr(v, "value", str(v)))
def test_every_allowed_ask_transition_evolves_the_record(before: AskStatus, after: AskStatus, cause: Cause) -> None:
    closed = next(iter(sorted(CLOSED_BY[cause]))) if after is AskStatus.OBSOLETE else None
    moved = ask_to(_ask(before), after, cause=cause, closed=closed)
    assert (moved.status, moved.closed) == (after, closed)


def test_the_table_is_the_whole_lifecycle() -> None:
    """Anything not in the table is refused: a terminal run never moves, nor a final ask."""
    for before, after, cause in itertools.product(RunStatus, RunStatus, Cause):
        allowed = cause in RUN_TRANSITIONS.get((before, after), frozenset()) or (
            before is after and (before, after) not in RUN_TRANSITIONS
        )
        assert run_allowed(before, after, cause=cause) is allowed
        if before.terminal and after is not before:
            assert not allowed, (before, after, cause)
    for before, after in itertools.product((AskStatus.CONSUMED, AskStatus.OBSOLETE), AskStatus):
        if after is not before:
            assert not any(ask_allowed(before, after, cause=c, closed=Closed.MOVED_ON) for c in Cause)


@pytest.mark.parametrize(
    ("before", "after", "cause"),
    [
        (RunStatus.RUNNING, RunStatus.COMPLETED, Cause.CANCEL),  # a cancel never completes a run
        (RunStatus.WAITING, RunStatus.COMPLETED, Cause.PASS),  # a pass runs under a lease only
        (RunStatus.COMPLETED, RunStatus.CANCELLED, Cause.CANCEL),  # an ending is kept
        (RunStatus.CANCELLED, RunStatus.RESUMING, Cause.SWEEPER),  # nothing resumes a cancelled run
        (RunStatus.WAITING, RunStatus.RESUMING, Cause.PASS),
    ],
)
def test_a_forbidden_run_transition_raises(before: RunStatus, after: RunStatus, cause: Cause) -> None:
    with pytest.raises(IllegalTransition, match=f"{before.value} -> {after.value} by {cause.value}"):
        run_to(_run(before), after, cause=cause)


def test_forbidden_ask_transitions_raise() -> None:
    with pytest.raises(IllegalTransition):  # a closed ask never takes a decision
        ask_to(_ask(AskStatus.OBSOLETE), AskStatus.DECIDED, cause=Cause.CLICK)
    with pytest.raises(IllegalTransition):  # only a pass consumes, and only what was decided
        ask_to(_ask(AskStatus.PENDING), AskStatus.CONSUMED, cause=Cause.PASS)
    with pytest.raises(IllegalTransition):  # a click decides; it does not close
        ask_to(_ask(AskStatus.PENDING), AskStatus.OBSOLETE, cause=Cause.CLICK, closed=Closed.MOVED_ON)
    with pytest.raises(IllegalTransition):  # closing needs a reason
        ask_to(_ask(AskStatus.PENDING), AskStatus.OBSOLETE, cause=Cause.PASS)
    with pytest.raises(IllegalTransition):  # a cancel closes as cancelled, nothing else
        ask_to(_ask(AskStatus.DECIDED), AskStatus.OBSOLETE, cause=Cause.CANCEL, closed=Closed.MOVED_ON)
    with pytest.raises(IllegalTransition):  # a save fallback closes as failed
        ask_to(_ask(AskStatus.PENDING), AskStatus.OBSOLETE, cause=Cause.FALLBACK, closed=Closed.CHANGED)


def test_keeping_a_status_is_no_transition() -> None:
    assert run_to(_run(RunStatus.WAITING), RunStatus.WAITING, cause=Cause.CLICK).status is RunStatus.WAITING
    assert ask_to(_ask(AskStatus.PENDING), AskStatus.PENDING, cause=Cause.CLICK).status is AskStatus.PENDING


def test_an_ending_closes_asks_for_its_own_reason() -> None:
    assert closed_for(RunStatus.FAILED) is Closed.FAILED
    assert closed_for(RunStatus.CANCELLED) is Closed.CANCELLED
    assert closed_for(RunStatus.COMPLETED) is Closed.MOVED_ON
    assert closed_for(RunStatus.WAITING) is Closed.MOVED_ON
