"""What time does to a waiting run: asks expire, reminders fall due, escalations start.

Pure functions of the record and the clock; the engine's sweeper applies them with
conditional writes, so several sweepers at once do each thing once: an expiry is a
decision (exactly one of any number of writers wins it), a reminder or an escalation is
claimed by a save at the version the sweeper read (the loser's save fails, it re-reads
and finds it done) and posted afterwards, from the record, like a card.
"""

from __future__ import annotations

from dataclasses import replace

from engine.audit import AuditEvent, appended
from engine.records import Ask, Decision, Run, Verdict

SKIPPED = "skip"  # a reminder that fell due while no sweeper ran, superseded by a later one
REMIND = "remind"
ESCALATE = "escalate"


def expired_asks(run: Run, *, now: float) -> list[Ask]:
    return [a for a in run.pending_asks() if a.rules.expires_at is not None and a.rules.expires_at <= now]


def expiry_decision(ask: Ask, *, now: float) -> Decision:
    """The bot's rejection of an ask nobody decided in time (``user`` is empty: nobody)."""
    waited = max(ask.rules.expires_at or now, ask.created_at) - ask.created_at
    votes = f" ({len(ask.votes)} of {ask.rules.quorum} approvals)" if ask.votes else ""
    return Decision(
        verdict=Verdict.REJECT,
        user="",
        at=now,
        text=f"Nobody decided within {human_duration(waited)}{votes}; the ask expired and counts as a rejection.",
        expired=True,
    )


def with_notices(run: Run, *, now: float) -> Run | None:
    """``run`` with the reminders and escalations due by ``now`` claimed, or None if none are."""
    asks = dict(run.asks)
    events: list[AuditEvent] = []
    for ask in run.pending_asks():
        notices = list(ask.notices)
        claimed = notices.count(REMIND) + notices.count(SKIPPED)
        due = sum(1 for t in ask.rules.remind_at if t <= now)
        if due > claimed:
            # Only the latest of several overdue reminders is posted: one nudge, not a burst.
            notices += [SKIPPED] * (due - claimed - 1) + [REMIND]
            events.append(AuditEvent(at=now, kind="reminded", ask=ask.key, text=f"reminder {due}"))
        escalated = ask.escalated
        if not escalated and ask.rules.escalate_at is not None and ask.rules.escalate_at <= now:
            escalated = True
            notices.append(ESCALATE)
            events.append(AuditEvent(at=now, kind="escalated", ask=ask.key, text=", ".join(ask.rules.escalate_to)))
        if tuple(notices) != ask.notices:
            asks[ask.key] = replace(ask, notices=tuple(notices), escalated=escalated)
    if not events:
        return None
    trail, dropped = appended(run.audit, run.audit_dropped, events)
    return run.evolve(asks=asks, audit=trail, audit_dropped=dropped, updated_at=now, stalled=0, stalled_at=None)


def human_duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 129600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"
