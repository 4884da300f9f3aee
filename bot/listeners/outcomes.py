"""What a person is told when their click did not decide anything."""

from __future__ import annotations

from slack_bolt.async_app import AsyncRespond

from engine import DecideResult
from persistence.records import AskStatus, Verdict

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
