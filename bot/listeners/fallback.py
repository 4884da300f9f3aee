"""Registered last: whatever reached Bolt but no listener of ours claims gets a quiet 200.

The edge already answers kinds the bot does not handle; this catches the rest of the
kinds it does (a click on a button from an older version of a card, another modal's
submission), which Bolt would answer 404 with a multi-line warning. Slack counts the
errors; the person has nothing to act on.
"""

from __future__ import annotations

import logging
import re

from slack_bolt.async_app import AsyncAck, AsyncApp

logger = logging.getLogger(__name__)

_ANY = re.compile(r".*")


def register(app: AsyncApp) -> None:
    async def quietly(ack: AsyncAck) -> None:
        logger.debug("acked a request no listener handles")
        await ack()

    app.action(_ANY)(quietly)
    app.view(_ANY)(quietly)
    app.command(_ANY)(quietly)
