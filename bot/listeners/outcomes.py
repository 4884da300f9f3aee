"""One path for every kind of answer (button, Reply, Reject, Edit), and what people are told.

What a person is shown is what the store recorded: accepted, counted as one approval of
several (``counted_text``), refused (and why: someone decided first, or the policy does
not let this person give this answer, naming who may), or not recorded at all (the
store failed; the card stays live and they may try again).
Modal submissions are decided inside the ack, under ``ACK_BUDGET``, so the modal can
show the store's answer; a button click has no modal to answer into, so it is acked
at once and decided after, with the outcome sent only to the clicker.
"""

from __future__ import annotations

import asyncio

from slack_bolt.async_app import AsyncRespond

from bot.listeners.forms import say
from bot.render.modals import ModalTarget
from bot.render.mrkdwn import mention
from bot.render.titles import ANYONE, who_may_decide
from bot.services import Services
from engine import DecideResult
from engine.policy import Refusal
from engine.records import Ask, AskStatus, Closed, Decision, Run, RunStatus, Verdict

ACK_BUDGET = 2.4  # seconds of store work inside an ack; Slack drops answers after 3 s

NOT_CONFIRMED = (
    "I could not confirm in time that your answer was recorded. Submit again: the same answer twice counts once."
)

_PAST = {
    Verdict.APPROVE: "approved",
    Verdict.REJECT: "rejected",
    Verdict.REPLY: "answered",
    Verdict.TRUST: "trusted",
    Verdict.RETRY: "sent back for a retry",
    Verdict.EDIT: "approved with edits",
}


def loser_text(result: DecideResult) -> str:
    ask = result.ask
    if result.unrecorded:
        return "Nothing was recorded: I could not reach my store just now. The card is still open; try again."
    if ask is None:
        return "I don't know this card any more (its run is gone or the card is out of date); nothing was decided."
    if result.refusal is not None:
        return refusal_text(result.refusal, ask)
    if ask.closed is Closed.CHANGED:
        return "The question changed after this card was posted; answer the new card in the thread instead."
    if ask.closed is Closed.CANCELLED or (ask.status is AskStatus.OBSOLETE and _cancelled(result.run)):
        by = f" by {mention(result.run.cancelled_by)}" if result.run is not None and result.run.cancelled_by else ""
        return f"This run was cancelled{by}; nothing was decided."
    if ask.decision is not None:
        if ask.decision.expired:
            return "This ask expired before anyone decided; nothing was decided."
        return f"Already {_PAST[ask.decision.verdict]} by {mention(ask.decision.user)}; your click changed nothing."
    if ask.status is AskStatus.OBSOLETE:
        return "This run moved on before anyone answered; this card can no longer be answered."
    if ask.status is AskStatus.PENDING:
        return "This card does not offer that choice; nothing was decided."
    return "This card can't be answered right now; nothing was decided."


def refusal_text(refusal: Refusal, ask: Ask) -> str:
    """Why the policy refused an answer, and who may give it instead; nothing was recorded."""
    quorum = ask.rules.quorum
    if refusal is Refusal.NOT_APPROVER:
        who = who_may_decide(ask)
        if who == ANYONE:  # the terms changed between the refusal and this read
            return "You may not decide this; nothing was recorded."
        return f"Only {who} may decide this; nothing was recorded."
    if refusal is Refusal.SELF_APPROVAL:
        return (
            "You started this run, so you may reject its asks but not approve them "
            "(the graph does not allow self-approval); nothing was recorded."
        )
    if refusal is Refusal.ALREADY_APPROVED:
        return (
            f"You already approved this; it needs {quorum} approvals from different people ({len(ask.votes)} so far)."
        )
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
    who = who_may_decide(ask, leaving_out=tuple(ask.votes))
    return f"Your approval counts: {have} of {need}. Waiting for {more} from {who}."


def _cancelled(run: Run | None) -> bool:
    return run is not None and run.status is RunStatus.CANCELLED


async def tell_loser(result: DecideResult, *, respond: AsyncRespond) -> None:
    await say(respond, loser_text(result))


async def decide_in_ack(*, services: Services, target: ModalTarget, decision: Decision, budget: float) -> str | None:
    """Decide a modal submission inside its ack; None when accepted, else what to show.

    The run is not claimed here: resuming is work for after the ack (``pick_up``). A
    store that does not answer within ``budget`` may still record the answer, so the
    person is told it is unconfirmed, and a second submission of the same answer is
    accepted as the same decision.
    """
    try:
        result = await asyncio.wait_for(
            services.engine.decide(run_id=target.run_id, ask_key=target.ask_key, decision=decision, card=target.card),
            timeout=max(budget, 0.1),
        )
    except TimeoutError:
        return NOT_CONFIRMED
    return None if result.accepted else loser_text(result)
