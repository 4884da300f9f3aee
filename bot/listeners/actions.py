"""Card buttons. One-click verdicts are acked and decided after the ack; Reply and
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

from bot.listeners.outcomes import tell_loser
from bot.render.cards import parse_action_value, verdict_from_action_id
from bot.render.modals import clicked_card, reply_modal
from bot.services import Services
from persistence.records import Decision, Verdict

logger = logging.getLogger(__name__)

ONE_CLICK = re.compile(r"^ask:(approve|trust|retry)$")
WITH_MODAL = re.compile(r"^ask:(reply|reject)$")


def _verdict(action: dict[str, Any]) -> Verdict:
    return verdict_from_action_id(str(action["action_id"]))


async def _malformed(respond: AsyncRespond) -> None:
    await respond(
        text="This button is malformed; nothing was decided.",
        response_type="ephemeral",
        replace_original=False,
    )


def register(app: AsyncApp, *, services: Services) -> None:
    async def acknowledge(ack: AsyncAck) -> None:
        await ack()

    async def decide(body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond) -> None:
        try:
            run_id, ask_key = parse_action_value(str(action.get("value", "")))
        except ValueError:
            await _malformed(respond)
            return
        decision = Decision(verdict=_verdict(action), user=body["user"]["id"], at=time.time())
        # Decided and, when nobody holds the run, claimed in one write; resumed right after.
        result = await services.engine.decide(
            run_id=run_id, ask_key=ask_key, decision=decision, claim=True, card=clicked_card(body)
        )
        if not result.accepted:
            await tell_loser(result, respond=respond)
            return
        await services.engine.follow_up(result)

    async def open_modal(
        ack: AsyncAck,
        body: dict[str, Any],
        action: dict[str, Any],
        client: AsyncWebClient,
        respond: AsyncRespond,
    ) -> None:
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
            await ack()
            await _malformed(respond)
            return
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=view)

    app.action(ONE_CLICK)(ack=acknowledge, lazy=[decide])
    app.action(WITH_MODAL)(open_modal)
