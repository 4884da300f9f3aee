"""What a takeover may send again, and when taking over has to stop.

A pass gets the decided answers its claim marked as handed to it (``Ask.handed``, written
by the claim itself: ``RunStore.claim``, ``RunStore.decide`` with a claim). A save that
lands consumes them. So a takeover (a claim of a run whose holder's lease ran out) that
finds an answer still decided and handed to another token knows that answer reached a
pass that died or could not save: an approved tool may have run. Running that pass again
with the same approval would run the tool again, silently. Instead:

* an approval (Approve, Edit, Trust, Retry) becomes a new "may have acted" ask (its card
  shows what the first card showed and the warning; Retry sends the original answer
  again, knowingly, Skip rejects the call) unless the graph declares the tool or the ask
  idempotent (``graph_def(..., idempotent=[...])``): then it is sent again;
* a rejection, a reply or an expiry approved no side effect: it is sent again.

And each takeover in a row without a landed save is counted (``Run.takeovers``): past
``MAX_TAKEOVERS`` the run fails closed, its cards closed and its requester told, instead
of being taken over (and anything run again) without end.

Pure functions of the record, so the rules are tested without a store or a graph.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from engine.audit import AuditEvent, appended
from engine.policy import AskRules
from engine.records import Ask, AskStatus, RetryOf, Run, RunStatus, ToolCall, Verdict
from engine.saving import failed_record
from engine.settle import new_ask_key
from engine.sources import response_for
from engine.transitions import Cause, ask_to, run_to

MAX_TAKEOVERS = 3  # takeovers of one step in a row; the next one fails the run instead
# Verdicts whose answer lets a side effect happen (a Retry on a review re-runs its tool,
# a Retry on a "may have acted" card re-sends an approval).
ACTING = frozenset({Verdict.APPROVE, Verdict.EDIT, Verdict.TRUST, Verdict.RETRY})
MAY_HAVE_ACTED_VERDICTS = (Verdict.RETRY, Verdict.REJECT)  # the card shows Reject as "Skip"
# Under a quorum one person's Retry must not send an approval again on their word alone
# (``engine.decision_rules`` does not offer it): the card asks for votes, as Approve, each
# shown as "Retry" and counted until the quorum is reached; the answer sent then names them.
MAY_HAVE_ACTED_QUORUM_VERDICTS = (Verdict.APPROVE, Verdict.REJECT)


def may_have_acted_verdicts(rules: AskRules) -> tuple[Verdict, ...]:
    """The buttons of a "may have acted" card raised under ``rules``."""
    return MAY_HAVE_ACTED_VERDICTS if rules.quorum <= 1 and not rules.all_of else MAY_HAVE_ACTED_QUORUM_VERDICTS


def carried_terms(rules: AskRules, *, since: float, now: float) -> AskRules:
    """The terms a question was raised with, for the same question asked again at ``now``:
    who may decide, how many, self-approval and escalation stay as they were (a definition
    changed or unreadable since must not loosen them); the deadlines move by the time passed."""
    shift = now - since

    def moved(at: float | None) -> float | None:
        return None if at is None else at + shift

    return replace(
        rules,
        expires_at=moved(rules.expires_at),
        remind_at=tuple(t + shift for t in rules.remind_at),
        escalate_at=moved(rules.escalate_at),
    )


def is_takeover(run: Run, *, now: float) -> bool:
    """Whether claiming ``run`` now takes it from a holder whose lease ran out."""
    return run.status.leased and (run.lease_until or 0.0) < now


def to_hand(run: Run) -> list[str]:
    """The decided asks a claim of ``run`` marks as handed to its pass (not yet handed)."""
    return [a.key for a in run.decided_asks() if a.handed is None]


def claimed_record(claimed: Run, *, handing: Collection[str], takeovers: int | None) -> Run:
    """The claimer's copy of what its claim wrote (``RunStore.claim``'s ``handing`` and ``takeovers``)."""
    token = claimed.lease_owner
    asks = {k: replace(a, handed=token) if k in handing else a for k, a in claimed.asks.items()}
    return claimed.evolve(asks=asks, takeovers=claimed.takeovers if takeovers is None else takeovers)


def handed_to_dead_pass(run: Run) -> list[Ask]:
    """Decided asks whose answer a pass other than the holder's got, and never saved."""
    return [a for a in run.decided_asks() if a.handed is not None and a.handed != run.lease_owner]


def may_have_acted(ask: Ask, *, idempotent: Collection[str]) -> bool:
    """Whether sending ``ask``'s answer again could run a side effect a second time."""
    decision = ask.decision
    if decision is None or decision.expired or decision.verdict not in ACTING:
        return False
    names = {ask.name} | ({ask.gated_tool} if ask.gated_tool is not None else set())
    return not names & set(idempotent)


def sendable(run: Run) -> list[Ask]:
    """The decided asks the holder of ``run`` sends to the graph: those handed to it, and
    those a dead pass got that may be sent again (``review`` turned the others into new
    asks). An answer decided after the claim waits for the next round's claim."""
    return [a for a in run.decided_asks() if a.decision is not None and a.handed is not None]


@dataclass(frozen=True, kw_only=True)
class Review:
    run: Run
    new_asks: list[Ask]


def review(run: Run, *, now: float, idempotent: Collection[str]) -> Review:
    """``run`` as claimed by a takeover, with every approval a dead pass got replaced by a
    "may have acted" ask (the original is consumed: its card keeps showing the answer).

    The new ask is the same question (interrupt, node, reason, tool, digest: the graph
    raising it again finds it), under the terms it was raised with (``carried_terms``)
    and with the answer to send again on Retry, under the original ``approval_id``.
    """
    asks = dict(run.asks)
    new_asks: list[Ask] = []
    for ask in handed_to_dead_pass(run):
        if not may_have_acted(ask, idempotent=idempotent):
            continue
        assert ask.decision is not None
        again = ask.retry_of or RetryOf(key=ask.key, response=response_for(ask, ask.decision, run_id=run.run_id))
        asks[ask.key] = ask_to(ask, AskStatus.CONSUMED, cause=Cause.TAKEOVER)
        new = Ask(
            key=new_ask_key([*asks, *(a.key for a in new_asks)]),
            interrupt_id=ask.interrupt_id,
            name=ask.name,
            reason=ask.reason,
            node_id=ask.node_id,
            status=AskStatus.PENDING,
            created_at=now,
            verdicts=may_have_acted_verdicts(ask.rules),
            tool=_as_sent(ask),
            # A call too big to keep still names its tool: its preview and idempotence go by it.
            tool_name=ask.tool_name,
            digest=ask.digest,
            rules=carried_terms(ask.rules, since=ask.created_at, now=now),
            retry_of=again,
            preview=ask.preview,  # Retry binds to it like the approval it sends again
        )
        new_asks.append(new)
    if not new_asks:
        return Review(run=run, new_asks=[])
    events = [
        AuditEvent(at=now, kind="may_have_acted", ask=a.key, text=f"asked again after a takeover: {_what(a)}")
        for a in new_asks
    ]
    trail, dropped = appended(run.audit, run.audit_dropped, events)
    asks.update({a.key: a for a in new_asks})
    return Review(run=run.evolve(asks=asks, audit=trail, audit_dropped=dropped), new_asks=new_asks)


def asked_again(reviewed: Review, *, now: float) -> Run:
    """The record to save when a takeover only found approvals to ask about again: the run
    waits for Retry or Skip, its state as saved, nothing run (a landed save: the count
    of takeovers starts again)."""
    return run_to(
        reviewed.run,
        RunStatus.WAITING,
        cause=Cause.TAKEOVER,
        lease_owner=None,
        lease_until=None,
        updated_at=now,
        stalled=0,
        stalled_at=None,
        takeovers=0,
    )


def over_cap(run: Run) -> bool:
    """Whether a takeover of ``run`` now would be one too many."""
    return run.takeovers >= MAX_TAKEOVERS


def stopped_record(run: Run, *, now: float) -> Run:
    """``run`` failed closed after too many takeovers: cards closed, nothing runs again."""
    attempts = run.takeovers + 1
    return failed_record(run, now=now, error=f"the run was stopped after {attempts} attempts to finish a step")


def _what(ask: Ask) -> str:
    return ask.tool.name if ask.tool is not None else ask.name


def _as_sent(ask: Ask) -> ToolCall | None:
    """The tool call the card shows: the one Retry sends. After an Edit that is the edited
    input, not the one first raised; a card showing the old input would have a person
    approve what it does not show."""
    decision = ask.decision
    if ask.tool is None or decision is None or decision.edited_input is None:
        return ask.tool
    return replace(ask.tool, input=decision.edited_input)
