"""Streamed replies: ``chat.startStream``, ``chat.appendStream`` and ``chat.stopStream``.

An agent's answer can grow in place as a thread reply (markdown text, a task timeline or
plan) instead of being posted whole. Slack only streams into an existing thread, to a named
recipient outside DMs, for about five minutes; it refuses edits while a message streams and
appends once it stopped. Workspaces without the feature answer ``feature_not_enabled`` and the
bot must fall back to chat.postMessage + chat.update; ``LocalSlack(streaming=False)`` is such a
workspace. The streamed message lives in the message store like any reply, its stream state
in ``message["stream"]`` (see ``chunks.py``).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any, Final

from localslack.chunks import apply, check_chunks, new_stream
from localslack.conversations import checked_channel
from localslack.limits import LIMITS, check_message
from localslack.metadata import check_metadata
from localslack.state import ApiError, SlackState

STREAM_LIFETIME_SECONDS: Final = 300.0
"""Slack ends a stream about five minutes after it started."""
_DISPLAY_MODES: Final = ("timeline", "plan")

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class Streams:
    """The three streaming methods over ``state``'s messages; ``WebApi`` registers ``methods``."""

    def __init__(self, *, state: SlackState, enabled: bool, lifetime: float) -> None:
        self.state = state
        self.enabled = enabled
        self.lifetime = lifetime
        self._started: dict[tuple[str, str], float] = {}
        self.methods: dict[str, Handler] = {
            "chat.startStream": self._start,
            "chat.appendStream": self._append,
            "chat.stopStream": self._stop,
        }

    def expire(self) -> None:
        """End the streams older than ``lifetime``, as Slack does on its own."""
        now = time.monotonic()
        for (channel, ts), started in list(self._started.items()):
            if now - started >= self.lifetime:
                self._end(channel, ts, ended_by="lifetime")

    def check_editable(self, *, channel: str, ts: str) -> None:
        """chat.update: Slack refuses to edit a message while it is still streaming."""
        self.expire()
        if (channel, ts) in self._started and self.state.stored_message(channel, ts) is not None:
            raise ApiError("streaming_state_conflict", ["the message is streaming: stop the stream first"])

    # -- the methods -----------------------------------------------------------------------------

    def _start(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_enabled()
        channel = checked_channel(params)
        thread_ts = params.get("thread_ts")
        parent = self.state.stored_message(channel, thread_ts) if isinstance(thread_ts, str) else None
        if parent is None or parent.get("thread_ts") not in (None, parent["ts"]):
            raise ApiError("invalid_thread_ts", ["thread_ts must name a top-level message in the channel"])
        if not channel.startswith("D"):  # outside a DM Slack must know whom the stream is for
            for key in ("recipient_user_id", "recipient_team_id"):
                if not params.get(key):
                    raise ApiError(f"missing_{key}")
        display = params.get("task_display_mode", "timeline")
        if display not in _DISPLAY_MODES:
            raise ApiError("invalid_arguments", [f"task_display_mode must be one of {list(_DISPLAY_MODES)}"])
        markdown_text, chunks = _content(params)
        posted = self.state.post_message(channel=channel, params={"text": "", "thread_ts": thread_ts})
        message = self.state.stored_message(channel, posted["ts"])
        assert message is not None
        message["stream"] = new_stream(
            display=display,
            recipient_user_id=params.get("recipient_user_id"),
            recipient_team_id=params.get("recipient_team_id"),
        )
        apply(message, markdown_text=markdown_text, chunks=chunks)
        self._started[(channel, posted["ts"])] = time.monotonic()
        return {"channel": channel, "ts": posted["ts"]}

    def _append(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts, message = self._streaming(params)
        markdown_text, chunks = _content(params)
        if markdown_text is None and chunks is None:
            raise ApiError("invalid_arguments", ["markdown_text or chunks is required"])
        apply(message, markdown_text=markdown_text, chunks=chunks)
        return {"channel": channel, "ts": ts}

    def _stop(self, params: dict[str, Any]) -> dict[str, Any]:
        """End the stream; ``blocks`` go below the streamed content, ``metadata`` on the message."""
        channel, ts, message = self._streaming(params)
        markdown_text, chunks = _content(params)
        blocks = params.get("blocks")
        if blocks is not None:
            problem = check_message({"blocks": blocks}, require_content=False)
            if problem is not None:
                raise ApiError(*problem)
        metadata = params.get("metadata")
        if metadata is not None and (problem := check_metadata(metadata)) is not None:
            raise ApiError(*problem)
        apply(message, markdown_text=markdown_text, chunks=chunks)
        if blocks:
            message["blocks"] = [*message.get("blocks", []), *copy.deepcopy(blocks)]
        if metadata:
            message["metadata"] = copy.deepcopy(metadata)
        self._end(channel, ts, ended_by="stop")
        shown = {k: v for k, v in message.items() if k not in ("channel", "stream")}
        return {"channel": channel, "ts": ts, "message": copy.deepcopy(shown)}

    # -- plumbing --------------------------------------------------------------------------------

    def _check_enabled(self) -> None:
        if not self.enabled:
            raise ApiError("feature_not_enabled")

    def _streaming(self, params: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """The channel, ts and live message a stream call names, if it is still streaming."""
        self._check_enabled()
        channel = checked_channel(params)
        ts = params.get("ts")
        message = self.state.stored_message(channel, ts) if isinstance(ts, str) else None
        if message is None or "stream" not in message or message.get("bot_id") != self.state.bot_id:
            raise ApiError("message_not_found")
        assert isinstance(ts, str)
        self.expire()
        if (channel, ts) not in self._started:
            raise ApiError("message_not_in_streaming_state")
        return channel, ts, message

    def _end(self, channel: str, ts: str, *, ended_by: str) -> None:
        del self._started[(channel, ts)]
        message = self.state.stored_message(channel, ts)
        if message is not None:  # else deleted while streaming
            message["stream"] |= {"state": "stopped", "ended_by": ended_by}


def _content(params: dict[str, Any]) -> tuple[str | None, list[Any] | None]:
    """``markdown_text`` or ``chunks`` (one or the other), checked as Slack checks them."""
    markdown_text, chunks = params.get("markdown_text"), params.get("chunks")
    if markdown_text is not None and chunks is not None:
        raise ApiError("invalid_arguments", ["markdown_text and chunks cannot be used together"])
    if markdown_text is not None:
        if not isinstance(markdown_text, str):
            raise ApiError("invalid_arguments", ["markdown_text must be a string"])
        limit = LIMITS["stream.markdown_text"]
        if len(markdown_text) > limit:
            raise ApiError("msg_too_long", [f"markdown_text must be less than {limit + 1} characters"])
    if chunks is not None:
        errors = check_chunks(chunks)
        if errors:
            raise ApiError("invalid_chunks", errors)
        assert isinstance(chunks, list)
    return markdown_text, chunks
