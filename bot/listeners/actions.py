"""Card buttons. One-click verdicts are handed off and decided after the ack; Reply and
Reject open their modal inside the ack path, because a ``trigger_id`` expires in 3 s.

Button values carry ids only (run id, ask key); everything else is read from the store.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.handoff import Handoff, HandoffFailed
from bot.listeners.forms import open_view, say
from bot.render.cards import parse_action_value, verdict_from_action_id
from bot.render.modals import clicked_card, reply_modal
from bot.services import Services
from bot.work import Decide
from engine.records import Decision, Verdict

logger = logging.getLogger(__name__)

ONE_CLICK = re.compile(r"^ask:(approve|trust|retry)\Z")
WITH_MODAL = re.compile(r"^ask:(reply|reject)\Z")
MALFORMED = "This button is malformed; nothing was decided."


def in_home(body: dict[str, Any]) -> bool:
    """The click came from the App Home tab (a view container), not from a card."""
    container = body.get("container") or {}
    return container.get("type") == "view" and (body.get("view") or {}).get("type") == "home"


def _verdict(action: dict[str, Any]) -> Verdict:
    return verdict_from_action_id(str(action["action_id"]))


def register(app: AsyncApp, *, services: Services, handoff: Handoff) -> None:
    async def one_click(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond) -> None:
        try:
            run_id, ask_key = parse_action_value(str(action.get("value", "")))
        except ValueError:
            await ack()
            await say(respond, MALFORMED)
            return
        # The decision's time is taken here, so a second delivery of the same work is the
        # same decision (the store counts the same answer twice once).
        work = Decide(
            run_id=run_id,
            ask_key=ask_key,
            decision=Decision(verdict=_verdict(action), user=body["user"]["id"], at=time.time()),
            card=clicked_card(body),
            response_url=str(body.get("response_url") or ""),
            where="home" if in_home(body) else "card",
        )
        try:
            await handoff.submit(work)
        except HandoffFailed as failed:
            await ack()
            if failed.maybe_started:
                text = (
                    f"I could not confirm your click ({failed}). If the card has not changed in a minute, click again."
                )
            else:
                text = f"Nothing was recorded: I could not hand your click on ({failed}). Try again."
            await say(respond, text)
            return
        await ack()

    async def open_modal(
        ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient, respond: AsyncRespond
    ) -> None:
        await ack()
        container = body.get("container") or {}
        try:
            run_id, ask_key = parse_action_value(str(action.get("value", "")))
            view = reply_modal(
                run_id=run_id,
                ask_key=ask_key,
                verdict=_verdict(action),
                channel=str(container.get("channel_id") or (body.get("channel") or {}).get("id") or ""),
                message_ts=str(container.get("message_ts") or ""),
            )
        except ValueError:
            await say(respond, MALFORMED)
            return
        await open_view(client, respond=respond, trigger_id=body.get("trigger_id"), view=view)

    app.action(ONE_CLICK)(one_click)
    app.action(WITH_MODAL)(open_modal)
