"""What a person is told about their click, in words: one text per engine ``Outcome``.

The engine classifies what a click achieved (``DecideResult.outcome``: decided, counted,
refused and why, taken by someone first, expired, cancelled, closed, not recorded); this
module only words each case, naming who may decide instead when that helps.
"""

from __future__ import annotations

from bot.render.mrkdwn import mention
from bot.render.titles import ANYONE, still_needed, still_to_approve_leaving_out, who_may_decide
from engine.policy import Refusal
from engine.ports import DecideResult, Outcome
from engine.records import Ask, Verdict

_PAST = {
    Verdict.APPROVE: "approved",
    Verdict.REJECT: "rejected",
    Verdict.REPLY: "answered",
    Verdict.TRUST: "trusted",
    Verdict.RETRY: "sent back for a retry",
    Verdict.EDIT: "approved with edits",
}

_FIXED = {
    Outcome.UNRECORDED: "Nothing was recorded: I could not reach my store just now. The card is still open; try again.",
    Outcome.UNKNOWN: (
        "I don't know this card any more (its run is gone or the card is out of date); nothing was decided."
    ),
    Outcome.CHANGED: "The question changed after this card was posted; answer the new card in the thread instead.",
    Outcome.EXPIRED: "This ask expired before anyone decided; nothing was decided.",
    Outcome.MOVED_ON: "This run moved on before anyone answered; this card can no longer be answered.",
    Outcome.NOT_OFFERED: "This card does not offer that choice; nothing was decided.",
    Outcome.CLOSED: "This card can't be answered right now; nothing was decided.",
}


def outcome_text(result: DecideResult) -> str:
    """What the clicker is told when their click decided nothing (or only counted)."""
    outcome = result.outcome
    ask = result.ask
    if outcome is Outcome.COUNTED:
        return counted_text(result)
    if outcome is Outcome.REFUSED and ask is not None and result.refusal is not None:
        return refusal_text(result.refusal, ask)
    if outcome is Outcome.CANCELLED:
        by = f" by {mention(result.decided_by)}" if result.decided_by else ""
        return f"This run was cancelled{by}; nothing was decided."
    if outcome is Outcome.TAKEN and ask is not None and ask.decision is not None:
        return f"Already {_PAST[ask.decision.verdict]} by {mention(ask.decision.user)}; your click changed nothing."
    return _FIXED.get(outcome, "This card can't be answered right now; nothing was decided.")


def refusal_text(refusal: Refusal, ask: Ask) -> str:
    """Why the policy refused an answer, and who may give it instead; nothing was recorded."""
    quorum = ask.rules.quorum
    if refusal is Refusal.NOT_APPROVER:
        who = who_may_decide(ask)
        if who == ANYONE:  # the terms changed between the refusal and this read
            return "You may not decide this; nothing was recorded."
        if needed := still_needed(ask):  # e.g. someone whose team's approval already counted
            return f"Only {who} may decide this, one approval per team ({needed}); nothing was recorded."
        return f"Only {who} may decide this; nothing was recorded."
    if refusal is Refusal.NOT_IN_CHANNEL:
        return (
            "Only people in this run's channel may decide this, and I could not confirm that you are "
            "(join the channel, or ask someone in it); nothing was recorded."
        )
    if refusal is Refusal.SELF_APPROVAL:
        return (
            "You started this run, so you may reject its asks but not approve them "
            "(the graph does not allow self-approval); nothing was recorded."
        )
    if refusal is Refusal.ALREADY_APPROVED:
        return (
            f"You already approved this; it needs {quorum} approvals from different people ({len(ask.votes)} so far)."
        )
    if refusal is Refusal.NEEDS_APPROVE and quorum == 1 and not ask.rules.all_of and ask.preview is not None:
        return "Your approval is bound to what this card says will happen; use Approve (a reply cannot approve)."
    if refusal is Refusal.NEEDS_APPROVE and quorum == 1 and not ask.rules.all_of:
        return "A reply cannot trust this tool for later calls here; use Approve for this one."
    if refusal is Refusal.NEEDS_APPROVE:
        return f"This needs {quorum} approvals; use Approve (a reply cannot approve on its own)."
    if refusal is Refusal.EXPIRED:
        return "This ask has expired (it counts as a rejection); nothing was recorded."
    return "You may not give that answer here; nothing was recorded."


def counted_text(result: DecideResult) -> str:
    """What someone whose approval counted, but did not reach the quorum, is told."""
    ask = result.ask
    if ask is None:
        return "Your approval counts."
    have, need = len(ask.votes), ask.rules.quorum
    missing = max(need - have, 1)
    more = f"{missing} more approval{'s' if missing > 1 else ''}"
    started_by = result.run.started_by if result.run is not None else ""
    needed = still_needed(ask)
    if needed:  # the quorum may be met, yet an all_of entry is missing: the ask waits for it
        return f"Your approval counts: {have} of {need}. {needed}."
    who = who_may_decide(ask, leaving_out=still_to_approve_leaving_out(ask, started_by=started_by))
    return f"Your approval counts: {have} of {need}. Waiting for {more} from {who}."
