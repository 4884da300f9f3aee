"""The engine's ``Publisher`` for Slack: renders with ``bot.render`` and posts with the Web API.

All of a run's messages go to one thread: the announcement is the thread's root, and
cards, the final output and failures are replies in it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.render import cards, messages
from bot.render.cards import Rendered
from engine.ports import PublishError
from persistence.records import Ask, AskStatus, MessageRef, Run, RunStatus

logger = logging.getLogger(__name__)


class SlackPublisher:
    def __init__(self, *, client: AsyncWebClient) -> None:
        self._client = client

    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        try:
            posted = await self._post(channel=channel, thread_ts=None, message=messages.run_started(run=run))
        except SlackApiError as error:
            raise PublishError(str(error.response.get("error", "unknown_error"))) from error
        return posted

    async def asks_raised(self, *, run: Run, asks: Sequence[Ask]) -> dict[str, MessageRef]:
        thread = _thread_of(run)
        placed: dict[str, MessageRef] = {}
        for ask in asks:
            card = cards.ask_card(run=run, ask=ask, verdicts=ask.verdicts)
            try:
                placed[ask.key] = await self._post(channel=thread.channel, thread_ts=thread.ts, message=card)
            except Exception:  # keep the cards already posted; the sweeper posts this one later
                logger.exception("run %s: card for ask %s was not posted", run.run_id, ask.key)
        return placed

    async def ask_changed(self, *, run: Run, ask: Ask) -> None:
        if ask.card is None:
            return
        if ask.status is AskStatus.OBSOLETE:
            card = cards.obsolete_card(run=run, ask=ask)
        else:
            card = cards.decided_card(run=run, ask=ask)
        await self._client.chat_update(channel=ask.card.channel, ts=ask.card.ts, text=card.text, blocks=card.blocks)

    async def run_finished(self, *, run: Run) -> None:
        if run.status is RunStatus.COMPLETED:
            message = messages.run_completed(run=run)
        elif run.status is RunStatus.FAILED:
            message = messages.run_failed(run=run)
        elif run.status is RunStatus.REJECTED:
            message = messages.run_rejected(run=run)
        else:
            message = messages.run_cancelled(run=run)
        thread = _thread_of(run)
        await self._post(channel=thread.channel, thread_ts=thread.ts, message=message)

    async def _post(self, *, channel: str, thread_ts: str | None, message: Rendered) -> MessageRef:
        response = await self._client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, text=message.text, blocks=message.blocks, unfurl_links=False
        )
        return MessageRef(channel=str(response["channel"]), ts=str(response["ts"]))


def _thread_of(run: Run) -> MessageRef:
    if run.thread is None:
        raise PublishError(f"run {run.run_id} has no thread to post in")
    return run.thread
