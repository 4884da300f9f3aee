"""Modal submissions (Reply, Reject with a reason): validated in the ack, decided after it.

Bolt runs the lazy half even when the ack refused the submission, so both halves check
it with the same function and the lazy half does nothing for a refused one.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners.outcomes import decide_from_modal
from bot.render.modals import TEXT_BLOCK_ID, ModalTarget, modal_text, parse_modal_metadata, verdict_for_callback_id
from bot.services import Services
from persistence.records import Decision, Verdict

logger = logging.getLogger(__name__)

CALLBACK = re.compile(r"^ask:(reply|reject)$")


@dataclass(frozen=True, kw_only=True)
class Submission:
    target: ModalTarget
    verdict: Verdict
    text: str | None


def read_submission(view: dict[str, Any]) -> Submission | str:
    """The submission, or the problem to show next to the text input."""
    try:
        target = parse_modal_metadata(str(view.get("private_metadata", "")))
    except ValueError:
        return "This form is out of date; close it and click the card again."
    verdict = verdict_for_callback_id(str(view["callback_id"]))
    text = modal_text(view.get("state", {}).get("values", {}))
    if verdict is Verdict.REPLY and not text:
        return "Write a reply first."
    return Submission(target=target, verdict=verdict, text=text)


def register(app: AsyncApp, *, services: Services) -> None:
    async def acknowledge(ack: AsyncAck, view: dict[str, Any]) -> None:
        submission = read_submission(view)
        if isinstance(submission, str):
            await ack(response_action="errors", errors={TEXT_BLOCK_ID: submission})
        else:
            await ack()

    async def decide(body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient) -> None:
        submission = read_submission(view)
        if isinstance(submission, str):
            return  # refused in the ack
        target, user = submission.target, body["user"]["id"]
        decision = Decision(verdict=submission.verdict, user=user, at=time.time(), text=submission.text)
        await decide_from_modal(services=services, client=client, target=target, decision=decision)

    app.view(CALLBACK)(ack=acknowledge, lazy=[decide])
