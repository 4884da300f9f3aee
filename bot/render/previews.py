"""A card's "What will happen" (``engine.previews``), in the Block Kit that reads best.

* A flat dict is a table: Slack's ``table`` block, two columns. A workspace that does not
  know that block yet refuses the message (``invalid_blocks``); the same rows then go as
  section fields, which every workspace shows (``Rendered.plain_blocks``, used by
  ``bot.publisher``).
* A unified diff (``---``/``+++``/``@@`` lines, or ``+`` and ``-`` lines) is a ``rich_text``
  block, one line per diff line in code style, added lines in bold and removed ones struck
  through: a person sees the change at a glance, not a wall of JSON.
* Other text keeps its line breaks, escaped like every foreign text on a card.

Everything here is what the graph's preview said: a mention in it shows as text and pings
nobody (escaped mrkdwn; ``raw_text`` cells and rich text elements are never parsed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sdk.models.blocks import Block, MarkdownTextObject, RichTextBlock, SectionBlock, TableBlock

from bot.render.mrkdwn import FIELD_TEXT_LIMIT, MAX_FIELDS, SECTION_TEXT_LIMIT, cut, short, visible

HEADING = "*What will happen*"
MAX_DIFF_LINES = 60
_CELL_LIMIT = 2000  # characters per table cell
_KEY_LIMIT = 100


def preview_blocks(preview: str | Mapping[str, str] | None, *, tables: bool = True) -> list[Block]:
    """The "What will happen" blocks of a card; ``tables=False`` for workspaces without tables."""
    if preview is None:
        return []
    if isinstance(preview, Mapping):
        return _table(preview) if tables else _fields(preview)
    if is_diff(preview):
        return [SectionBlock(text=MarkdownTextObject(text=HEADING)), _diff(preview)]
    body = cut(preview, SECTION_TEXT_LIMIT - len(HEADING) - 1)
    return [SectionBlock(text=MarkdownTextObject(text=f"{HEADING}\n{body}"))]


def has_table(preview: Any) -> bool:
    """Whether the card's preview uses the ``table`` block (so a plain variant is needed)."""
    return isinstance(preview, Mapping) and bool(preview)


def is_diff(text: str) -> bool:
    """Whether ``text`` reads as a unified diff: its headers, or ``+`` and ``-`` lines (and context)."""
    lines = [line for line in text.splitlines() if line]
    if any(line.startswith(("--- ", "+++ ", "@@ ")) for line in lines):
        return True
    # Both kinds of change, and nothing but diff lines: a bulleted list ("- a") is not a diff.
    kinds = {line[0] for line in lines}
    return {"+", "-"} <= kinds and kinds <= {"+", "-", " "}


def _table(preview: Mapping[str, str]) -> list[Block]:
    if not preview:
        return []
    rows = [[_cell(key), _cell(value)] for key, value in preview.items()]
    table = TableBlock(rows=rows, column_settings=[{"is_wrapped": True}, {"is_wrapped": True}])
    return [SectionBlock(text=MarkdownTextObject(text=HEADING)), table]


def _cell(text: str) -> dict[str, Any]:
    shown = visible(text)
    return {"type": "raw_text", "text": shown if len(shown) <= _CELL_LIMIT else shown[: _CELL_LIMIT - 1] + "…"}


def _fields(preview: Mapping[str, str]) -> list[Block]:
    """The rows as section fields, ``MAX_FIELDS`` per section: key in bold, value below."""
    items = list(preview.items())
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=HEADING))]
    for start in range(0, len(items), MAX_FIELDS):
        fields = [
            MarkdownTextObject(text=f"*{short(key, _KEY_LIMIT)}*\n{cut(value, FIELD_TEXT_LIMIT - 2 * _KEY_LIMIT)}")
            for key, value in items[start : start + MAX_FIELDS]
        ]
        blocks.append(SectionBlock(fields=fields))
    return blocks


def _diff(text: str) -> RichTextBlock:
    lines = text.splitlines()
    shown = lines[:MAX_DIFF_LINES]
    elements: list[dict[str, Any]] = []
    for line in shown:
        style: dict[str, bool] = {"code": True}
        if line.startswith("+") and not line.startswith("+++ "):
            style["bold"] = True
        elif line.startswith("-") and not line.startswith("--- "):
            style["strike"] = True
        elements.append({"type": "text", "text": visible(line) or " ", "style": style})
        elements.append({"type": "text", "text": "\n"})
    if len(lines) > MAX_DIFF_LINES:
        elements.append(
            {"type": "text", "text": f"… and {len(lines) - MAX_DIFF_LINES} more lines", "style": {"italic": True}}
        )
    else:
        elements.pop()  # no line break after the last line
    return RichTextBlock(elements=[{"type": "rich_text_section", "elements": elements}])
