"""Events: ``app_home_opened`` publishes the person's Home tab, after the ack.

The tab is built from the store (their inbox and runs), which may not fit in the ack on a
cold Lambda, so it is handed off like any other work. Events Slack retries
(``X-Slack-Retry-Num``) are the same request again: publishing twice is harmless.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.handoff import Handoff, HandoffFailed
from bot.payloads import USER_ID
from bot.work import ShowHome

logger = logging.getLogger(__name__)


def register(app: AsyncApp, *, handoff: Handoff) -> None:
    async def on_home_opened(event: dict[str, Any]) -> None:
        user = str(event.get("user") or "")
        if event.get("tab", "home") != "home" or not USER_ID.fullmatch(user):
            return  # the Messages tab, or nobody we can publish for
        try:
            await handoff.submit(ShowHome(user=user))
        except HandoffFailed as failed:
            logger.warning("home: could not hand on a Home tab to publish (%s)", failed)

    app.event("app_home_opened")(on_home_opened)
