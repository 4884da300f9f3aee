"""Shared checks for rendered Slack payloads.

The limits are written out here on purpose rather than imported from ``bot.render``:
a test that reads the limit from the code under test cannot notice the limit is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from bot.render import Rendered

# Slack parses <...> as mentions, links and broadcasts; the only ones the bot emits are
# user mentions, user-group mentions (approvers it names) and localized dates.
# Anything else came from foreign text and must have been escaped.
ALLOWED_ANGLE = re.compile(
    r"<(@[A-Z][A-Z0-9]+|!subteam\^S[A-Z0-9]+(\|@[A-Za-z0-9._-]+)?"
    r"|!date\^\d+\^\{date_short_pretty\} at \{time\}\|[^<>|]+)>"
)
TOTAL_TEXT_BUDGET = 12_000  # Slack's observed cumulative limit (msg_blocks_too_long)


def texts(node: Any) -> Iterator[dict[str, Any]]:
    """Every text object (dicts with a "type" of mrkdwn or plain_text) in a payload."""
    if isinstance(node, dict):
        if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
            yield node
        for value in node.values():
            yield from texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from texts(item)


def assert_harmless(mrkdwn: str) -> None:
    """No angle-bracket markup except the bot's own mentions and dates."""
    stripped = ALLOWED_ANGLE.sub("", mrkdwn)
    assert "<" not in stripped and ">" not in stripped.replace("\n> ", "\n").removeprefix("> "), mrkdwn


def assert_within_limits(rendered: Rendered) -> None:
    """The message limits Slack enforces (and the ones slack_sdk does not check)."""
    assert isinstance(rendered.text, str) and 0 < len(rendered.text) <= 3000
    assert_harmless(rendered.text)
    assert 0 < len(rendered.blocks) <= 50
    total = 0
    for block in rendered.blocks:
        if block["type"] == "section":
            if "text" in block:
                assert len(block["text"]["text"]) <= 3000
            fields = block.get("fields", [])
            assert len(fields) <= 10
            assert all(len(f["text"]) <= 2000 for f in fields)
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= 150
        if block["type"] == "context":
            assert len(block["elements"]) <= 10
        if block["type"] == "actions":
            for element in block["elements"]:
                assert len(element.get("value", "")) <= 2000
                assert len(element["action_id"]) <= 255
                assert len(element["text"]["text"]) <= 75
        for text in texts(block):
            total += len(text["text"])
            if text["type"] == "mrkdwn":
                assert_harmless(text["text"])
    assert total <= TOTAL_TEXT_BUDGET


def all_text(rendered: Rendered) -> str:
    """All visible text of the blocks, for content assertions."""
    return "\n".join(t["text"] for t in texts(rendered.blocks))
