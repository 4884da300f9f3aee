"""Opening a modal from a click, and telling the clicker when that cannot be done.

A ``trigger_id`` lives 3 seconds, so ``views.open`` gets one short try: no waiting out
a 429, no retry after a 5xx. When Slack refuses (``expired_trigger_id``, a rate limit,
an error), the click has already been acked; the person gets an ephemeral message that
says what happened and what to do, instead of nothing and a traceback in the log.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from slack_bolt.async_app import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.models.views import View
from slack_sdk.web.async_client import AsyncWebClient

logger = logging.getLogger(__name__)

OPEN_BUDGET: Final = 1.5
"""Seconds for ``views.open``. On Lambda the ack waits for the listener to finish, so the
Edit button's store read and this must fit in Slack's 3 s together, after a cold start."""


async def say(respond: AsyncRespond, text: str) -> None:
    """An ephemeral note to the person who clicked; the card itself is left as it is."""
    try:
        await respond(text=text, response_type="ephemeral", replace_original=False)
    except ValueError:  # Bolt's answer when the request had no response_url (a click in a modal)
        logger.debug("no response_url to send an ephemeral note to")
    except Exception as error:  # the note is a courtesy: its failure must not become a 5xx
        logger.warning("could not send an ephemeral note: %s", type(error).__name__)


async def open_view(
    client: AsyncWebClient, *, respond: AsyncRespond, trigger_id: object, view: View | dict[str, Any]
) -> bool:
    """Open ``view`` for the click; True when Slack opened it, else the clicker was told why."""
    if not isinstance(trigger_id, str) or not trigger_id:
        await say(respond, "Slack sent this click without a way to open a form; nothing was decided.")
        return False
    # No retry handlers here: waiting out a 429 would outlive the trigger anyway.
    quick = AsyncWebClient(token=client.token, base_url=client.base_url, timeout=int(OPEN_BUDGET) + 1)
    try:
        await asyncio.wait_for(quick.views_open(trigger_id=trigger_id, view=view), timeout=OPEN_BUDGET)
        return True
    except SlackApiError as error:
        problem = str(error.response.get("error") or error.response.status_code)
        text = _refusal(problem)
    except (TimeoutError, OSError) as error:
        problem = type(error).__name__
        text = "Slack did not open the form in time; nothing was decided. Click the button again."
    except Exception as error:  # aiohttp's client errors and the like
        problem = type(error).__name__
        text = "I could not reach Slack to open the form; nothing was decided. Click the button again."
    logger.info("views.open failed (%s); the clicker was told", problem)
    await say(respond, text)
    return False


def _refusal(problem: str) -> str:
    if problem == "expired_trigger_id":
        return (
            "The form could not open in time (Slack lets a click open one for 3 seconds); "
            "nothing was decided. Click the button again."
        )
    if problem in ("ratelimited", "429"):
        return "Slack is rate-limiting me right now; nothing was decided. Click the button again in a few seconds."
    return f"Slack would not open the form (`{problem[:60]}`); nothing was decided. Click the button again."
