"""One path for every kind of answer (button, Reply, Reject, Edit), and what people are told.

What a person is shown is what the store recorded: accepted, refused (and why), or not
recorded at all (the store failed; the card stays live and they may try again).
Modal submissions are decided inside the ack, under ``ACK_BUDGET``, so the modal can
show the store's answer; a button click has no modal to answer into, so it is acked
at once and decided after, with the outcome sent only to the clicker.
"""

from __future__ import annotations

import asyncio

from slack_bolt.async_app import AsyncRespond

from bot.listeners.forms import say
from bot.render.modals import ModalTarget
from bot.services import Services
from engine import DecideResult
from engine.records import AskStatus, Closed, Decision, Verdict

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
    if ask.closed is Closed.CHANGED:
        return "The question changed after this card was posted; answer the new card in the thread instead."
    if ask.decision is not None:
        return f"Already {_PAST[ask.decision.verdict]} by <@{ask.decision.user}>; your click changed nothing."
    if ask.status is AskStatus.OBSOLETE:
        return "This run moved on before anyone answered; this card can no longer be answered."
    if ask.status is AskStatus.PENDING:
        return "This card does not offer that choice; nothing was decided."
    return "This card can't be answered right now; nothing was decided."


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
