"""Modal submissions (Reply, Reject with a reason): validated and decided in the ack.

Deciding inside the ack lets the modal show what the store recorded (accepted, or who
decided first, or that nothing could be recorded). Resuming the run is the lazy half's
work; it reads the outcome from the store, so it needs nothing from the ack.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp

from bot.listeners.outcomes import ACK_BUDGET, NOT_CONFIRMED, ack_started, decide_in_ack, pick_up
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
    async def acknowledge(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        outcome = ack_started(view)
        problem: str | None = NOT_CONFIRMED
        try:
            problem = await _decide(body=body, view=view)
        finally:
            outcome.set_result(problem is None)
        if problem is None:
            await ack()
        else:
            await ack(response_action="errors", errors={TEXT_BLOCK_ID: problem})

    async def _decide(*, body: dict[str, Any], view: dict[str, Any]) -> str | None:
        submission = read_submission(view)
        if isinstance(submission, str):
            return submission
        decision = Decision(verdict=submission.verdict, user=body["user"]["id"], at=time.time(), text=submission.text)
        return await decide_in_ack(services=services, target=submission.target, decision=decision, budget=ACK_BUDGET)

    async def resume(view: dict[str, Any]) -> None:
        submission = read_submission(view)
        if not isinstance(submission, str):
            await pick_up(services=services, view=view, run_id=submission.target.run_id)

    app.view(CALLBACK)(ack=acknowledge, lazy=[resume])
