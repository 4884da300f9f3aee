"""Saving a finished pass: through version conflicts, store outages and lost leases.

A pass may have run side effects (an approved tool), and only its save records them:
if it is lost, the sweeper runs the pass again after the lease expires. So a save is
retried for as long as the lease surely holds (the heartbeat renews it meanwhile), and
a save that cannot land ends the run as failed instead (a smaller write, with every
open card closed), so that nothing is redone over and over.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable

from engine.audit import AuditEvent, appended
from engine.invariants import enforced
from engine.lease import Beat
from engine.progress import ended_progress
from engine.records import AskStatus, Closed, Run, RunStatus
from engine.settle import merge_concurrent_decisions
from engine.store import RunStore, StoreError, StoreUnavailable, VersionConflict
from engine.threads import in_thread
from engine.transitions import Cause, ask_to, run_to

logger = logging.getLogger(__name__)

FIRST_DELAY, MAX_DELAY = 0.5, 10.0
LEASE_MARGIN = 5.0  # seconds of lease left when the save stops retrying and falls back
RETRY_WINDOW = 120.0  # at most this long retrying one save, even while the lease is renewed


def failed_record(run: Run, *, now: float, error: str) -> Run:
    """``run`` ended as failed: open asks closed (their cards will say so), lease and state dropped."""
    return _ended(run, now=now, status=RunStatus.FAILED, why=Closed.FAILED, error=error)


def cancelled_record(run: Run, *, now: float) -> Run:
    """``run`` ended as cancelled by ``run.cancelled_by``: open asks closed, nothing resumes it."""
    ended = _ended(run, now=now, status=RunStatus.CANCELLED, why=Closed.CANCELLED, error=None)
    trail, dropped = appended(
        ended.audit, ended.audit_dropped, [AuditEvent(at=now, kind="cancelled", by=run.cancelled_by)]
    )
    return ended.evolve(audit=trail, audit_dropped=dropped)


def _ended(run: Run, *, now: float, status: RunStatus, why: Closed, error: str | None) -> Run:
    cause = Cause.CANCEL if status is RunStatus.CANCELLED else Cause.FALLBACK
    asks = {
        k: ask_to(a, AskStatus.OBSOLETE, cause=cause, closed=why)
        if a.status in (AskStatus.PENDING, AskStatus.DECIDED)
        else a
        for k, a in run.asks.items()
    }
    if error is not None:
        trail, dropped = appended(run.audit, run.audit_dropped, [AuditEvent(at=now, kind="failed", text=error)])
        run = run.evolve(audit=trail, audit_dropped=dropped)
    if run.status.terminal:  # already ended (a repair, or a cancel racing an ending): keep how it ended
        return run.evolve(asks=asks, lease_owner=None, lease_until=None, updated_at=now)
    return run_to(
        run,
        status,
        cause=cause,
        progress=ended_progress(run.progress, status=status.value),
        asks=asks,
        lease_owner=None,
        lease_until=None,
        snapshot=None,
        state_ref=None,
        stalled=0,
        stalled_at=None,
        error=error,
        updated_at=now,
    )


class Saver:
    def __init__(self, *, store: RunStore, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    async def save(self, claimed: Run, target: Run, *, beat: Beat) -> tuple[Run, bool, frozenset[str]]:
        """Save ``target`` at the claimed version, adopting what others recorded meanwhile.

        Returns the run as stored and True, or the run as another process holds it and
        False when this one lost its lease (or could save nothing before it ran out); and
        the ids of the audit events adopted from others' writes (a click's decision landed
        during the pass): their writers logged and counted them, so the caller must not.
        """
        fallback = failed_record(claimed, now=self._clock(), error="the run's progress could not be saved")
        expected, delay, failing_since = claimed.version, FIRST_DELAY, None
        write_id = secrets.token_hex(8)  # the same across retries of one target: a landed attempt is ours
        stored = claimed
        adopted: frozenset[str] = frozenset()
        while True:
            target = enforced(target, now=self._clock(), where="the save of a pass", before=stored)
            try:
                saved = await in_thread(self._store.save, target, expected_version=expected, write_id=write_id)
                return saved, True, adopted
            except VersionConflict:
                fresh = await self._reload(claimed, beat=beat)
                if fresh is None or fresh.lease_owner != claimed.lease_owner:
                    logger.warning("run %s: lost the lease during a pass; dropped its result", claimed.run_id)
                    return (fresh if fresh is not None else claimed), False, adopted
                write_id, stored = secrets.token_hex(8), fresh
                adopted |= {e.id for e in fresh.audit if e not in claimed.audit}
                target = merge_concurrent_decisions(claimed=claimed, mine=target, fresh=fresh)
                fallback = merge_concurrent_decisions(claimed=claimed, mine=fallback, fresh=fresh)
                if fresh.cancelled_by and not target.status.terminal:
                    # Cancelled while this pass ran: it stops here, and nothing resumes it.
                    # A pass that ended the run keeps its ending: relabelling a run whose
                    # payment went out as "cancelled" would hide what happened.
                    logger.info("run %s: cancelled during a pass; ending it", claimed.run_id)
                    target = cancelled_record(target, now=self._clock())
                expected = fresh.version
            except StoreError as error:
                now = self._clock()
                giving_up_at = min(beat.until - LEASE_MARGIN, (failing_since := failing_since or now) + RETRY_WINDOW)
                if isinstance(error, StoreUnavailable) and giving_up_at - now > delay and not beat.lost:
                    logger.warning("run %s: saving failed (%s); retrying", claimed.run_id, error)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, MAX_DELAY)
                    continue
                if target is fallback or beat.lost:
                    logger.error("run %s: could not save; its lease will expire and be taken over", claimed.run_id)
                    return claimed, False, adopted
                # Out of time or refused for good: end the run instead. Tried even when the
                # lease may be gone: the fallback is conditional on this claim, so a
                # takeover's record is never overwritten, and without it the takeover
                # would run the pass (and its side effects) again.
                logger.error("run %s: saving its progress failed (%s); ending it as failed", claimed.run_id, error)
                target, delay, write_id, failing_since = fallback, FIRST_DELAY, secrets.token_hex(8), None

    async def _reload(self, claimed: Run, *, beat: Beat) -> Run | None:
        """The run as stored now; None (as if lost) when the store stays away past the lease."""
        while True:
            try:
                return await in_thread(self._store.load, claimed.run_id, snapshot=False)
            except StoreUnavailable:
                if beat.until - LEASE_MARGIN <= self._clock():
                    return None
                await asyncio.sleep(FIRST_DELAY)
