"""What a person reads on a message the bot posted, as plain text, and which messages are which.

The words come from the demo's renderer (``demo.terminal``), which draws the bot's real
Block Kit the way Slack shows it: headers, fields as ``name: value``, JSON as an outline,
mentions and emoji resolved. A test reads mentions as ids (``@U0ALICE``, ``@S0OPS``), the
way its graph and policy name people, not as display names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from bot.publisher import ANNOUNCEMENT
from engine.ports import FINAL

_SUBTEAM = re.compile(r"<!subteam\^(S[A-Z0-9]+)>")


def what(message: Mapping[str, Any]) -> tuple[str, str]:
    """``(run_id, what)`` from the metadata the bot stamps on its messages; empty when not the bot's."""
    payload = (message.get("metadata") or {}).get("event_payload") or {}
    return str(payload.get("run_id") or ""), str(payload.get("what") or "")


def card_key(message: Mapping[str, Any]) -> str | None:
    """The ask key of an approval card (its header's block id is ``card:<key>``), else None."""
    for block in message.get("blocks") or []:
        block_id = str(block.get("block_id") or "")
        if block_id.startswith("card:"):
            return block_id.removeprefix("card:")
    return None


def is_announcement(message: Mapping[str, Any], run_id: str) -> bool:
    return what(message) == (run_id, ANNOUNCEMENT)


def is_final(message: Mapping[str, Any], run_id: str) -> bool:
    return what(message) == (run_id, FINAL)


def buttons(message: Mapping[str, Any]) -> list[str]:
    """The labels a person can still click, in order."""
    from demo.terminal import buttons_of

    return buttons_of(message)


def plain_text(message: Mapping[str, Any]) -> str:
    """Everything the message shows a person but its buttons, as lines of plain text."""
    from demo.terminal import message_lines

    shown = json.loads(_SUBTEAM.sub(r"<!subteam^\1|@\1>", json.dumps(message)))
    shown["blocks"] = [b for b in shown.get("blocks") or [] if b.get("type") != "actions"]
    lines = message_lines(shown, user_name=lambda some_id: some_id)
    return "\n".join("".join(run.text for run in line).rstrip() for line in lines).strip("\n")


def title(message: Mapping[str, Any]) -> str:
    """The card's first line: its header, as Slack shows it."""
    return plain_text(message).split("\n", 1)[0]
