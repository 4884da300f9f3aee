"""Slack messages as terminal text, for the offline demo.

It renders what the local Slack actually received (the bot's real Block Kit), so the
demo shows exactly what a workspace would show, minus the styling.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
from typing import Any

_MENTION = re.compile(r"<@([A-Z0-9]+)>")
_DATE = re.compile(r"<!date\^\d+\^[^|]*\|([^>]*)>")
_LINK = re.compile(r"<([^|>]+)\|([^>]+)>")


def plain(text: str, *, user_name: Callable[[str], str]) -> str:
    """Slack mrkdwn to readable terminal text: mentions, dates and links resolved, entities unescaped."""
    text = _MENTION.sub(lambda m: "@" + user_name(m.group(1)), text)
    text = _DATE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})", text)
    return html.unescape(text)


def render_message(message: Mapping[str, Any], *, label: str, user_name: Callable[[str], str]) -> str:
    lines: list[str] = []
    for block in message.get("blocks") or []:
        lines.extend(_block_lines(block, user_name=user_name))
    if not lines:
        lines = [plain(str(message.get("text") or ""), user_name=user_name)]
    width = max(20, min(100, max(len(line) for line in lines)))
    head = f"┌─ {label} " + "─" * max(0, width - len(label) - 2)
    body = [f"│ {line}" for chunk in lines for line in chunk.splitlines() or [""]]
    return "\n".join([head, *body, "└" + "─" * (width + 1)])


def _block_lines(block: Mapping[str, Any], *, user_name: Callable[[str], str]) -> list[str]:
    kind = block.get("type")
    text = (block.get("text") or {}).get("text", "") if isinstance(block.get("text"), dict) else ""
    if kind == "header":
        return [plain(text, user_name=user_name).upper()]
    if kind == "section":
        lines = [plain(text, user_name=user_name)] if text else []
        for field in block.get("fields") or []:
            lines.append("  " + plain(str(field.get("text", "")), user_name=user_name).replace("\n", ": ", 1))
        return lines
    if kind == "context":
        parts = [plain(str(e.get("text", "")), user_name=user_name) for e in block.get("elements") or []]
        return ["  " + "  ·  ".join(p for p in parts if p)]
    if kind == "actions":
        buttons = [f"[{(e.get('text') or {}).get('text', '?')}]" for e in block.get("elements") or []]
        return [" ".join(buttons)]
    if kind == "divider":
        return ["-" * 20]
    return [f"({kind} block)"]


def buttons_of(message: Mapping[str, Any]) -> list[str]:
    return [
        str((element.get("text") or {}).get("text"))
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements") or []
    ]
