"""The engine's ``Publisher`` for Slack: renders with ``bot.render`` and posts with the Web API.

All of a run's messages go to one thread: the announcement is the thread's root, and
cards, reminders, escalations, the final output and failures are replies in it. Each
message carries Slack message metadata naming its run and what it is (an ask key, the
end, the announcement, ``<ask key>:notice:<index>`` for a reminder or an escalation),
so that a later delivery can find a message whose posting was never recorded (the
process died, the response was lost) instead of posting it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.models.metadata import Metadata
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.progress import Pacer, SlackLiveProgress, StreamSupport
from bot.render import cards, messages
from bot.render import progress as progress_view
from bot.render.cards import Rendered
from bot.workspace import Workspace
from engine.ports import FINAL, PROGRESS, PublishError, PublishUnconfirmed
from engine.records import Ask, AskStatus, MessageRef, Run, RunStatus

if TYPE_CHECKING:
    from bot.home import RunViews

logger = logging.getLogger(__name__)

EVENT_TYPE = "approval_bot_message"
ANNOUNCEMENT = "announcement"
_NO_VERDICT = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"})
"""Slack's error codes that say nothing about whether the message was posted."""
_LOOKUP_PAGES = 10  # of 200 messages: a run's thread, or the channel since the run started


class SlackPublisher:
    def __init__(
        self,
        *,
        client: AsyncWebClient,
        workspace: Workspace | None = None,
        streaming: bool = True,
        views: RunViews | None = None,
    ) -> None:
        self._client = client
        self.workspace = workspace or Workspace(client=client)
        self._streams = StreamSupport(enabled=streaming)
        self._pacer = Pacer()
        self._views = views  # App Home, refreshed when a run changes for its viewers
        self._plain = False  # this workspace refused a table block once: send the plain variant

    async def _own_bot_id(self) -> str:
        """This bot's id, asked of Slack once: only its own messages may pass for the bot's."""
        return (await self.workspace.identity()).bot_id

    # -- progress (engine.ports.ProgressPublisher) ---------------------------------------------

    def live_progress(self, *, run: Run) -> SlackLiveProgress:
        async def team_id() -> str:
            return (await self.workspace.identity()).team_id

        return SlackLiveProgress(
            client=self._client,
            run=run,
            support=self._streams,
            team_id=team_id,
            metadata=_metadata(run, PROGRESS),
            pacer=self._pacer,
        )

    async def update_progress(self, *, run: Run) -> MessageRef:
        """Make the status message show the saved progress: edit it, or post it if it has none."""
        assert run.progress is not None
        await self._links_ready()
        thread = _thread_of(run)
        message = progress_view.status_message(
            run=run, nodes=run.progress.nodes, link=lambda ask: self._card_link(run, ask)
        )
        ref = run.progress.message
        if ref is None:
            return await self._post(
                run=run, what=PROGRESS, channel=thread.channel, thread_ts=thread.ts, message=message
            )
        # Not held back for the message's turn: this edit follows a save, once per pass, and
        # the live view that may have edited it a moment ago has stopped for good.
        self._pacer.edited(ref.ts)
        await self._client.chat_update(
            channel=ref.channel, ts=ref.ts, text=message.text, blocks=message.blocks, metadata=_metadata(run, PROGRESS)
        )
        return ref

    async def run_changed(self, *, run: Run) -> None:
        if self._views is not None:
            await self._views.run_changed(run)

    async def _links_ready(self) -> None:
        try:
            await self.workspace.identity()
        except Exception:  # links are a convenience: the message goes out without them
            logger.info("auth.test failed; the status message links to nothing this time")

    def _card_link(self, run: Run, ask: Ask) -> str | None:
        if ask.card is None:
            return None
        return self.workspace.link(ask.card, thread_ts=run.thread.ts if run.thread else None)

    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        """Raises ``PublishError`` when Slack refused the announcement (``not_in_channel``…),
        ``PublishUnconfirmed`` when it gave no verdict: an answer that came after the
        client's timeout still leaves the message in the channel."""
        try:
            return await self._post(
                run=run, what=ANNOUNCEMENT, channel=channel, thread_ts=None, message=messages.run_started(run=run)
            )
        except SlackApiError as error:
            code = str(error.response.get("error", "unknown_error"))
            if code in _NO_VERDICT or error.response.status_code == 429 or error.response.status_code >= 500:
                raise PublishUnconfirmed(code) from error
            raise PublishError(code) from error
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            raise PublishUnconfirmed(f"no answer from Slack: {type(error).__name__}") from error

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        thread = _thread_of(run)
        if ask.decision is not None and ask.decision.policy is not None:  # a rule decided: one line
            card = messages.auto_decided(run=run, ask=ask)
        else:
            card = cards.ask_card(run=run, ask=ask, verdicts=ask.verdicts)
        return await self._post(run=run, what=ask.key, channel=thread.channel, thread_ts=thread.ts, message=card)

    async def update_card(self, *, run: Run, ask: Ask) -> None:
        if ask.card is None:
            return
        if ask.decision is not None and ask.decision.policy is not None:  # a rule's line stays as it was
            card = messages.auto_decided(run=run, ask=ask)
        elif ask.status is AskStatus.PENDING:  # "live", or live with approvals or an escalation to show
            card = cards.ask_card(run=run, ask=ask, verdicts=ask.verdicts)
        elif ask.decision is not None and ask.view == "decided":
            card = cards.decided_card(run=run, ask=ask)
        else:
            card = cards.obsolete_card(run=run, ask=ask)
        ref = ask.card
        await self._sent(
            card,
            lambda blocks: self._client.chat_update(
                channel=ref.channel, ts=ref.ts, text=card.text, blocks=blocks, metadata=_metadata(run, ask.key)
            ),
        )

    async def post_final(self, *, run: Run) -> MessageRef:
        if run.status is RunStatus.COMPLETED:
            message = messages.run_completed(run=run)
        elif run.status is RunStatus.FAILED:
            message = messages.run_failed(run=run)
        elif run.status is RunStatus.REJECTED:
            message = messages.run_rejected(run=run)
        else:
            message = messages.run_cancelled(run=run)
        thread = _thread_of(run)
        return await self._post(run=run, what=FINAL, channel=thread.channel, thread_ts=thread.ts, message=message)

    async def post_notice(self, *, run: Run, ask: Ask, index: int) -> MessageRef:
        """Post a reminder or an escalation in the thread, mentioning who may decide.

        It says the card is above in the thread rather than linking to it: a link would
        cost a ``chat.getPermalink`` call per notice for a message a scroll away.
        """
        thread = _thread_of(run)
        message = messages.ask_notice(run=run, ask=ask, index=index)
        return await self._post(
            run=run, what=notice_what(ask.key, index), channel=thread.channel, thread_ts=thread.ts, message=message
        )

    async def find_posted(self, *, run: Run, what: str) -> MessageRef | None:
        """Look through the thread (or, for the announcement, the channel since the run
        started) for a message whose metadata names this run and ``what``: an ask key,
        ``FINAL``, a notice (``notice_what``), or "" for the announcement."""
        what = what or ANNOUNCEMENT
        method: Callable[..., Awaitable[AsyncSlackResponse]]
        if what == ANNOUNCEMENT:
            if run.channel is None:
                return None
            kwargs: dict[str, Any] = {"channel": run.channel, "oldest": f"{run.created_at - 60:.6f}"}
            method = self._client.conversations_history
        else:
            thread = _thread_of(run)
            kwargs = {"channel": thread.channel, "ts": thread.ts}
            method = self._client.conversations_replies
        own = await self._own_bot_id()
        cursor = None
        for _ in range(_LOOKUP_PAGES):
            page = await method(
                **kwargs, limit=200, include_all_metadata=True, **({"cursor": cursor} if cursor else {})
            )
            for message in page.get("messages") or []:
                payload = (message.get("metadata") or {}).get("event_payload") or {}
                # Any app can post metadata that looks like ours; only this bot's count.
                if (
                    own
                    and message.get("bot_id") == own
                    and payload.get("run_id") == run.run_id
                    and payload.get("what") == what
                ):
                    return MessageRef(channel=kwargs["channel"], ts=str(message["ts"]))
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None
        return None

    async def retract(self, *, ref: MessageRef) -> None:
        await self._client.chat_delete(channel=ref.channel, ts=ref.ts)

    async def _post(self, *, run: Run, what: str, channel: str, thread_ts: str | None, message: Rendered) -> MessageRef:
        response = await self._sent(
            message,
            lambda blocks: self._client.chat_postMessage(
                channel=channel,
                thread_ts=thread_ts,
                text=message.text,
                blocks=blocks,
                unfurl_links=False,
                metadata=_metadata(run, what),
            ),
        )
        return MessageRef(channel=str(response["channel"]), ts=str(response["ts"]))

    async def _sent(
        self, message: Rendered, send: Callable[[list[dict[str, Any]]], Awaitable[AsyncSlackResponse]]
    ) -> AsyncSlackResponse:
        """Send ``message``; where the workspace lacks a block it uses (Slack answers
        ``invalid_blocks``, and posted nothing), send its plain variant, and from then on
        only that. A plain variant Slack refuses too fails like any refused message."""
        if message.plain_blocks is not None and self._plain:
            return await send(message.plain_blocks)
        try:
            return await send(message.blocks)
        except SlackApiError as error:
            if message.plain_blocks is None or error.response.get("error") != "invalid_blocks":
                raise
            logger.info("Slack refused a block of this message (invalid_blocks); sending the plain variant from now on")
            self._plain = True
            return await send(message.plain_blocks)


def notice_what(ask_key: str, index: int) -> str:
    """What a notice's metadata says it is, as the engine asks ``find_posted`` for it."""
    return f"{ask_key}:notice:{index}"


def _metadata(run: Run, what: str) -> Metadata:
    # Ids only, like button values: metadata is visible to any app in the workspace.
    return Metadata(event_type=EVENT_TYPE, event_payload={"run_id": run.run_id, "what": what})


def _thread_of(run: Run) -> MessageRef:
    if run.thread is None:
        raise PublishError(f"run {run.run_id} has no thread to post in")
    return run.thread
