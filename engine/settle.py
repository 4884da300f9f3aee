"""Pure bookkeeping after a graph pass: which asks are new, used, re-raised or moot.

Kept apart from the lifecycle so the rules can be tested without a store or a graph.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection
from dataclasses import dataclass, replace

from engine.execution import Step, StepStatus
from persistence.records import Ask, AskStatus, MessageRef, Run, RunStatus

_STATUS_AFTER = {
    StepStatus.INTERRUPTED: RunStatus.WAITING,
    StepStatus.COMPLETED: RunStatus.COMPLETED,
    StepStatus.FAILED: RunStatus.FAILED,
}


@dataclass(frozen=True, kw_only=True)
class Outcome:
    run: Run
    new_asks: list[Ask]

    def with_cards(self, cards: dict[str, MessageRef]) -> Outcome:
        asks = dict(self.run.asks)
        placed = []
        for ask in self.new_asks:
            ref = cards.get(ask.key)
            placed_ask = replace(ask, card=ref) if ref is not None else ask
            asks[ask.key] = placed_ask
            placed.append(placed_ask)
        return Outcome(run=self.run.evolve(asks=asks), new_asks=placed)


def new_ask_key(taken: Collection[str]) -> str:
    """A fresh key, never reused: a card from a pass that died before saving can then
    only ever be "unknown", never answer a different ask created by the takeover."""
    while (key := secrets.token_hex(4)) in taken:
        pass
    return key


def settle(claimed: Run, step: Step, *, sent: list[str], now: float) -> Outcome:
    """The record to save after ``step``, given the asks whose answers were ``sent``.

    An interrupt raised again with the same id from the same node is the same ask:
    it keeps its key and its card (partial answers re-raise the unanswered asks). An
    ask left pending that the pass did not raise again, or any open ask of a run that
    ended, can no longer be answered and becomes obsolete.
    """
    asks = dict(claimed.asks)
    for key in sent:
        asks[key] = replace(asks[key], status=AskStatus.CONSUMED)

    seq = claimed.ask_seq
    new_asks: list[Ask] = []
    still_open: set[str] = set()
    probe = claimed.evolve(asks=asks)
    for raised in step.raised:
        live = probe.live_ask_for(raised.interrupt_id, raised.node_id)
        if live is None:
            live = next(
                (a for a in new_asks if a.interrupt_id == raised.interrupt_id and a.node_id == raised.node_id),
                None,
            )
        if live is not None:
            still_open.add(live.key)
            continue
        seq += 1
        new_asks.append(
            Ask(
                key=new_ask_key([*asks, *(a.key for a in new_asks)]),
                interrupt_id=raised.interrupt_id,
                name=raised.name,
                reason=raised.reason,
                node_id=raised.node_id,
                status=AskStatus.PENDING,
                created_at=now,
                verdicts=raised.verdicts,
            )
        )

    status = _STATUS_AFTER[step.status]
    for key, ask in asks.items():
        if ask.status is AskStatus.PENDING and (status.terminal or key not in still_open):
            asks[key] = replace(ask, status=AskStatus.OBSOLETE)
    asks.update({a.key: a for a in new_asks})

    run = claimed.evolve(
        status=status,
        asks=asks,
        ask_seq=seq,
        snapshot=step.snapshot if step.snapshot is not None else claimed.snapshot,
        lease_owner=None,
        lease_until=None,
        output=step.output if status is RunStatus.COMPLETED else claimed.output,
        error=step.error if status is RunStatus.FAILED else None,
        updated_at=now,
    )
    return Outcome(run=run, new_asks=new_asks)


def merge_concurrent_decisions(*, claimed: Run, mine: Run, fresh: Run) -> Run:
    """``mine`` plus the decisions people made while the pass ran (found in ``fresh``).

    Only asks that were pending when the run was claimed can have changed: a decision
    on one still open keeps it decided for the next round; a decision on one this pass
    made obsolete is kept on the record (it is never silently dropped).
    """
    asks = dict(mine.asks)
    for key, ask in fresh.asks.items():
        before = claimed.asks.get(key)
        if before is None or before.status is not AskStatus.PENDING or ask.status is not AskStatus.DECIDED:
            continue
        current = asks.get(key)
        if current is None:
            continue
        status = AskStatus.DECIDED if current.status is AskStatus.PENDING else AskStatus.OBSOLETE
        asks[key] = replace(current, status=status, decision=ask.decision)
    return mine.evolve(asks=asks)


def obsoleted(before: Run, after: Run) -> list[Ask]:
    """Asks that became obsolete between two versions: their cards lose their buttons."""
    return [
        ask
        for key, ask in after.asks.items()
        if ask.status is AskStatus.OBSOLETE and key in before.asks and before.asks[key].status is not AskStatus.OBSOLETE
    ]
