"""What a person is told when their click did not decide anything."""

from __future__ import annotations

from slack_bolt.async_app import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.render.modals import ModalTarget
from bot.services import Services
from engine import DecideResult
from persistence.records import AskStatus, Decision, Verdict

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
    if ask is None and result.run is not None and result.run.status.leased:
        return "This run is still being saved or is recovering from a restart; nothing was decided. Try again soon."
    if ask is None:
        return "I don't know this card any more (its run is gone or the card is out of date); nothing was decided."
    if ask.decision is not None:
        return f"Already {_PAST[ask.decision.verdict]} by <@{ask.decision.user}>; your click changed nothing."
    if ask.status is AskStatus.OBSOLETE:
        return "This run moved on before anyone answered; this card can no longer be answered."
    if ask.status is AskStatus.PENDING:
        return "This card does not offer that choice; nothing was decided."
    return "This card can't be answered right now; nothing was decided."


async def tell_loser(result: DecideResult, *, respond: AsyncRespond) -> None:
    await respond(text=loser_text(result), response_type="ephemeral", replace_original=False)


async def decide_from_modal(
    *, services: Services, client: AsyncWebClient, target: ModalTarget, decision: Decision
) -> None:
    """Decide, then resume the run; a modal has no response_url, so a loser is told ephemerally."""
    result = await services.engine.decide(run_id=target.run_id, ask_key=target.ask_key, decision=decision)
    if not result.accepted:
        await client.chat_postEphemeral(channel=target.channel, user=decision.user, text=loser_text(result))
        return
    await services.engine.resume(target.run_id, known=result.run)
