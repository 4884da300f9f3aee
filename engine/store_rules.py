"""Rules every store backend applies inside its atomic steps, written once, by the engine.

A backend implements a few primitives (a conditional write, a read inside a write
lock); what those primitives decide lives here, beside the store port, so SQLite and
DynamoDB cannot drift apart and the engine never imports a backend. Whether a decision
may be recorded is declared once in ``engine.decision_rules``: judged here in Python, and
rendered by DynamoDB as its condition (the contract suite checks both agree).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.audit import MAX_EVENTS, AuditEvent, appended
from engine.decision_rules import Gate, counted, judge, record_of
from engine.policy import deciders, final_vote
from engine.records import Ask, AskStatus, Decision, MessageRef, Run, RunStatus
from engine.store import AskNotFound, AskNotPending, DecisionRefused, Delivery, Lease, RunNotFound, VerdictNotOffered
from engine.transitions import Cause, ask_to, run_to


def lease_free(run: Run, *, now: float) -> bool:
    """Nobody holds ``run`` at ``now``: no lease, or one that ran out.

    A claim is taken only then. Its version check alone is not enough: a renewal does not
    bump the version (it is a heartbeat, not a change), so a sweeper that read the run
    before its holder renewed could otherwise take it over from a live holder.
    """
    return run.lease_owner is None or (run.lease_until or 0.0) < now


def claimable_with_decision(run: Run, *, now: float) -> bool:
    """A decision may claim the run in the same write: it waits and nobody holds it."""
    return run.status is RunStatus.WAITING and (run.lease_owner is None or (run.lease_until or 0.0) < now)


def decided(
    run: Run | None,
    run_id: str,
    ask_key: str,
    decision: Decision,
    *,
    now: float,
    claim: Lease | None = None,
    card: MessageRef | None = None,
    member_of: frozenset[str] = frozenset(),
    event: AuditEvent | None = None,
) -> Run:
    """The record after ``decision``, or the store error that refuses it.

    Whether it may be recorded is ``engine.decision_rules`` judged on the record: the same
    declaration DynamoDB renders as its condition, so the stores cannot disagree.

    Returns ``run`` itself (same version) when the decision is already recorded: the
    same answer again after it decided the ask, or the very same vote delivered twice.
    """
    if run is None:
        raise RunNotFound(run_id)
    ask = run.asks.get(ask_key)
    if ask is None:
        raise AskNotFound(f"{run_id}/{ask_key}")
    if ask.status is AskStatus.DECIDED and decision.same_answer(ask.decision):
        return run  # the same answer again: already done
    if ask.status is AskStatus.PENDING and ask.votes.get(decision.user) == decision:
        return run  # this very vote, delivered again
    record = record_of(run, ask_key)
    decision = counted(record, ask_key, decision, member_of=member_of)  # the all_of entry it fills
    why = judge(record, ask_key, decision, member_of=member_of, now=now)
    if why is Gate.NOT_PENDING:
        raise AskNotPending(run, ask_key)
    if why is Gate.NOT_OFFERED:
        raise VerdictNotOffered(run, ask_key, decision.verdict)
    if why is not None:
        raise DecisionRefused(run, ask_key, why)
    if final_vote(ask, decision):
        cause = Cause.SWEEPER if decision.expired else Cause.CLICK  # an expiry is the sweeper's decision
        ask = ask_to(ask, AskStatus.DECIDED, cause=cause, decision=decision, card=ask.card or card)
    else:
        ask = replace(ask, votes={**ask.votes, decision.user: decision}, card=ask.card or card)
        event = replace(event, kind="voted") if event is not None else None
    event = counted_event(event, decision) if event is not None else None
    trail, dropped = appended(run.audit, run.audit_dropped, [event] if event else [])
    new = run.evolve(
        asks={**run.asks, ask_key: ask}, version=run.version + 1, updated_at=now, audit=trail, audit_dropped=dropped
    )
    if claim is not None and ask.status is AskStatus.DECIDED and claimable_with_decision(run, now=now):
        handed = {**new.asks, ask_key: replace(ask, handed=claim.owner)}  # in the claim: ``engine.takeover``
        new = run_to(
            new, RunStatus.RESUMING, cause=Cause.CLICK, lease_owner=claim.owner, lease_until=claim.until, asks=handed
        )
    return new


def counted_event(event: AuditEvent, decision: Decision) -> AuditEvent:
    """``event`` naming the ``all_of`` entry the approval counted for, so the trail explains it."""
    if decision.counts_for is None:
        return event
    return replace(event, text=f"{event.text or decision.verdict.value} (for {decision.counts_for})")


def noted(run: Run, event: AuditEvent) -> Run | None:
    """The record with ``event`` appended, or None when the trail is full (left as it is)."""
    if len(run.audit) >= MAX_EVENTS:
        return None
    return run.evolve(audit=(*run.audit, event), version=run.version + 1)


def apply_delivery(run: Run, delivery: Delivery) -> Run:
    """``run`` with what Slack accepted recorded; refs already recorded win (first poster)."""
    asks = dict(run.asks)
    for key, ref in delivery.cards.items():
        if key in asks and asks[key].card is None:
            asks[key] = replace(asks[key], card=ref)
    for key, shown in delivery.shown.items():
        if key in asks:
            asks[key] = replace(asks[key], shown=shown)
    for key, count in delivery.notified.items():
        if key in asks and count > asks[key].notified:
            asks[key] = replace(asks[key], notified=count)
    progress = run.progress
    if progress is not None and delivery.progress is not None:
        # Last wins, not the highest: an edit of an older state that lands last is what the
        # message shows, and leaves the newer state owed (DynamoDB's record does the same).
        rev = delivery.progress_shown if delivery.progress_shown is not None else progress.shown
        progress = replace(progress, message=progress.message or delivery.progress, shown=rev)
    return run.evolve(
        progress=progress,
        asks=asks,
        thread=run.thread or delivery.thread,
        final=run.final or delivery.final,
        stalled=run.stalled + 1 if delivery.stalled_at is not None else 0,
        stalled_at=delivery.stalled_at,
    )


def known_to(delivery: Delivery, run: Run) -> Delivery:
    """``delivery`` for the asks ``run`` still holds (a finished one may have been dropped)."""
    return replace(
        delivery,
        cards={k: v for k, v in delivery.cards.items() if k in run.asks},
        shown={k: v for k, v in delivery.shown.items() if k in run.asks},
        notified={k: v for k, v in delivery.notified.items() if k in run.asks},
    )


# -- the approvals inbox and App Home (``RunStore.index_asks`` and what follows it) ------

ANYONE = "anyone"  # the principal of an ask that anyone in the run's channel may decide
HOME_KEPT_SECONDS = 30 * 86400.0  # an App Home opened longer ago than this is forgotten


def principals(ask: Ask) -> tuple[str, ...]:
    """Under whom ``ask`` waits in an inbox: the users and groups who may decide it now.

    An ask open to the whole channel waits under ``ANYONE`` (the caller lists it for
    whoever asks, knowing which channels they see). An escalation adds its group here,
    which is why the store is asked to index the asks again after one.
    """
    who = deciders(ask)
    return who if who is not None else (ANYONE,)


@dataclass(frozen=True, kw_only=True)
class InboxEntry:
    """One pending ask, findable under one principal."""

    principal: str
    created_at: float
    run_id: str
    ask_key: str


def inbox_entries(run: Run) -> list[InboxEntry]:
    """Every (principal, pending ask) pair of ``run``: what ``index_asks`` makes findable."""
    return [
        InboxEntry(principal=who, created_at=ask.created_at, run_id=run.run_id, ask_key=ask.key)
        for ask in run.pending_asks()
        for who in dict.fromkeys(principals(ask))
    ]


def inbox_ask(run: Run | None, entry: InboxEntry) -> Ask | None:
    """The ask ``entry`` names if it is still pending under its principal, else None (stale).

    An ask never becomes pending again and its principals only grow, so an entry judged
    stale against a strongly consistent read of the run can be deleted without a race.
    """
    ask = run.asks.get(entry.ask_key) if run is not None else None
    if ask is None or ask.status is not AskStatus.PENDING or entry.principal not in principals(ask):
        return None
    return ask
