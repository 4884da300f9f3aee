"""Who may decide an ask, how many must agree, and until when: the approval policy.

A graph declares its policy with its definition (``graph_def(..., approvers=...,
quorum=..., expires_after=..., allow_self_approval=..., starters=...)``), and may give
single asks stricter terms (``asks={"send_payment": AskPolicy(quorum=2)}``, keyed by
the gated tool's name or the interrupt's name). When an ask is raised, the policy that
applies to it is written into the ask itself (``AskRules``): a decision is judged by the
terms its card showed, even if the definition changes while the ask waits.

An ask name may also take a list of rules by content (``asks={"send_payout":
[AskPolicy(when=lambda d: d["amount"] < 50, label="small", auto="approve"), ...]}``): the
first whose ``when`` holds for the ask's details applies, and its label is frozen with the
terms (``engine.rule_choice``: the choice, failing closed). A rule with ``auto`` decides the
ask itself as it is raised (``engine.settle``), with no card.

Who may decide is declared once as conditions on the record (``engine.decision_rules``);
the stores apply that declaration inside their atomic decision write (SQLite judging it
in Python, DynamoDB rendering it as its condition expression).
Group ids (``S…``) are resolved to members by the caller through a ``Directory`` and
passed in as the groups the person is in: the record never holds a member list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from engine.records import Ask, Decision

USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}\Z")
GROUP_ID = re.compile(r"^S[A-Z0-9]{2,20}\Z")
DEFAULT_EXPIRES_AFTER = 3 * 86400.0  # an undecided ask is rejected after three days
MAX_QUORUM = 10
MAX_IDS = 50  # approvers, starters or escalation ids per policy
MIN_REMINDER_WAIT = 120.0  # asks that expire sooner get no reminder by default
# The deployment's alarm reminder (``ASK_ALARM_AFTER``) falls this long after the threshold:
# the sweep that sends it then reads the ask's age as strictly more than the threshold, which
# the asks-waiting alarm (GreaterThanThreshold) needs; at the threshold exactly, it could
# read equal (a sweep to the second, or the float sum created_at + threshold rounding down).
ALARM_MARGIN = 1.0
MAX_LABEL = 80  # characters of a rule's label (shown on the card and in the audit trail)
AUTO_VERDICTS = ("approve", "reject")


class PolicyError(ValueError):
    """A policy keyword has a value the bot cannot enforce; the message names it."""


# How long a decision waits for Slack to say who is in a group or a channel. A modal's
# submission is decided inside Slack's 3-second ack, and slack_sdk may wait out a 429's
# Retry-After: past this the fact counts as not shown (fail closed), and the person is told.
LOOKUP_TIMEOUT_SECONDS = 1.0


class Directory(Protocol):
    """Who is in a user group (Slack's ``usergroups.users.list``) and whether a person is in a
    channel (``users.conversations``), briefly cached. A lookup that fails raises: the caller
    counts the person as not in the group or channel. Never served staler than its TTL."""

    async def members(self, group: str) -> frozenset[str]: ...

    async def in_channel(self, user: str, channel: str) -> bool: ...


class Refusal(StrEnum):
    """Why a person may not give an answer; nothing is recorded then."""

    NOT_APPROVER = "not_approver"  # not in the ask's approvers
    SELF_APPROVAL = "self_approval"  # started the run, and the policy forbids approving it
    ALREADY_APPROVED = "already_approved"  # a second approval by the same person under a quorum
    NEEDS_APPROVE = "needs_approve"  # a reply reading "yes" under a quorum or a preview: only Approve counts
    EXPIRED = "expired"  # past its expiry; the sweeper has not got to it yet
    NOT_IN_CHANNEL = "not_in_channel"  # the ask is open to the run's channel; not shown to be in it
    # The ask needs one approval from each of several groups (``all_of``) and the caller has
    # not looked the person up in them yet: the ballot does, and writes again (never shown).
    UNCOUNTED = "uncounted"


# Verdicts that say yes to what the card shows: under a quorum each counts as one approval.
APPROVING = frozenset({"approve", "edit", "trust"})
# Verdicts that only one person gives: not offered when an ask needs several approvals
# (an Edit changes what earlier approvers approved, a Trust would skip later quorums, a
# Retry runs the reviewed tool again on one person's word).
SOLO_ONLY = frozenset({"edit", "trust", "retry"})
# What reads as a yes in a Reply (Strands' HumanInTheLoop evaluates a reply's text this way):
# under a quorum such a Reply is refused with a pointer to Approve, whatever raised the ask.
HITL_YES = frozenset({"y", "yes", "t", "trust"})
HITL_TRUST = frozenset({"t", "trust"})  # what it takes for a Trust, when the intervention enables trust


@dataclass(frozen=True, kw_only=True)
class AskPolicy:
    """Terms for particular asks, overriding the graph's (None: keep the graph's)."""

    approvers: Sequence[str] | None = None
    quorum: int | None = None
    expires_after: float | None = None
    allow_self_approval: bool | None = None
    remind_after: Sequence[float] | None = None
    escalate_to: Sequence[str] | None = None
    escalate_after: float | None = None
    # Rules by content (``engine.rule_choice``): in a list, the first whose ``when`` holds
    # for the ask's details applies; ``label`` names it on the card and in the audit trail;
    # ``auto`` decides the ask at once, with no card.
    when: Callable[[Any], bool] | None = None
    label: str | None = None
    auto: str | None = None

    # The two-person rule across teams: one approval from each of these users or groups is
    # required, each counting toward ``quorum`` (left out, the quorum is raised to their
    # number; given below it, a PolicyError). Their members may approve for their entry
    # while it is missing, and reject at any time.
    all_of: Sequence[str] | None = None

    def __post_init__(self) -> None:
        _check_terms(self)
        check_rule(self)
        _check_all_of(self)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """A graph's policy. ``approvers``/``starters`` None: anyone in the channel."""

    approvers: tuple[str, ...] | None = None
    quorum: int = 1
    expires_after: float | None = None  # None: the deployment's ASK_EXPIRES_AFTER
    allow_self_approval: bool = False
    starters: tuple[str, ...] | None = None
    remind_after: tuple[float, ...] | None = None  # None: once, halfway to expiry
    escalate_to: tuple[str, ...] = ()
    escalate_after: float | None = None
    asks: Mapping[str, AskPolicy | tuple[AskPolicy, ...]] = field(default_factory=dict)
    # Tools or asks (by name) whose approved call may run twice harmlessly: a takeover sends
    # their approval again instead of asking first (``engine.takeover``).
    idempotent: frozenset[str] = frozenset()
    # What approving an ask will do, by tool or ask name (``engine.previews``).
    previews: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)

    @classmethod
    def declare(
        cls,
        *,
        approvers: Sequence[str] | None = None,
        quorum: int = 1,
        expires_after: float | None = None,
        allow_self_approval: bool = False,
        starters: Sequence[str] | None = None,
        remind_after: Sequence[float] | None = None,
        escalate_to: Sequence[str] | None = None,
        escalate_after: float | None = None,
        asks: Mapping[str, AskPolicy | Sequence[AskPolicy]] | None = None,
    ) -> Policy:
        """The policy as ``graph_def`` takes it, checked; PolicyError names a bad keyword."""
        probe = AskPolicy(
            approvers=approvers,
            quorum=quorum,
            expires_after=expires_after,
            allow_self_approval=allow_self_approval,
            remind_after=remind_after,
            escalate_to=escalate_to,
            escalate_after=escalate_after,
        )
        if starters is not None:
            _check_ids(starters, what="starters")
        for name, override in (asks or {}).items():
            if not isinstance(name, str) or not name:
                raise PolicyError(f"asks: keys are tool or interrupt names, got {name!r}")
            check_rule_list(name, override)
        return cls(
            approvers=tuple(probe.approvers) if probe.approvers is not None else None,
            quorum=quorum,
            expires_after=expires_after,
            allow_self_approval=allow_self_approval,
            starters=tuple(starters) if starters is not None else None,
            remind_after=tuple(remind_after) if remind_after is not None else None,
            escalate_to=tuple(escalate_to or ()),
            escalate_after=escalate_after,
            asks={k: v if isinstance(v, AskPolicy) else tuple(v) for k, v in (asks or {}).items()},
        )

    def rules_for(
        self,
        *,
        name: str,
        tool: str | None,
        now: float,
        default_expires_after: float,
        details: Any = None,
        alarm_after: float | None = None,
    ) -> AskRules:
        """The terms an ask raised now gets: the graph's, with its override applied (with a
        list of rules, the one chosen by ``details``: ``engine.rule_choice``).

        ``alarm_after`` (the deployment's ``ASK_ALARM_AFTER``) adds one reminder at that age
        (``with_alarm_reminder``): the sweeper reads a waiting run only when a deadline of its
        asks is due, and this one makes it read the run, and emit ``OldestAskAge``, once an ask
        has waited past the asks-waiting alarm's threshold; the approvers get a nudge then too.
        """
        from engine.rule_choice import choose

        key = tool if tool and tool in self.asks else name
        override, label = choose(self.asks.get(key), details=details, name=key)

        def pick(value: Any, fallback: Any) -> Any:
            return fallback if value is None else value

        approvers = pick(override.approvers, self.approvers)
        quorum = int(pick(override.quorum, self.quorum))
        all_of = tuple(override.all_of or ())
        if override.quorum is None:
            quorum = max(quorum, len(all_of))  # each entry's approval counts toward the quorum
        wait = float(pick(override.expires_after, pick(self.expires_after, default_expires_after)))
        reminders = pick(override.remind_after, self.remind_after)
        if reminders is None:
            reminders = (wait / 2,) if wait >= MIN_REMINDER_WAIT else ()
        reminders = with_alarm_reminder(tuple(float(r) for r in reminders), alarm_after=alarm_after)
        escalate_after = pick(override.escalate_after, self.escalate_after)
        escalate_to = tuple(pick(override.escalate_to, self.escalate_to) or ())
        escalate_at = now + float(escalate_after) if escalate_to and escalate_after is not None else None
        return AskRules(
            approvers=tuple(approvers) if approvers is not None else None,
            quorum=quorum,
            allow_self=bool(pick(override.allow_self_approval, self.allow_self_approval)),
            expires_at=now + wait,
            remind_at=tuple(sorted(now + float(r) for r in reminders if 0 < float(r) < wait)),
            escalate_at=escalate_at if escalate_at is not None and escalate_at < now + wait else None,
            escalate_to=escalate_to if escalate_at is not None and escalate_at < now + wait else (),
            label=label,
            auto=override.auto,
            all_of=all_of,
        )

    def by_content(self, *, name: str, tool: str | None) -> bool:
        """Whether the terms of an ask about ``name`` (or ``tool``) depend on its content: a
        rule of its ``asks`` entry has a ``when``. Then no Trust is offered (``engine.settle``):
        HumanInTheLoop's Trust lets later calls of the tool run unasked, whatever rule their
        content would fall under."""
        key = tool if tool and tool in self.asks else name
        rules = self.asks.get(key)
        listed = () if rules is None else (rules,) if isinstance(rules, AskPolicy) else rules
        return any(rule.when is not None for rule in listed)


@dataclass(frozen=True, kw_only=True)
class AskRules:
    """The terms one ask was raised with, kept in its record."""

    approvers: tuple[str, ...] | None = None  # None: anyone in the channel
    quorum: int = 1
    allow_self: bool = False
    expires_at: float | None = None
    remind_at: tuple[float, ...] = ()
    escalate_at: float | None = None
    escalate_to: tuple[str, ...] = ()
    label: str | None = None  # the rule that chose these terms (``AskPolicy.label``)
    auto: str | None = None  # "approve" | "reject": decided by the rule, no card
    all_of: tuple[str, ...] = ()  # one approval from each is required (``AskPolicy.all_of``)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"quorum": self.quorum, "allow_self": self.allow_self}
        if self.approvers is not None:
            data["approvers"] = list(self.approvers)
        if self.expires_at is not None:
            data["expires_at"] = self.expires_at
        if self.remind_at:
            data["remind_at"] = list(self.remind_at)
        if self.escalate_at is not None:
            data["escalate_at"] = self.escalate_at
            data["escalate_to"] = list(self.escalate_to)
        if self.label is not None:
            data["label"] = self.label
        if self.auto is not None:
            data["auto"] = self.auto
        if self.all_of:
            data["all_of"] = list(self.all_of)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AskRules:
        approvers = data.get("approvers")
        return cls(
            approvers=tuple(approvers) if approvers is not None else None,
            quorum=int(data.get("quorum") or 1),
            allow_self=bool(data.get("allow_self")),
            expires_at=float(data["expires_at"]) if data.get("expires_at") is not None else None,
            remind_at=tuple(float(t) for t in data.get("remind_at") or ()),
            escalate_at=float(data["escalate_at"]) if data.get("escalate_at") is not None else None,
            escalate_to=tuple(data.get("escalate_to") or ()),
            label=data.get("label"),
            auto=data.get("auto"),
            all_of=tuple(data.get("all_of") or ()),
        )


def with_alarm_reminder(reminders: tuple[float, ...], *, alarm_after: float | None) -> tuple[float, ...]:
    """``reminders`` (seconds after the ask is raised) with the alarm's at ``alarm_after`` plus
    ``ALARM_MARGIN``; a reminder of the policy's within that margin of the threshold becomes
    this one (one nudge, not two a second apart). Unchanged when ``alarm_after`` is None. A
    reminder at or past the ask's expiry is dropped by the caller, as any reminder is: an ask
    that expires first is read by the sweeper at its expiry anyway.
    """
    if alarm_after is None:
        return reminders
    at = alarm_after + ALARM_MARGIN
    return (*(r for r in reminders if not alarm_after <= r <= at), at)


def deciders(ask: Ask) -> tuple[str, ...] | None:
    """Who may decide ``ask`` now: its approvers and ``all_of`` entries, plus the escalation
    group once escalated."""
    approvers = ask.rules.approvers
    if approvers is None:
        return None
    approvers += tuple(i for i in ask.rules.all_of if i not in approvers)
    return approvers + tuple(i for i in ask.rules.escalate_to if i not in approvers) if ask.escalated else approvers


def final_vote(ask: Ask, decision: Decision) -> bool:
    """Whether ``decision`` decides the ask (a rejection, a reply, or the approval that
    reaches the quorum and leaves no ``all_of`` entry missing) rather than adding one
    approval to it. ``decision.counts_for`` is the entry it fills, if any."""
    if decision.expired or decision.verdict.value not in APPROVING:
        return True
    missing = set(missing_of(ask)) - {decision.counts_for}
    return len(ask.votes) + 1 >= ask.rules.quorum and not missing


def missing_of(ask: Ask) -> tuple[str, ...]:
    """The ``all_of`` entries no approval has filled yet, in the policy's order."""
    filled = ask.filled
    return tuple(i for i in ask.rules.all_of if i not in filled)


def may_start(policy: Policy, user: str, *, member_of: frozenset[str]) -> bool:
    return policy.starters is None or user in policy.starters or bool(member_of & set(policy.starters))


def _check_terms(terms: AskPolicy) -> None:
    if terms.approvers is not None:
        _check_ids(terms.approvers, what="approvers")
        if not terms.approvers:
            raise PolicyError("approvers: an empty list lets nobody decide; use None for anyone in the channel")
    if terms.quorum is not None and (
        isinstance(terms.quorum, bool) or not isinstance(terms.quorum, int) or not 1 <= terms.quorum <= MAX_QUORUM
    ):
        raise PolicyError(f"quorum must be a whole number from 1 to {MAX_QUORUM}, got {terms.quorum!r}")
    approvers = terms.approvers
    if approvers is not None and terms.all_of:
        approvers = [*approvers, *terms.all_of]  # an all_of member's approval counts too
    if (
        approvers is not None
        and terms.quorum is not None
        and not any(GROUP_ID.match(str(a)) for a in approvers)
        and terms.quorum > len(set(approvers))
    ):
        raise PolicyError(f"quorum {terms.quorum} can never be reached by {len(set(approvers))} approver(s)")
    for name in ("expires_after", "escalate_after"):
        value = getattr(terms, name)
        if value is not None and not _positive_seconds(value):
            raise PolicyError(f"{name} must be a positive number of seconds, got {value!r}")
    if terms.allow_self_approval is not None and not isinstance(terms.allow_self_approval, bool):
        raise PolicyError(f"allow_self_approval must be True or False, got {terms.allow_self_approval!r}")
    reminders = terms.remind_after
    if reminders is not None and (
        isinstance(reminders, (str, bytes)) or not all(_positive_seconds(r) for r in reminders)
    ):
        raise PolicyError(f"remind_after must be a list of positive seconds, got {reminders!r}")
    if terms.escalate_to is not None:
        _check_ids(terms.escalate_to, what="escalate_to")
    if bool(terms.escalate_to) != (terms.escalate_after is not None):
        raise PolicyError("escalate_to and escalate_after go together: whom to add, and after how many seconds")


def check_rule(terms: AskPolicy) -> None:
    """The rule keywords of one AskPolicy (``when``, ``label``, ``auto``)."""
    if terms.when is not None and not callable(terms.when):
        raise PolicyError(f"when must be a function of the ask's details returning True or False, got {terms.when!r}")
    if terms.label is not None and (not isinstance(terms.label, str) or not 0 < len(terms.label) <= MAX_LABEL):
        raise PolicyError(f"label must be a short text (1 to {MAX_LABEL} characters), got {terms.label!r}")
    if terms.auto is not None and terms.auto not in AUTO_VERDICTS:
        raise PolicyError(f"auto must be 'approve' or 'reject', got {terms.auto!r}")


def check_rule_list(name: str, rules: object) -> None:
    """``asks[name]``: one AskPolicy, or a non-empty list of them where only the last may
    lack a ``when`` (a rule without one always holds: any rule after it could never apply)."""
    if isinstance(rules, AskPolicy):
        return
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Sequence) or not rules:
        raise PolicyError(f"asks[{name!r}] must be an AskPolicy or a non-empty list of them, got {rules!r}")
    for index, rule in enumerate(rules):
        if not isinstance(rule, AskPolicy):
            raise PolicyError(f"asks[{name!r}][{index}] must be an AskPolicy, got {type(rule).__name__}")
        if rule.when is None and index < len(rules) - 1:
            raise PolicyError(f"asks[{name!r}][{index}] has no when: the rules after it could never apply")


def _check_all_of(terms: AskPolicy) -> None:
    """``all_of``: distinct ids, at most ``MAX_QUORUM`` of them, and a quorum that counts
    each (a quorum below their number could never be met as the policy reads)."""
    if terms.all_of is None:
        return
    _check_ids(terms.all_of, what="all_of")
    if not terms.all_of or len(set(terms.all_of)) != len(terms.all_of) or len(terms.all_of) > MAX_QUORUM:
        raise PolicyError(f"all_of: from 1 to {MAX_QUORUM} distinct user or group ids, got {list(terms.all_of)!r}")
    if terms.quorum is not None and terms.quorum < len(terms.all_of):
        raise PolicyError(
            f"quorum {terms.quorum} is below the {len(terms.all_of)} approvals all_of requires "
            "(each entry's approval counts toward the quorum; leave quorum out to require exactly those)"
        )


def _check_ids(ids: Sequence[str], *, what: str) -> None:
    if isinstance(ids, (str, bytes)):
        raise PolicyError(f"{what} must be a list of Slack ids, got the single string {ids!r}")
    if len(ids) > MAX_IDS:
        raise PolicyError(f"{what}: at most {MAX_IDS} ids")
    for value in ids:
        if not isinstance(value, str) or not (USER_ID.match(value) or GROUP_ID.match(value)):
            raise PolicyError(
                f"{what}: {value!r} is not a Slack user id (U…/W…) or user-group id (S…); "
                "names like @alice change, ids do not"
            )


def _positive_seconds(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < float(value) < math.inf
