"""Rules every store backend applies inside its atomic steps, written once, by the engine.

A backend implements a few primitives (a conditional write, a read inside a write
lock); what those primitives decide lives here, beside the store port, so SQLite and
DynamoDB cannot drift apart and the engine never imports a backend. DynamoDB states
the same rules as condition and update expressions; the contract suite checks that
both agree.
"""

from __future__ import annotations

from dataclasses import replace

from engine.records import Run, RunStatus
from engine.store import Delivery


def claimable_with_decision(run: Run, *, now: float) -> bool:
    """A decision may claim the run in the same write: it waits and nobody holds it."""
    return run.status is RunStatus.WAITING and (run.lease_owner is None or (run.lease_until or 0.0) < now)


def apply_delivery(run: Run, delivery: Delivery) -> Run:
    """``run`` with what Slack accepted recorded; refs already recorded win (first poster)."""
    asks = dict(run.asks)
    for key, ref in delivery.cards.items():
        if key in asks and asks[key].card is None:
            asks[key] = replace(asks[key], card=ref)
    for key, shown in delivery.shown.items():
        if key in asks:
            asks[key] = replace(asks[key], shown=shown)
    return run.evolve(
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
    )
