"""What must hold of every run record the engine saves, and what to do when it does not.

Why: a record that breaks one of these is a run nobody can finish: waiting with nothing
to answer (no card, nothing the sweeper revisits), ended with live cards, or cancelled
and still running. The transition table (``engine.transitions``) keeps each change
legal; these hold the record as a whole. They are checked before every save of a pass
(``engine.saving``), of a cancel (``engine.oversight``), and by the sweeper.

On a violation, tests are strict (``APPROVAL_BOT_STRICT_INVARIANTS=1`` raises
:class:`InvariantBroken`); production logs an error and saves a repaired record
instead, always toward a state a person can see and act on:

* a waiting run with nothing open ends as failed, its cards closed, the requester told
  by the final message (a carried decision is kept decided by the rules themselves, so
  a run reaching this has lost track of what it waits for: guessing would be worse);
* a run ended with open asks gets them closed, for the reason its ending gives;
* a closed ask without a reason is closed as moved on;
* a waiting run with a cancel mark is ended as cancelled.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace

from engine.records import AskStatus, Closed, Run, RunStatus
from engine.transitions import Cause, ask_to, closed_for

logger = logging.getLogger(__name__)

STRANDED_ERROR = "the run was left waiting with nothing to answer; ended so that it does not hang"


class InvariantBroken(AssertionError):
    """A run record breaks the lifecycle's invariants (raised in strict mode only)."""


def strict() -> bool:
    """Whether a violation raises (tests) rather than being logged and repaired (production)."""
    return os.environ.get("APPROVAL_BOT_STRICT_INVARIANTS", "").strip().lower() in ("1", "true", "yes")


def violations(run: Run) -> list[str]:
    """Every invariant ``run`` breaks, in words (empty when it is sound)."""
    found: list[str] = []
    open_asks = [a for a in run.asks.values() if a.status in (AskStatus.PENDING, AskStatus.DECIDED)]
    if run.status is RunStatus.WAITING:
        if not open_asks:
            found.append("waiting with no open ask")
        unseen = [a.key for a in run.pending_asks() if a.card is None and not run.owes_slack]
        if unseen:
            found.append(f"pending asks {unseen} have no card and none is owed")
        if run.decided_asks() and run.lease_owner is None and run.sweep_at is None:
            found.append("a decision waits to be sent but the run is not due for a sweep")
        if run.cancelled_by:
            found.append(f"cancelled by {run.cancelled_by} yet waiting")
    if run.status.terminal and open_asks:
        found.append(f"{run.status.value} with open asks {[a.key for a in open_asks]}")
    unexplained = [a.key for a in run.asks.values() if a.status is AskStatus.OBSOLETE and a.closed is None]
    if unexplained:
        found.append(f"asks {unexplained} closed without a reason")
    return found


def lost_decisions(before: Run, after: Run) -> list[str]:
    """Decisions recorded in ``before`` that ``after`` dropped: every decision is consumed by
    exactly one pass, carried to the next (still decided), or kept on its closed ask."""
    lost = []
    for key, ask in before.asks.items():
        now = after.asks.get(key)
        if ask.status is not AskStatus.DECIDED or now is None:
            continue
        kept = now.status in (AskStatus.DECIDED, AskStatus.CONSUMED) or (
            now.status is AskStatus.OBSOLETE and (now.closed is Closed.CHANGED or now.decision is not None)
        )
        if not kept:
            lost.append(f"the decision on ask {key} was dropped ({now.status.value})")
    return lost


def repaired(run: Run, *, now: float) -> Run:
    """``run`` brought back to a state someone can see and act on (see the module's docstring)."""
    from engine.saving import cancelled_record, failed_record  # saving checks through this module

    asks = {
        k: replace(a, closed=closed_for(run.status) if run.status.terminal else Closed.MOVED_ON)
        if a.status is AskStatus.OBSOLETE and a.closed is None
        else a
        for k, a in run.asks.items()
    }
    run = run.evolve(asks=asks)
    if run.status.terminal:
        why = closed_for(run.status)
        cause = {RunStatus.CANCELLED: Cause.CANCEL, RunStatus.FAILED: Cause.FALLBACK}.get(run.status, Cause.PASS)
        open_ = (AskStatus.PENDING, AskStatus.DECIDED)
        return run.evolve(
            asks={
                k: ask_to(a, AskStatus.OBSOLETE, cause=cause, closed=why) if a.status in open_ else a
                for k, a in run.asks.items()
            }
        )
    if run.status is RunStatus.WAITING and run.cancelled_by:
        return cancelled_record(run, now=now)
    if run.status is RunStatus.WAITING and not (run.pending_asks() or run.decided_asks()):
        return failed_record(run, now=now, error=STRANDED_ERROR)
    return run


def enforced(run: Run, *, now: float, where: str, before: Run | None = None) -> Run:
    """``run`` if sound; else raise (strict) or log an error and return it repaired.

    ``before`` is the record as stored before this write, whose decisions must survive it.
    """
    broken = violations(run) + (lost_decisions(before, run) if before is not None else [])
    if not broken:
        return run
    if strict():
        raise InvariantBroken(f"run {run.run_id} at {where}: " + "; ".join(broken))
    logger.error("run %s at %s breaks the lifecycle's invariants: %s; repairing it", run.run_id, where, broken)
    return repaired(run, now=now)
