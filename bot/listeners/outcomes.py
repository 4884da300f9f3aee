"""One path for every kind of answer (button, Reply, Reject, Edit), and what people are told.

What a person is shown is what the store recorded, as the engine classifies it
(``DecideResult.outcome``) and ``bot.render.answers`` words it: accepted, counted as one
approval of several, refused (and why), taken by someone first, or not recorded at all
(the store failed; the card stays live and they may try again). Routing only, here.
Modal submissions are decided inside the ack, under ``ACK_BUDGET``, so the modal can
show the store's answer; a button click has no modal to answer into, so it is acked
at once and decided after, with the outcome sent only to the clicker.
"""

from __future__ import annotations

import asyncio

from slack_bolt.async_app import AsyncRespond

from bot.listeners.forms import say
from bot.render.answers import counted_text, outcome_text, refusal_text
from bot.render.modals import ModalTarget
from bot.services import Services
from engine import DecideResult
from engine.records import Decision

__all__ = ["ACK_BUDGET", "NOT_CONFIRMED", "counted_text", "decide_in_ack", "loser_text", "refusal_text", "tell_loser"]

ACK_BUDGET = 2.4  # seconds of store work inside an ack; Slack drops answers after 3 s

NOT_CONFIRMED = (
    "I could not confirm in time that your answer was recorded. Submit again: the same answer twice counts once."
)


def loser_text(result: DecideResult) -> str:
    """What someone whose click decided nothing is told (``bot.render.answers``)."""
    return outcome_text(result)


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
