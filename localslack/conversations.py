"""The ``conversations.*`` reads: info, history (the channel) and replies (one thread).

A bot that reads back its own messages (to find the card of a run, or the metadata it stamped
on it) must page the way Slack pages: a cursor in ``response_metadata.next_cursor`` that is
empty on the last page, ``has_more``, and ``metadata`` only when ``include_all_metadata`` asks.
Cursors are ``next_ts:<ts>`` in base64, like Slack's, so a message deleted between two pages
does not shift the next page.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from localslack.state import ApiError, SlackState, shown_in_channel

# Slack's defaults: replies up to 1000 per page, history 100; neither gives more than 1000.
REPLIES_LIMIT: Final = 1000
HISTORY_LIMIT: Final = 100
MAX_LIMIT: Final = 1000
_CURSOR_PREFIX: Final = "next_ts:"


class ConversationsApi(SlackState):
    """The handlers; ``WebApi`` registers them by method name."""

    def _conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        channel_id = checked_channel(params)
        kind = {"C": "is_channel", "G": "is_group", "D": "is_im"}[channel_id[0]]
        channel = {"id": channel_id, "name": self.channel_name(channel_id), kind: True, "is_member": True}
        return {"channel": channel}

    def channel_name(self, channel_id: str) -> str:
        raise NotImplementedError  # WebApi knows the names

    def _conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """The thread ``ts`` belongs to (it may name the parent or any reply), oldest first.

        The parent leads the first page whatever ``oldest``/``latest`` say; the window only
        narrows the replies. A ts that is not a message in the channel is ``thread_not_found``.
        """
        channel = checked_channel(params)
        ts = params.get("ts")
        if not isinstance(ts, str) or not ts:
            raise ApiError("invalid_arguments", ["missing required field: ts"])
        everything = self.messages(channel)
        found = next((m for m in everything if m["ts"] == ts), None)
        if found is None:
            raise ApiError("thread_not_found")
        root = found.get("thread_ts") or ts
        in_window = _window(params)
        parent = [m for m in everything if m["ts"] == root]
        replies = [m for m in everything if m.get("thread_ts") == root and m["ts"] != root and in_window(m["ts"])]
        return _page(parent + replies, params, default_limit=REPLIES_LIMIT, newest_first=False)

    def _conversations_history(self, params: dict[str, Any]) -> dict[str, Any]:
        """The channel's top-level messages (and broadcast replies), newest first."""
        channel = checked_channel(params)
        in_window = _window(params)
        shown = [m for m in self.messages(channel) if shown_in_channel(m) and in_window(m["ts"])]
        return _page(shown[::-1], params, default_limit=HISTORY_LIMIT, newest_first=True)


def checked_channel(params: dict[str, Any]) -> str:
    """The ``channel`` argument, if it looks like a conversation id (every such channel exists here)."""
    channel = params.get("channel")
    if not isinstance(channel, str) or not channel.startswith(("C", "G", "D")):
        raise ApiError("channel_not_found")
    return channel


def _page(
    listing: list[dict[str, Any]], params: dict[str, Any], *, default_limit: int, newest_first: bool
) -> dict[str, Any]:
    limit = page_limit(params.get("limit"), default=default_limit)
    start = 0
    cursor = params.get("cursor")
    if cursor:
        after = _cursor_ts(cursor)
        start = next(
            (i for i, m in enumerate(listing) if (_ts(m["ts"]) <= after if newest_first else _ts(m["ts"]) >= after)),
            len(listing),
        )
    page = listing[start : start + limit]
    rest = listing[start + limit :]
    keep_metadata = bool(params.get("include_all_metadata"))
    next_cursor = _encode_cursor(rest[0]["ts"]) if rest else ""
    return {
        "messages": [_presented(m, keep_metadata=keep_metadata) for m in page],
        "has_more": bool(rest),
        "response_metadata": {"next_cursor": next_cursor},
    }


def _presented(message: dict[str, Any], *, keep_metadata: bool) -> dict[str, Any]:
    """A message as the conversations methods show it: no ``channel``, metadata only on request.

    ``stream`` is this local Slack's record of a streamed message for tests; Slack shows none.
    """
    shown = {k: v for k, v in message.items() if k not in ("channel", "stream")}
    if not keep_metadata:
        shown.pop("metadata", None)
    return shown


def _window(params: dict[str, Any]) -> Callable[[str], bool]:
    """``oldest``/``latest`` bounds, exclusive unless ``inclusive`` (Slack's rule)."""
    oldest = _bound(params.get("oldest"), "invalid_ts_oldest")
    latest = _bound(params.get("latest"), "invalid_ts_latest")
    inclusive = bool(params.get("inclusive"))

    def inside(ts: str) -> bool:
        value = _ts(ts)
        above = oldest is None or value > oldest or (inclusive and value == oldest)
        below = latest is None or value < latest or (inclusive and value == latest)
        return above and below

    return inside


def _bound(value: Any, error: str) -> Decimal | None:
    if value in (None, ""):
        return None
    try:
        return _ts(str(value))
    except (InvalidOperation, ValueError):
        raise ApiError(error) from None


def _ts(ts: str) -> Decimal:
    value = Decimal(ts)
    if not value.is_finite() or value < 0:
        raise ValueError(ts)
    return value


def page_limit(value: Any, *, default: int) -> int:
    """The ``limit`` argument: ``default`` when absent or below 1, never above Slack's 1000."""
    if value in (None, ""):
        return default
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise ApiError("invalid_arguments", ["limit must be a number"]) from None
    return default if limit < 1 else min(limit, MAX_LIMIT)


def _encode_cursor(ts: str) -> str:
    return base64.b64encode(f"{_CURSOR_PREFIX}{ts}".encode()).decode()


def _cursor_ts(cursor: Any) -> Decimal:
    try:
        decoded = base64.b64decode(str(cursor), validate=True).decode()
        if not decoded.startswith(_CURSOR_PREFIX):
            raise ValueError(decoded)
        return _ts(decoded.removeprefix(_CURSOR_PREFIX))
    except (binascii.Error, UnicodeDecodeError, InvalidOperation, ValueError):
        raise ApiError("invalid_cursor") from None
