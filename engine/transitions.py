"""The lifecycle of runs and asks, as one table: which status may follow which, and who may cause it.

Why one table: a status change made in one module on an assumption that another module
breaks (a concurrent decision merged onto an ask a pass had just closed, say) strands a
run with nothing anyone can answer. Every status change in the engine goes through
:func:`run_to` or :func:`ask_to`, which return the evolved record or raise
:class:`IllegalTransition`; a change the table does not name is a bug, found where it is
made rather than by a person whose run never ends.

Runs::

    running  ──pass──▶ waiting | completed | failed | rejected
    running  ──cancel─▶ cancelled            (the brake, or a save that finds the mark)
    waiting  ──click | sweeper──▶ resuming   (a decision claims it; a sweeper picks one up)
    waiting  ──cancel─▶ cancelled            (nobody holds it: ended at once)
    resuming ──pass──▶ waiting | completed | failed | rejected
    resuming ──cancel─▶ cancelled
    running | resuming ──takeover──▶ running | resuming   (its holder's lease expired)
    running | resuming ──takeover──▶ waiting  (only approvals a dead pass got: asked again, nothing run)
    running | resuming ──fallback──▶ failed  (a save that cannot land; an announcement refused)
    running | resuming ──rule──▶ resuming    (a rule decided the pass's new asks: the holder goes on)
    waiting  ──fallback──▶ failed            (a run left with nothing to answer: ``engine.invariants``)

Asks::

    pending ──click | sweeper(expiry)──▶ decided   (expiry is a decision by nobody)
    pending ──rule──▶ decided                      (``AskPolicy.auto``: decided as it is raised)
    decided ──pass──▶ consumed                     (the graph received it)
    decided ──takeover──▶ consumed                 (a dead pass got it; a "may have acted" ask replaces it)
    pending | decided ──▶ obsolete, with why:
        moved_on: a pass (the run went on or ended without it)
        changed:  a pass (asked again with other content; its answer is void)
        failed:   a pass or a save fallback (the run failed)
        cancelled: a cancel

``consumed`` and ``obsolete`` are final. A status kept as it is (votes, notices, cards
recorded) is not a transition and is always allowed.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from typing import Any

from engine.records import Ask, AskStatus, Closed, Run, RunStatus


class Cause(StrEnum):
    """Who or what changes a status."""

    PASS = "pass"  # a graph pass, saved by its holder (also a refresh that runs nothing)
    CLICK = "click"  # a person's decision, or the claim that comes with it
    SWEEPER = "sweeper"  # an expiry (a decision by nobody); a pickup of a recorded decision by any process
    CANCEL = "cancel"  # /graph cancel: at once, at the brake, or at the holder's save
    TAKEOVER = "takeover"  # a process takes a run whose holder's lease expired
    FALLBACK = "fallback"  # a save that cannot land, an announcement Slack refused, a stranded run's repair
    RULE = "rule"  # a policy rule's automatic decision (``AskPolicy.auto``), saved by the pass's holder


class IllegalTransition(ValueError):
    """A status change the lifecycle does not allow (a bug in the engine, never a user error)."""


R, A, C = RunStatus, AskStatus, Cause
_ENDINGS = (R.COMPLETED, R.FAILED, R.REJECTED)

RUN_TRANSITIONS: dict[tuple[RunStatus, RunStatus], frozenset[Cause]] = {
    **{(R.RUNNING, to): frozenset({C.PASS}) for to in (R.WAITING, *_ENDINGS)},
    **{(R.RESUMING, to): frozenset({C.PASS}) for to in (R.WAITING, *_ENDINGS)},
    (R.RUNNING, R.FAILED): frozenset({C.PASS, C.FALLBACK}),
    (R.RESUMING, R.FAILED): frozenset({C.PASS, C.FALLBACK}),
    (R.WAITING, R.RESUMING): frozenset({C.CLICK, C.SWEEPER}),
    (R.WAITING, R.FAILED): frozenset({C.FALLBACK}),  # the invariants' repair of a stranded run
    (R.RUNNING, R.CANCELLED): frozenset({C.CANCEL}),
    (R.RESUMING, R.CANCELLED): frozenset({C.CANCEL}),
    (R.WAITING, R.CANCELLED): frozenset({C.CANCEL}),
    (R.RUNNING, R.RUNNING): frozenset({C.TAKEOVER}),
    (R.RESUMING, R.RESUMING): frozenset({C.TAKEOVER, C.RULE}),  # RULE: the holder goes on with a rule's answers
    (R.RESUMING, R.RUNNING): frozenset({C.TAKEOVER}),  # taken over with no state saved: from the task
    (R.RUNNING, R.RESUMING): frozenset({C.TAKEOVER, C.RULE}),
    (R.RUNNING, R.WAITING): frozenset({C.PASS, C.TAKEOVER}),
    (R.RESUMING, R.WAITING): frozenset({C.PASS, C.TAKEOVER}),
}
"""(from, to) -> who may cause it. A run's status kept as it is by anyone else is no transition."""

ASK_TRANSITIONS: dict[tuple[AskStatus, AskStatus], frozenset[Cause]] = {
    (A.PENDING, A.DECIDED): frozenset({C.CLICK, C.SWEEPER, C.RULE}),
    (A.DECIDED, A.CONSUMED): frozenset({C.PASS, C.TAKEOVER}),
    (A.PENDING, A.OBSOLETE): frozenset({C.PASS, C.CANCEL, C.FALLBACK}),
    (A.DECIDED, A.OBSOLETE): frozenset({C.PASS, C.CANCEL, C.FALLBACK}),
}
"""(from, to) -> who may cause it."""

CLOSED_BY: dict[Cause, frozenset[Closed]] = {
    C.PASS: frozenset({Closed.MOVED_ON, Closed.CHANGED, Closed.FAILED}),
    C.CANCEL: frozenset({Closed.CANCELLED}),
    C.FALLBACK: frozenset({Closed.FAILED}),
}
"""Why an ask may be closed, by whom closes it."""


def run_allowed(before: RunStatus, after: RunStatus, *, cause: Cause) -> bool:
    """Whether ``cause`` may take a run from ``before`` to ``after`` (the same status: always)."""
    if before is after and (before, after) not in RUN_TRANSITIONS:
        return True
    return cause in RUN_TRANSITIONS.get((before, after), frozenset())


def ask_allowed(before: AskStatus, after: AskStatus, *, cause: Cause, closed: Closed | None = None) -> bool:
    """Whether ``cause`` may take an ask from ``before`` to ``after`` (closing it for ``closed``)."""
    if before is after:
        return True
    if cause not in ASK_TRANSITIONS.get((before, after), frozenset()):
        return False
    return after is not A.OBSOLETE or (closed is not None and closed in CLOSED_BY.get(cause, frozenset()))


def check_run(before: RunStatus, after: RunStatus, *, cause: Cause, run_id: str = "") -> None:
    if not run_allowed(before, after, cause=cause):
        raise IllegalTransition(f"run {run_id or '?'}: {before.value} -> {after.value} by {cause.value}")


def check_ask(
    before: AskStatus, after: AskStatus, *, cause: Cause, closed: Closed | None = None, key: str = ""
) -> None:
    if not ask_allowed(before, after, cause=cause, closed=closed):
        why = f" ({closed.value})" if closed is not None else ""
        raise IllegalTransition(f"ask {key or '?'}: {before.value} -> {after.value}{why} by {cause.value}")


def run_to(run: Run, status: RunStatus, *, cause: Cause, **changes: Any) -> Run:
    """``run`` with ``status`` (and ``changes``), or :class:`IllegalTransition`."""
    check_run(run.status, status, cause=cause, run_id=run.run_id)
    return run.evolve(status=status, **changes)


def ask_to(ask: Ask, status: AskStatus, *, cause: Cause, closed: Closed | None = None, **changes: Any) -> Ask:
    """``ask`` with ``status`` (and ``changes``), or :class:`IllegalTransition`.

    Closing an ask names why (``closed``), which the cause must be allowed to give: a
    cancel closes as cancelled, a save fallback as failed, a pass for any reason of its own.
    """
    check_ask(ask.status, status, cause=cause, closed=closed, key=ask.key)
    if status is A.OBSOLETE:
        changes["closed"] = closed
    return replace(ask, status=status, **changes)


def closed_for(status: RunStatus) -> Closed:
    """Why a run that ended with ``status`` closes its open asks."""
    return {R.FAILED: Closed.FAILED, R.CANCELLED: Closed.CANCELLED}.get(status, Closed.MOVED_ON)
