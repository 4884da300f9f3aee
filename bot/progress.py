"""The status message while a pass runs: streamed where Slack can, edited in place where not.

One status message per run, a reply in its thread. In a run's first pass the message is
opened with ``chat.startStream`` (a plan with one task per node, ``task_display_mode=
"plan"``) and each change is a ``chat.appendStream`` of the changed tasks; the pass ends
with ``chat.stopStream``. Where Slack refuses the stream (a workspace or channel without
that surface: ``UNSUPPORTED``), the message is a plain Block Kit message posted with
``chat.postMessage`` and edited with ``chat.update``; the refusal is remembered for an
hour so later runs go straight to it. Later passes always edit the message (a stopped
stream cannot be reopened). Updates are coalesced and sent at most once per
``interval`` per message, which is Slack's pace for editing one message.

Everything here is best effort and never raises into the pass: once the pass is saved,
the engine brings the message to the saved progress like a card (``update_progress``),
so a dropped update is repaired and the last state always lands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, Final

from slack_sdk.errors import SlackApiError
from slack_sdk.models.metadata import Metadata
from slack_sdk.web.async_client import AsyncWebClient

from bot.render import progress as render
from bot.render.messages import split_output
from bot.render.mrkdwn import MESSAGE_TEXT_BUDGET, Rendered, build, cut_plain, escape
from engine.progress import NodeProgress
from engine.records import MessageRef, Run, RunStatus

logger = logging.getLogger(__name__)

UPDATE_INTERVAL: Final = 1.0  # seconds between two edits of one message (Slack's pace)
CLOSE_BUDGET: Final = 10.0  # seconds the end of a pass waits for pending updates
UNSUPPORTED_FOR: Final = 3600.0
# Slack's answers that mean "no streaming here" (the workspace, the channel type or the token).
UNSUPPORTED: Final = frozenset(
    {
        "feature_not_enabled",
        "not_supported",
        "method_not_supported_for_channel_type",
        "channel_type_not_supported",
        "enterprise_is_restricted",
        "unknown_method",
        "not_allowed_token_type",
        "missing_scope",
        "invalid_arguments",
    }
)
STREAM_OVER: Final = frozenset({"message_not_in_streaming_state", "message_not_found"})
MAX_OUTPUT_MESSAGES: Final = 4  # per node output; the rest is cut with a note
OUTPUT_BLOCKS: Final = 40


class Pacer:
    """At most one edit of a message per ``interval``, across the live view and the update
    after the save (both edit the same status message, from the same process)."""

    def __init__(self, *, interval: float = UPDATE_INTERVAL) -> None:
        self.interval = interval
        self._last: dict[str, float] = {}

    def wait_for(self, ts: str | None) -> float:
        """Seconds to wait before ``ts`` may be edited again (0: now)."""
        if ts is None:
            return 0.0
        return max(self._last.get(ts, -float("inf")) + self.interval - time.monotonic(), 0.0)

    async def turn(self, ts: str) -> None:
        """Wait for ``ts``'s turn and take it."""
        wait = self.wait_for(ts)
        if wait > 0:
            await asyncio.sleep(wait)
        self.edited(ts)

    def edited(self, ts: str) -> None:
        self._last[ts] = time.monotonic()
        if len(self._last) > 1000:  # old messages: forget the oldest
            for old in sorted(self._last, key=self._last.__getitem__)[:500]:
                del self._last[old]


class StreamSupport:
    """Whether to try Slack's streaming surface, remembered per process after a refusal."""

    def __init__(self, *, enabled: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self._enabled = enabled
        self._clock = clock
        self._refused_until = 0.0

    @property
    def usable(self) -> bool:
        return self._enabled and self._clock() >= self._refused_until

    def refused(self, error: str) -> None:
        logger.info("progress: Slack refused streaming (%s); status messages are edited in place for now", error)
        self._refused_until = self._clock() + UNSUPPORTED_FOR


class SlackLiveProgress:
    """``engine.ports.LiveProgress`` for one pass of one run."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        run: Run,
        support: StreamSupport,
        team_id: Callable[[], Any],
        metadata: Metadata,
        pacer: Pacer,
    ) -> None:
        self._client = client
        self._run = run
        self._support = support
        self._team_id = team_id
        self._metadata = metadata
        self._pacer = pacer
        self._message = run.progress.message if run.progress is not None else None
        self._streaming = False
        self._nodes: tuple[NodeProgress, ...] | None = None  # not shown yet
        self._sent: dict[str, str] = {}  # task id -> the status last streamed
        self._outputs: list[tuple[str, str]] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._closing = False  # the pass is over: no more status edits, outputs still go out
        self._pacing = False  # the flusher is only waiting for the message's turn

    def show(self, nodes: tuple[NodeProgress, ...]) -> None:
        self._nodes = nodes
        self._wake()

    def output(self, node_id: str, text: str) -> None:
        self._outputs.append((node_id, text))
        self._wake()

    async def close(self) -> MessageRef | None:
        """End the live view without holding up the save: a status edit still waiting for its
        turn is dropped (the saved progress is delivered right after the save anyway), a
        message not posted yet is still posted (so the save records one message to edit),
        outputs still queued are posted, and nothing is sent once this returns."""
        self._closing = True
        if self._message is not None:
            self._nodes = None
        task = self._task
        if task is not None and not task.done():
            if self._pacing:
                task.cancel()  # it only waited for the message's turn
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), timeout=CLOSE_BUDGET)
            if not task.done():  # Slack is stuck (a long Retry-After): give up on it
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._outputs:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._drain_outputs(), timeout=CLOSE_BUDGET)
        self._closed = True
        if self._streaming and self._message is not None:
            await self._quietly(
                "chat.stopStream",
                self._client.chat_stopStream(
                    channel=self._message.channel, ts=self._message.ts, metadata=self._metadata
                ),
            )
            self._streaming = False
        return self._message

    def _wake(self) -> None:
        if self._closed:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while not self._closed and (self._outputs or (self._nodes is not None and not self._closing)):
                if self._outputs:  # other messages: not held back by the status message's pace
                    await self._post_output(*self._outputs.pop(0))
                    continue
                wait = self._pacer.wait_for(self._message.ts if self._message else None)
                if wait > 0:
                    self._pacing = True
                    try:
                        await asyncio.sleep(wait)  # changes meanwhile are coalesced into one edit
                    finally:
                        self._pacing = False
                    continue
                nodes, self._nodes = self._nodes, None
                if nodes is not None:
                    await self._send(nodes)
                    if self._message is not None:
                        self._pacer.edited(self._message.ts)
        except Exception:  # a view: never let it break the pass
            logger.warning("run %s: a progress update failed", self._run.run_id, exc_info=True)

    async def _drain_outputs(self) -> None:
        while self._outputs and not self._closed:
            await self._post_output(*self._outputs.pop(0))

    async def _send(self, nodes: tuple[NodeProgress, ...]) -> None:
        thread = self._run.thread
        if thread is None:
            return
        if self._message is None and self._support.usable and await self._start_stream(thread, nodes):
            return
        if self._streaming and self._message is not None:
            changed = [c for c in render.task_chunks(nodes) if self._sent.get(c["id"]) != c["status"]]
            if not changed:
                return
            try:
                await self._client.chat_appendStream(channel=self._message.channel, ts=self._message.ts, chunks=changed)
                self._sent.update({c["id"]: c["status"] for c in changed})
                return
            except SlackApiError as error:
                if str(error.response.get("error")) not in STREAM_OVER:
                    raise
                self._streaming = False  # Slack ended it (about 5 minutes in): edit it from now on
        message = render.status_message(run=self._run, nodes=nodes, status=RunStatus.RUNNING)
        if self._message is None:
            self._message = await self._post(thread, message)
        else:
            await self._client.chat_update(
                channel=self._message.channel,
                ts=self._message.ts,
                text=message.text,
                blocks=message.blocks,
                metadata=self._metadata,
            )

    async def _start_stream(self, thread: MessageRef, nodes: tuple[NodeProgress, ...]) -> bool:
        team = await self._team_id()
        if not team:
            return False
        chunks = render.plan_chunks(run=self._run, nodes=nodes)
        try:
            response = await self._client.chat_startStream(
                channel=thread.channel,
                thread_ts=thread.ts,
                recipient_user_id=self._run.started_by,
                recipient_team_id=str(team),
                task_display_mode="plan",
                chunks=chunks,
            )
        except SlackApiError as error:
            code = str(error.response.get("error") or "")
            if code in UNSUPPORTED or code.startswith("missing_recipient"):
                self._support.refused(code)
            else:
                logger.info("run %s: chat.startStream failed (%s); posting instead", self._run.run_id, code)
            return False
        self._message = MessageRef(channel=str(response.get("channel") or thread.channel), ts=str(response["ts"]))
        self._streaming = True
        self._sent = {c["id"]: c["status"] for c in chunks if c.get("type") == "task_update"}
        return True

    async def _post(self, thread: MessageRef, message: Rendered) -> MessageRef:
        response = await self._client.chat_postMessage(
            channel=thread.channel,
            thread_ts=thread.ts,
            text=message.text,
            blocks=message.blocks,
            unfurl_links=False,
            metadata=self._metadata,
        )
        return MessageRef(channel=str(response["channel"]), ts=str(response["ts"]))

    async def _post_output(self, node_id: str, text: str) -> None:
        thread = self._run.thread
        if thread is None:
            return
        for message in output_messages(node_id, text):
            await self._client.chat_postMessage(
                channel=thread.channel,
                thread_ts=thread.ts,
                text=message.text,
                blocks=message.blocks,
                unfurl_links=False,
            )

    async def _quietly(self, what: str, call: Any) -> None:
        try:
            await call
        except Exception as error:
            logger.info("run %s: %s failed (%s)", self._run.run_id, what, type(error).__name__)


def output_messages(node_id: str, text: str) -> list[Rendered]:
    """A node's output as thread replies: split into sections and messages Slack accepts,
    at most ``MAX_OUTPUT_MESSAGES`` of them, with a note of what was left out."""
    from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject, SectionBlock

    name = escape(cut_plain(node_id, render.NODE_ID_LIMIT))
    messages: list[Rendered] = []
    pos = 0
    while pos < len(text) and len(messages) < MAX_OUTPUT_MESSAGES:
        sections, shown = split_output(text[pos:], max_sections=OUTPUT_BLOCKS, max_chars=MESSAGE_TEXT_BUDGET - 400)
        if not sections:
            break
        pos += shown
        head = f"*{name}* finished" + (f" (part {len(messages) + 1})" if pos < len(text) or messages else "")
        blocks: list[Any] = [ContextBlock(elements=[MarkdownTextObject(text=head)])]
        blocks += [SectionBlock(text=MarkdownTextObject(text=s)) for s in sections]
        if len(messages) == MAX_OUTPUT_MESSAGES - 1 and pos < len(text):
            note = f"…{len(text) - pos:,} more characters not shown; the run's final message has its result."
            blocks.append(ContextBlock(elements=[MarkdownTextObject(text=note)]))
        messages.append(build(text=f"{name} finished", blocks=blocks))
    return messages
