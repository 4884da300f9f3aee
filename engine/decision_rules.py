"""The rules a decision must pass to be recorded, declared once, for every path and store.

Each rule is a ``Condition`` on the stored record (``engine.conditions``) that must hold,
and what it means when it does not: the ask is no longer pending, it does not offer this
verdict, or the policy refuses this person (``policy.Refusal``). The rules depend on the
decision and on the facts the caller established about the person (``member_of``: the
user groups and channels they were shown to be in), never on a read of the record, so a
store can apply them inside its one atomic write:

- SQLite judges them in Python under its write lock (``judge``);
- DynamoDB renders the same nodes as its ConditionExpression, and when the write fails
  judges the record it got back (ALL_OLD) with ``judge`` to say why, with no extra read;
- the inbox judges a would-be Approve with ``judge``, so it lists exactly what a click
  would be allowed to decide.

Order matters only for which reason is given: the first rule that fails is the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from engine.conditions import And, Condition, Contains, Empty, Eq, Exists, Gt, In, Le, Missing, Not, Or, Path, evaluate
from engine.policy import APPROVING, HITL_TRUST, HITL_YES, SOLO_ONLY, Refusal
from engine.records import DEFAULT_VERDICTS, AskStatus, Decision, Verdict
from engine.sources import HANDOFF_INTERRUPT_NAME, HITL_INTERRUPT_NAME

if TYPE_CHECKING:
    from engine.records import Run

MAX_FACTS = 40  # the user plus the groups and channels they were shown to be in, per decision
# A fact the caller adds to ``member_of`` once it looked the person up in every group of the
# ask's ``all_of``: only then may an approval be recorded while an entry is missing (else it
# might count as a plain approval when it should fill an entry). Never a Slack id.
ALL_OF_LOOKED_UP = "all_of:looked-up"


class Gate(StrEnum):
    """Why a decision does not apply to the ask at all (rather than being refused)."""

    NOT_PENDING = "not_pending"  # decided, expired, closed or consumed already
    NOT_OFFERED = "not_offered"  # the card does not offer this verdict


@dataclass(frozen=True, kw_only=True)
class Rule:
    """``holds`` must be true of the stored record, or the decision fails ``why``."""

    why: Refusal | Gate
    holds: Condition


def reads_as_yes(text: str | None) -> bool:
    """A Reply whose text reads as a yes (what Strands' HumanInTheLoop takes for one, and
    what a person reading the thread would): under a quorum it is not an approval."""
    return (text or "").strip().lower() in HITL_YES


def rules_for(ask_key: str, decision: Decision, *, member_of: frozenset[str], now: float) -> tuple[Rule, ...]:
    """Every rule ``decision`` on ask ``ask_key`` must pass, in the order refusals are named.

    Expiry is the bot's own decision: only the first two rules apply to it. The person who
    started the run may always reject (stopping one's own run is never dangerous); every
    other answer needs the policy's leave: an approver (directly, through a group, or
    through the escalation group once escalated), or, when the ask names no approvers,
    someone shown to be in the run's channel.
    """
    ask = Path("asks", ask_key)
    terms = ask / "rules"
    verdict = decision.verdict
    found = [Rule(why=Gate.NOT_PENDING, holds=Eq(ask / "status", AskStatus.PENDING.value))]
    offered: Condition = Contains(ask / "verdicts", verdict.value)
    if verdict in DEFAULT_VERDICTS:  # a record without a list offers the defaults
        offered = Or(offered, Missing(ask / "verdicts"), Empty(ask / "verdicts"))
    if verdict.value in SOLO_ONLY:
        # One person's Edit, Trust or Retry must not stand in for several approvals: under a
        # quorum these verdicts are not offered, whatever the ask's list says (a list made
        # before this rule, or a "may have acted" card, which asks for votes instead).
        # Nor under ``all_of``: one person's word must not stand in for another team's.
        offered = And(offered, Or(Missing(terms / "quorum"), Le(terms / "quorum", 1)), Missing(terms / "all_of"))
    found.append(Rule(why=Gate.NOT_OFFERED, holds=offered))
    if decision.expired:
        return tuple(found)
    user = decision.user
    ids = (user, *sorted(member_of - {user, ALL_OF_LOOKED_UP}))[:MAX_FACTS]
    slot = decision.counts_for if verdict.value in APPROVING else None
    found.append(Rule(why=Refusal.EXPIRED, holds=Or(Missing(terms / "expires_at"), Gt(terms / "expires_at", now))))
    own = Eq(Path("started_by"), user)
    approver: Condition = Or(
        Missing(terms / "approvers"),
        *(Contains(terms / "approvers", i) for i in ids),
        And(Eq(ask / "escalated", True), Or(*(Contains(terms / "escalate_to", i) for i in ids))),
        # ``all_of`` members: a yes only for the entry it fills; any other answer at any time.
        *((Contains(terms / "all_of", slot),) if slot is not None else ()),
        *((Contains(terms / "all_of", i) for i in ids) if verdict.value not in APPROVING else ()),
    )
    in_channel: Condition = Or(Exists(terms / "approvers"), In(Path("channel"), ids))
    if verdict is Verdict.REJECT:
        approver, in_channel = Or(own, approver), Or(own, in_channel)
    else:
        found.append(Rule(why=Refusal.SELF_APPROVAL, holds=Or(Not(own), Eq(terms / "allow_self", True))))
    found += [Rule(why=Refusal.NOT_APPROVER, holds=approver), Rule(why=Refusal.NOT_IN_CHANNEL, holds=in_channel)]
    if verdict.value in APPROVING:
        found += _all_of_rules(ask, terms, slot, ids=ids, looked_up=ALL_OF_LOOKED_UP in member_of)
        found.append(Rule(why=Refusal.ALREADY_APPROVED, holds=Missing(ask / "votes" / user)))
    if verdict is Verdict.REPLY and reads_as_yes(decision.text):
        # Nor under a preview: a reply is not bound to what will happen (``engine.previews``
        # checks approvals only), yet HumanInTheLoop takes "yes" for an approval and "trust"
        # for a Trust, which a card with a preview does not offer.
        single = And(
            Or(Missing(terms / "quorum"), Le(terms / "quorum", 1)), Missing(terms / "all_of"), Missing(ask / "preview")
        )
        # A question's answer is text for the model, never an approval: "yes" is an answer.
        found.append(Rule(why=Refusal.NEEDS_APPROVE, holds=Or(Eq(ask / "name", HANDOFF_INTERRUPT_NAME), single)))
    if verdict is Verdict.REPLY and (decision.text or "").strip().lower() in HITL_TRUST:
        # HumanInTheLoop with trust takes this reply for a Trust: only where Trust is offered
        # (not under a quorum, all_of, a preview, or rules by content: ``engine.settle``).
        trusts = Or(Not(Eq(ask / "name", HITL_INTERRUPT_NAME)), Contains(ask / "verdicts", Verdict.TRUST.value))
        found.append(Rule(why=Refusal.NEEDS_APPROVE, holds=trusts))
    return tuple(found)


def _all_of_rules(ask: Path, terms: Path, slot: str | None, *, ids: tuple[str, ...], looked_up: bool) -> list[Rule]:
    """An approval that fills an ``all_of`` entry names one the person is shown to be in and
    that is still missing; while any entry is missing, an approval needs the person looked
    up in the ask's groups first (``ALL_OF_LOOKED_UP``), so none counts as plain by mistake."""
    found: list[Rule] = []
    if slot is not None:
        entry = ask / "filled" / slot
        holds: Condition = And(Contains(terms / "all_of", slot), Missing(entry))
        if slot not in ids:  # never: an entry the person was not shown to be in
            holds = And(holds, Exists(entry))
        found.append(Rule(why=Refusal.NOT_APPROVER, holds=holds))
    if not looked_up:
        found.append(Rule(why=Refusal.UNCOUNTED, holds=Or(Missing(terms / "all_of"), Le(ask / "gaps", 0))))
    return found


def counted(record: Mapping[str, Any], ask_key: str, decision: Decision, *, member_of: frozenset[str]) -> Decision:
    """``decision`` with the ``all_of`` entry it fills on ``record``: for an approval, the
    first entry (in the policy's order) still missing that the person is or is shown to be
    in; None otherwise. A person in two groups fills one entry, never both. Any
    ``counts_for`` the caller gave is replaced: only the record and the facts decide it."""
    ask = (record.get("asks") or {}).get(ask_key) or {}
    all_of = (ask.get("rules") or {}).get("all_of") or ()
    slot = None
    if all_of and decision.verdict.value in APPROVING and not decision.expired:
        filled = ask.get("filled") or {}
        facts = {decision.user} | (member_of - {ALL_OF_LOOKED_UP})
        slot = next((i for i in all_of if i not in filled and i in facts), None)
    return decision if decision.counts_for == slot else replace(decision, counts_for=slot)


def condition_for(ask_key: str, decision: Decision, *, member_of: frozenset[str], now: float) -> Condition:
    """All the rules as one condition: what a store's atomic write must check."""
    return And(*(rule.holds for rule in rules_for(ask_key, decision, member_of=member_of, now=now)))


def judge(
    record: Mapping[str, Any], ask_key: str, decision: Decision, *, member_of: frozenset[str], now: float
) -> Refusal | Gate | None:
    """The first rule ``decision`` fails on ``record`` (see ``record_of``), or None."""
    for rule in rules_for(ask_key, decision, member_of=member_of, now=now):
        if not evaluate(rule.holds, record):
            return rule.why
    return None


def record_of(run: Run, ask_key: str) -> dict[str, Any]:
    """The part of ``run``'s stored form the rules read, as a store holds it."""
    ask = run.asks.get(ask_key)
    return {
        "started_by": run.started_by,
        "channel": run.channel,
        "asks": {ask_key: ask.to_dict()} if ask is not None else {},
    }
