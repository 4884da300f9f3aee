"""Pure bookkeeping after a graph pass: which asks are new, used, re-raised or moot.

Kept apart from the lifecycle so the rules can be tested without a store or a graph.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.audit import AuditEvent, appended
from engine.execution import Raised, Step, StepStatus
from engine.policy import SOLO_ONLY, AskRules
from engine.previews import Preview
from engine.records import MAX_TRAIL, Ask, AskStatus, Closed, Decision, Run, RunStatus, Verdict, ask_digest
from engine.sources import call_of, gated_tool_use_id, question_terms
from engine.transitions import Cause, ask_to, closed_for, run_to

# The run record must stay far below DynamoDB's 400 KB item limit whatever the graph says.
# Slack shows about 10,000 characters of a message anyway; the full state is in the snapshot.
MAX_OUTPUT_CHARS = 100_000
MAX_ERROR_CHARS = 10_000
MAX_REASON_CHARS = 16_000
KEEP_FINISHED_ASKS = 50
PREVIEW_CHANGED = "what will happen changed after the approval; not sent, asked again on a new card"
EDIT_MOVED_KIND = "edit_moved_rule"  # the audit event of an Edit not sent (its card says why)
EDIT_MOVED = "the edited call falls under rule {rule}, not {was}; the edit was not sent, asked again on a new card"

_STATUS_AFTER = {
    StepStatus.INTERRUPTED: RunStatus.WAITING,
    StepStatus.COMPLETED: RunStatus.COMPLETED,
    StepStatus.FAILED: RunStatus.FAILED,
    StepStatus.REJECTED: RunStatus.REJECTED,
    StepStatus.CANCELLED: RunStatus.CANCELLED,
}


@dataclass(frozen=True, kw_only=True)
class Outcome:
    run: Run
    new_asks: list[Ask]


def new_ask_key(taken: Collection[str]) -> str:
    """A fresh key, never reused: a card from a pass that died before saving can then
    only ever be "unknown", never answer a different ask created by the takeover."""
    while (key := secrets.token_hex(4)) in taken:
        pass
    return key


RulesFor = Callable[[Raised], AskRules]


def settle(
    claimed: Run,
    step: Step,
    *,
    sent: list[str],
    now: float,
    stale: Collection[str] = (),
    rules_for: RulesFor | None = None,
    go_on: bool = False,
    voided: Collection[str] = (),
    previews: Mapping[tuple[str, str | None], Preview] | None = None,
    moved: Mapping[str, str] | None = None,
    by_content: Callable[[Raised], bool] | None = None,
    trace: str | None = None,
) -> Outcome:
    """The record to save after ``step``, given the asks whose answers were ``sent``.

    An interrupt raised again with the same id from the same node and the same content
    is the same ask: it keeps its key and its card (partial answers re-raise the
    unanswered asks). Raised again with other content (its digest differs: an Edit changed
    the tool input it asks about, a takeover's model said something else), it is a new
    question: the old ask is closed as changed, whatever was decided on it is discarded,
    and a new ask with a new key gets a new card. An ask left pending that the pass did
    not raise again, or any open ask of a run that ended, is closed too.

    Each new ask gets the terms of the graph's policy (``rules_for``); under a quorum it
    offers no Edit or Trust (see ``engine.policy.SOLO_ONLY``). The audit trail gains
    what happened: resumed, asked, and how the run ended.

    A run that ends drops its state (nothing will resume it); cards are not posted here
    but after the save, from the record (durable before visible).

    A new ask whose rule decides it (``AskPolicy.auto``) is decided here, by nobody
    (``Decision.policy`` names the rule), and gets no card. With ``go_on`` the run keeps
    its lease (resuming): the holder sends those answers at once, marked as handed to it,
    so a takeover after a crash treats an automatic approval like any other that reached
    a pass that died. Without it the run waits and the next claim hands them.

    ``previews`` holds what will happen for raised interrupts that have a preview (by
    interrupt and node id): shown on the card and part of the digest. ``voided`` names
    approved asks that were not sent because their preview changed (``engine.previews``):
    they are closed as changed, and the graph, which got no answer, raised them again.
    ``moved`` names Edits not sent because the edited call falls under another rule
    (``engine.rule_choice.moved_by_edit``), with that rule: closed and asked again the same way.
    ``by_content`` says whether an ask's rules choose by its content (``Policy.by_content``):
    then it offers no Trust, which would let later calls run unasked under whatever rule.

    ``trace`` is the context of the pass's span when it is traced (``engine.tracing``):
    each new ask keeps it, so its own span can hang under the pass that raised it.
    """
    asks = dict(claimed.asks)
    for key in [*voided, *(moved or {})]:  # approved, but not as shown or not by its rule: asked again
        asks[key] = ask_to(asks[key], AskStatus.OBSOLETE, cause=Cause.PASS, closed=Closed.CHANGED, decision=None)
    for key in sent:
        if asks[key].interrupt_id in stale:  # forgotten after an Edit of its call: void, asked again
            asks[key] = ask_to(asks[key], AskStatus.OBSOLETE, cause=Cause.PASS, closed=Closed.CHANGED, decision=None)
        elif asks[key].interrupt_id in step.unawaited:  # carried, but the graph had moved on: kept, unused
            asks[key] = ask_to(asks[key], AskStatus.OBSOLETE, cause=Cause.PASS, closed=Closed.MOVED_ON)
        else:
            asks[key] = ask_to(asks[key], AskStatus.CONSUMED, cause=Cause.PASS)

    new_asks: list[Ask] = []
    still_open: set[str] = set()
    probe = claimed.evolve(asks=asks)
    changed: set[str] = set()
    for raised in step.raised:
        reason = bounded_reason(raised.reason)
        preview = (previews or {}).get((raised.interrupt_id, raised.node_id))
        digest = ask_digest(name=raised.name, reason=reason, tool=raised.tool, preview=preview)
        live = probe.live_ask_for(raised.interrupt_id, raised.node_id)
        if live is None:
            live = next(
                (a for a in new_asks if a.interrupt_id == raised.interrupt_id and a.node_id == raised.node_id),
                None,
            )
        if live is not None and live.digest == digest:
            still_open.add(live.key)
            continue
        if live is not None and live.key in asks:
            changed.add(live.key)
        rules = question_terms(raised.name, rules_for(raised) if rules_for is not None else AskRules())
        # Edit and Trust only for one person's say (nor under all_of: ``engine.decision_rules``),
        # and never under a preview: an edited call's preview was never shown.
        solo = rules.quorum == 1 and not rules.all_of and preview is None
        # Nor Trust where the rules choose by content: later calls would run under none of them.
        trust = solo and not (by_content is not None and by_content(raised))
        verdicts = tuple(
            v for v in raised.verdicts if (solo or v.value not in SOLO_ONLY) and (trust or v is not Verdict.TRUST)
        )
        new_asks.append(
            Ask(
                key=new_ask_key([*asks, *(a.key for a in new_asks)]),
                interrupt_id=raised.interrupt_id,
                name=raised.name,
                reason=reason,
                digest=digest,
                node_id=raised.node_id,
                status=AskStatus.PENDING,
                created_at=now,
                verdicts=verdicts,
                tool=raised.tool,
                rules=rules,
                preview=preview,
                tool_name=raised.gated_tool if raised.tool is None else None,
                trace=trace,
            )
        )

    new_asks = [_auto_decided(a, now=now, handed=claimed.lease_owner if go_on else None) for a in new_asks]
    auto = [a for a in new_asks if a.status is AskStatus.DECIDED]
    status = _STATUS_AFTER[step.status]
    why = closed_for(status)
    cause = Cause.CANCEL if status is RunStatus.CANCELLED else Cause.PASS  # the brake stopped the pass
    for key, ask in asks.items():
        open_ = ask.status in (AskStatus.PENDING, AskStatus.DECIDED)
        if key in changed and open_:
            asks[key] = ask_to(ask, AskStatus.OBSOLETE, cause=Cause.PASS, closed=Closed.CHANGED, decision=None)
        elif ask.status is AskStatus.PENDING and (status.terminal or key not in still_open):
            asks[key] = ask_to(ask, AskStatus.OBSOLETE, cause=cause, closed=why)
        elif ask.status is AskStatus.DECIDED and status.terminal:
            # Decided but not sent (it landed after the claim): nothing will use it now.
            asks[key] = ask_to(ask, AskStatus.OBSOLETE, cause=cause, closed=why)
    asks.update({a.key: a for a in new_asks})
    asks = _forget_oldest_finished(asks)

    keep_state = not status.terminal
    events = [AuditEvent(at=now, kind="resumed", text=f"{len(sent)} answer(s) sent to the graph")] if sent else []
    events += [AuditEvent(at=now, kind="preview_changed", ask=k, text=PREVIEW_CHANGED) for k in voided]
    events += [
        AuditEvent(
            at=now,
            kind=EDIT_MOVED_KIND,
            ask=k,
            text=EDIT_MOVED.format(rule=rule, was=claimed.asks[k].rules.label or "the graph's terms"),
        )
        for k, rule in (moved or {}).items()
    ]
    events += [AuditEvent(at=now, kind="asked", ask=a.key, text=_asked_text(a)) for a in new_asks]
    events += [AuditEvent(at=now, kind="auto_decided", ask=a.key, text=auto_text(a)) for a in auto]
    if status is RunStatus.CANCELLED:
        ran = ", ".join(dict.fromkeys(step.trail)) or "no node"
        said = f"stopped before node {step.stopped_before}; ran: {ran}"
        events.append(AuditEvent(at=now, kind=status.value, by=step.cancelled_by, text=said))
    elif status.terminal:
        ended = {RunStatus.COMPLETED: None, RunStatus.FAILED: step.error, RunStatus.REJECTED: step.error}[status]
        events.append(AuditEvent(at=now, kind=status.value, text=ended))
    trail, dropped = appended(claimed.audit, claimed.audit_dropped, events)
    lease: dict[str, Any] = {"lease_owner": None, "lease_until": None}
    if auto and go_on and status is RunStatus.WAITING:
        status, cause = RunStatus.RESUMING, Cause.RULE
        lease = {"lease_owner": claimed.lease_owner, "lease_until": claimed.lease_until}
    run = run_to(
        claimed,
        status,
        cause=cause,
        cancelled_by=claimed.cancelled_by or step.cancelled_by,
        audit=trail,
        audit_dropped=dropped,
        asks=asks,
        snapshot=(step.snapshot if step.snapshot is not None else claimed.snapshot) if keep_state else None,
        state_ref=claimed.state_ref if keep_state else None,
        **lease,
        trail=step.trail[-MAX_TRAIL:] if step.trail else claimed.trail,
        stalled=0,  # a new state: what it owes Slack gets a fresh grace
        stalled_at=None,
        held_until=claimed.lease_until,  # what this save owes Slack is the pass's until then
        output=_head(step.output, MAX_OUTPUT_CHARS) if status is RunStatus.COMPLETED else claimed.output,
        error=_cap(step.error, MAX_ERROR_CHARS) if status in (RunStatus.FAILED, RunStatus.REJECTED) else None,
        updated_at=now,
    )
    return Outcome(run=run, new_asks=new_asks)


def _auto_decided(ask: Ask, *, now: float, handed: str | None) -> Ask:
    """``ask`` decided by its rule, if the rule decides by itself (``AskRules.auto``)."""
    auto = ask.rules.auto
    if auto is None:
        return ask
    verdict = Verdict.APPROVE if auto == "approve" else Verdict.REJECT
    decision = Decision(verdict=verdict, user="", at=now, policy=ask.rules.label or "policy rule")
    return ask_to(ask, AskStatus.DECIDED, cause=Cause.RULE, decision=decision, handed=handed)


def auto_text(ask: Ask) -> str:
    """What a rule decided, for the audit trail and the thread: ``<label>: approved``."""
    decision = ask.decision
    said = "approved" if decision is not None and decision.verdict is Verdict.APPROVE else "rejected"
    return f"{ask.rules.label or 'policy rule'}: {said} by the rule, no card"


def _asked_text(ask: Ask) -> str:
    terms = ask.rules
    parts = [ask.gated_tool or ask.name]
    if terms.label is not None:
        parts.append(f"rule {terms.label}")
    if terms.approvers is not None:
        parts.append("approvers " + ", ".join(terms.approvers))
    if terms.quorum > 1:
        parts.append(f"{terms.quorum} approvals needed")
    return "; ".join(parts)


def _cap(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n… (cut: {len(text):,} characters in all)"


def _head(text: str | None, limit: int) -> str | None:
    """Like ``_cap``, but says so first: people read the top of a long output."""
    if text is None or len(text) <= limit:
        return text
    return f"_(the output is {len(text):,} characters; the first {limit:,} are kept)_\n" + text[:limit]


def bounded_reason(reason: Any) -> Any:
    """The reason as the card gets it: as given, or its JSON cut when it is huge."""
    if isinstance(reason, str):
        return _cap(reason, MAX_REASON_CHARS)
    try:
        size = len(json.dumps(reason, default=str))
    except (TypeError, ValueError):
        return _cap(str(reason), MAX_REASON_CHARS)
    return reason if size <= MAX_REASON_CHARS else _cap(json.dumps(reason, default=str), MAX_REASON_CHARS)


def _forget_oldest_finished(asks: dict[str, Ask]) -> dict[str, Ask]:
    """Keep the record bounded in long and cyclic runs: answered asks only matter to
    their cards, which already show the answer."""
    finished = [a for a in asks.values() if a.status in (AskStatus.CONSUMED, AskStatus.OBSOLETE) and not a.card_owed]
    # A finished ask's card already shows its tool call, and its span was emitted as it
    # finished (``engine.tracing``): the record need not keep either. Except the call of an
    # answer the graph holds while another gate on the same call is open: its preview is
    # checked again, on that call, when the call runs (``engine.previews.rebound``).
    waiting = {
        call
        for a in asks.values()
        if a.status in (AskStatus.PENDING, AskStatus.DECIDED) and (call := call_of(a.interrupt_id))
    }

    def kept(ask: Ask) -> Ask:
        tool = ask.tool if ask.preview is not None and gated_tool_use_id(ask.interrupt_id) in waiting else None
        return replace(ask, tool=tool, trace=None)

    asks = {k: kept(a) if a in finished and (a.tool is not None or a.trace is not None) else a for k, a in asks.items()}
    if len(finished) <= KEEP_FINISHED_ASKS:
        return asks
    drop = {a.key for a in sorted(finished, key=lambda a: a.created_at)[: len(finished) - KEEP_FINISHED_ASKS]}
    return {k: a for k, a in asks.items() if k not in drop}


def stale_answers(run: Run, *, unsent: Collection[str] = ()) -> list[str]:
    """Interrupt ids whose answers must be forgotten because an Edit of their call is sent now.

    An answer counts for the edited call only if it approves exactly the input that will
    run: an Edit approves its own edited input, any other answer what its card showed. A
    question still open was put (and its reason written, once, by Strands) about what its
    card shows. Everything else held about the call is forgotten once (``engine.prepare``),
    so those gates ask again about the edited call, with reasons that show it, and
    ``settle`` closes their old cards as changed. When several different Edits of one call
    arrive together, the first recorded wins and the others are forgotten like the rest.
    Closed asks hold nothing (a closed ask may share its interrupt id with the ask that
    replaced it), so they are left alone. An Edit in ``unsent`` (not handed to the graph)
    changes nothing.
    """
    winners: dict[str, Ask] = {}
    decided = [a for a in run.decided_asks() if a.key not in unsent]
    for ask in sorted(decided, key=lambda a: (a.decision.at if a.decision else 0.0, a.key)):
        tool_use_id = gated_tool_use_id(ask.interrupt_id)
        if ask.decision is not None and ask.decision.verdict is Verdict.EDIT and tool_use_id is not None:
            winners.setdefault(tool_use_id, ask)
    stale: list[str] = []
    for tool_use_id, edit in winners.items():
        assert edit.decision is not None
        for other in run.asks.values():
            same_call = gated_tool_use_id(other.interrupt_id) == tool_use_id
            if not same_call or other.interrupt_id == edit.interrupt_id or other.status is AskStatus.OBSOLETE:
                continue
            if _approved_input(other) != edit.decision.edited_input:
                stale.append(other.interrupt_id)
    return stale


def _approved_input(ask: Ask) -> dict[str, Any] | None:
    """The tool input an ask's answer (or, while it is open, its card) stands for."""
    decision = ask.decision
    if decision is not None and decision.verdict is Verdict.EDIT:
        return decision.edited_input
    return ask.tool.input if ask.tool is not None else None


def merge_concurrent_decisions(*, claimed: Run, mine: Run, fresh: Run) -> Run:
    """``mine`` plus what others recorded while the pass ran (found in ``fresh``).

    Decisions: only asks that were pending when the run was claimed can have changed. A
    decision on one the pass left open keeps it decided for the next pass. A decision on
    one the pass closed as moved on while the run still waits is carried to the next pass
    too (decided, so the run stays claimable and due for a sweep): a person's answer is
    never merged onto a closed ask of a waiting run, where nothing would ever read it. On
    a run the pass ended, it is kept on the closed record (never silently dropped). An
    ask closed because its question changed takes no answer: those are void by definition.
    Merging is idempotent: a save that conflicts again merges the same decision the same way.
    Deliveries (card refs, what cards show, thread, final post) recorded meanwhile are
    kept, so the save does not make Slack owed something it already shows.
    """
    asks = dict(mine.asks)
    for key, ask in fresh.asks.items():
        current = asks.get(key)
        if current is None:
            continue
        if current.card is None and ask.card is not None:
            current = replace(current, card=ask.card, shown=current.shown or ask.shown)
        elif current.shown is None and ask.shown is not None:
            current = replace(current, shown=ask.shown)
        before = claimed.asks.get(key)
        decided_meanwhile = (
            before is not None and before.status is AskStatus.PENDING and ask.status is AskStatus.DECIDED
        )
        if decided_meanwhile and current.closed is not Closed.CHANGED and current.status is not AskStatus.DECIDED:
            current = _adopted(current, ask, carry=not mine.status.terminal)
        if current.status is AskStatus.PENDING and ask.status is AskStatus.PENDING:
            # Votes, escalations and notices recorded meanwhile on an ask still open.
            current = replace(
                current,
                votes={**current.votes, **ask.votes},
                escalated=current.escalated or ask.escalated,
                notices=ask.notices if len(ask.notices) > len(current.notices) else current.notices,
                notified=max(current.notified, ask.notified),
            )
        asks[key] = current
    trail, dropped = appended(mine.audit, max(mine.audit_dropped, fresh.audit_dropped), fresh.audit)
    return mine.evolve(
        asks=asks,
        thread=mine.thread or fresh.thread,
        final=mine.final or fresh.final,
        audit=trail,
        audit_dropped=dropped,
        cancelled_by=mine.cancelled_by or fresh.cancelled_by,
    )


def _adopted(current: Ask, stored: Ask, *, carry: bool) -> Ask:
    """``current`` (the pass's view of an ask pending at its claim) with the decision that
    ``stored`` got meanwhile: decided (a pending one, or, with ``carry``, one the pass
    closed while its run still waits), else kept on the closed record."""
    if current.status is AskStatus.PENDING or (carry and current.status is AskStatus.OBSOLETE):
        reopened = replace(current, status=AskStatus.PENDING, closed=None)  # as the click found it
        return ask_to(reopened, AskStatus.DECIDED, cause=Cause.CLICK, decision=stored.decision)
    return replace(current, decision=stored.decision)
