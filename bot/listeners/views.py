"""Modal submissions (Reply, Reject with a reason): validated and decided in the ack.

Deciding inside the ack lets the modal show what the store recorded (accepted, or who
decided first, or that nothing could be recorded). Resuming the run is handed off; it
reads the outcome from the store, so it needs nothing from the ack.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp

from bot.handoff import Handoff, hand_on
from bot.listeners.outcomes import ACK_BUDGET, decide_in_ack
from bot.payloads import not_text
from bot.render.modals import (
    TEXT_BLOCK_ID,
    TEXT_MAX_LENGTH,
    ModalTarget,
    modal_text,
    parse_modal_metadata,
    verdict_for_callback_id,
)
from bot.services import Services
from bot.work import PickUp
from engine.records import Decision, Verdict

CALLBACK = re.compile(r"^ask:(reply|reject)\Z")


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
    text = modal_text((view.get("state") or {}).get("values") or {})
    if verdict is Verdict.REPLY and not text:
        return "Write a reply first."
    if text is not None and len(text) > TEXT_MAX_LENGTH:  # the input says so too, but forms can be forged
        return f"This is too long ({len(text)} characters, at most {TEXT_MAX_LENGTH})."
    unreadable = not_text(text) if text is not None else None
    if unreadable is not None:  # Slack's clients cannot type it; stored, it would fail in the store
        return f"This cannot be sent: {unreadable}. Remove it and send again."
    return Submission(target=target, verdict=verdict, text=text)


def register(app: AsyncApp, *, services: Services, handoff: Handoff) -> None:
    async def on_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        submission = read_submission(view)
        if isinstance(submission, str):
            await ack(response_action="errors", errors={TEXT_BLOCK_ID: submission})
            return
        decision = Decision(verdict=submission.verdict, user=body["user"]["id"], at=time.time(), text=submission.text)
        budget = ACK_BUDGET - handoff.budget  # the resume's handoff must fit in the same 3 s
        problem = await decide_in_ack(services=services, target=submission.target, decision=decision, budget=budget)
        if problem is not None:
            await ack(response_action="errors", errors={TEXT_BLOCK_ID: problem})
            return
        await hand_on(handoff, PickUp(run_id=submission.target.run_id))
        await ack()

    app.view(CALLBACK)(on_submit)
