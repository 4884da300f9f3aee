"""Modal submissions (Reply, Reject with a reason): validated in the ack, decided after it."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners.outcomes import loser_text
from bot.render.modals import REPLY_BLOCK_ID, modal_text, parse_modal_metadata
from bot.services import Services
from persistence.records import Decision, Verdict

logger = logging.getLogger(__name__)

CALLBACK = re.compile(r"^ask:(reply|reject)$")


def register(app: AsyncApp, *, services: Services) -> None:
    async def acknowledge(ack: AsyncAck, view: dict[str, Any]) -> None:
        try:
            parse_modal_metadata(str(view.get("private_metadata", "")))
        except ValueError:
            await ack(response_action="errors", errors={REPLY_BLOCK_ID: "This form is out of date; close it."})
            return
        verdict = Verdict(str(view["callback_id"]).split(":", 1)[1])
        if verdict is Verdict.REPLY and not modal_text(view.get("state", {}).get("values", {})):
            await ack(response_action="errors", errors={REPLY_BLOCK_ID: "Write a reply first."})
            return
        await ack()

    async def decide(body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient) -> None:
        try:
            target = parse_modal_metadata(str(view.get("private_metadata", "")))
        except ValueError:
            return  # refused in the ack
        verdict = Verdict(str(view["callback_id"]).split(":", 1)[1])
        user = body["user"]["id"]
        decision = Decision(
            verdict=verdict,
            user=user,
            at=time.time(),
            text=modal_text(view.get("state", {}).get("values", {})),
        )
        result = await services.engine.decide(run_id=target.run_id, ask_key=target.ask_key, decision=decision)
        if not result.accepted:
            if target.channel:
                await client.chat_postEphemeral(channel=target.channel, user=user, text=loser_text(result))
            return
        await services.engine.resume(target.run_id, known=result.run)

    app.view(CALLBACK)(ack=acknowledge, lazy=[decide])
