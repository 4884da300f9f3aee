"""Reasons and tool inputs as people read them, in Block Kit.

Graphs hand the bot whatever they like as an interrupt's reason, and tools take
whatever input the model proposed. Dumped as indented JSON, a three-line log excerpt
becomes one string with literal ``\\n`` and three restarts take 24 lines. So each kind
of value gets the shape that reads best:

* short scalars (a flat dict's values) as section fields, side by side;
* multi-line or long text with its real line breaks, in a code block when it looks like
  a log (timestamps, levels, indentation), where alignment matters;
* a list of tool calls (a batch) as one line per call: the tool and its arguments;
* other nested data as compact JSON in a code block, cut to a size.

Everything stays within Slack's limits (10 fields of at most 2000 characters, 3000 per
section) and within a total budget, so a card never outgrows a message. Reasons and tool
inputs alike are fully escaped: a reason may repeat a task or a reply word for word, so
a mention in it shows as text and pings nobody.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from slack_sdk.models.blocks import Block, MarkdownTextObject, SectionBlock

from bot.render.mrkdwn import (
    FIELD_TEXT_LIMIT,
    MAX_FIELDS,
    SECTION_TEXT_LIMIT,
    code_block,
    cut,
    escape,
    fit,
    inline_code,
    short,
    to_json,
)

REASON_BUDGET = 6000
"""The most a reason takes on a card; the card's other parts have their own budgets."""

_SCALARS = (str, int, float, bool, type(None))
_SHORT_TEXT = 200  # longer text, or text with line breaks, gets a section of its own
_FIELDS_SHARE = 2000
_MAX_SECTIONS = 5  # long values shown in full; any more are summarised with the extra keys
_EXTRA_LIMIT = 800
_MAX_CALLS = 20
_CALL_LINE = 200
_LOG_LINE = re.compile(
    r"^\s*(?:\[?\d{1,4}[-/:.T]\d|\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL)\b"
    r"|\s{2,}\S|\t|at \S|File \"|Traceback\b|\$ )",
    re.IGNORECASE,
)


def value_blocks(value: Any, *, budget: int = REASON_BUDGET, label: str | None = None) -> list[Block]:
    """``value`` as readable blocks within ``budget`` characters of text (see the module doc)."""
    if value is None or value == {} or value == [] or value == "":
        return [_section("_(no details)_")]
    if isinstance(value, str):
        return [_section(text_section(value, label=label, limit=min(budget, SECTION_TEXT_LIMIT)))]
    if isinstance(value, Mapping):
        return dict_blocks(value, budget=budget)
    if isinstance(value, Sequence) and tool_calls(value) is not None:
        return [_section(calls_text(value, label=label, limit=min(budget, SECTION_TEXT_LIMIT)))]
    if isinstance(value, list | tuple):
        return [_section(_json_section(value, label=label, limit=min(budget, SECTION_TEXT_LIMIT)))]
    return [_section(text_section(str(value), label=label, limit=min(budget, SECTION_TEXT_LIMIT)))]


def dict_blocks(data: Mapping[Any, Any], *, budget: int = REASON_BUDGET) -> list[Block]:
    """A dict: short values as fields, long and nested ones in sections of their own, in order."""
    items = [(str(k), v) for k, v in data.items()]
    short_items = [(k, v) for k, v in items if _is_short(v)]
    long_items = [(k, v) for k, v in items if not _is_short(v)]
    fields, extra = short_items[:MAX_FIELDS], short_items[MAX_FIELDS:]
    sections, extra = long_items[:_MAX_SECTIONS], extra + long_items[_MAX_SECTIONS:]
    extra_room = min(_EXTRA_LIMIT, budget // 4) if extra else 0
    fields_room = (min(_FIELDS_SHARE, budget // 3) if sections else budget - extra_room) if fields else 0
    blocks: list[Block] = []
    if fields:
        per_field = min(FIELD_TEXT_LIMIT, max(60, fields_room // len(fields)))
        blocks.append(SectionBlock(fields=[_field(k, v, limit=per_field) for k, v in fields]))
    if sections:
        per_section = min(SECTION_TEXT_LIMIT, max(200, (budget - fields_room - extra_room) // len(sections)))
        blocks += [_section(_long_value(k, v, limit=per_section)) for k, v in sections]
    if extra:
        blocks.append(_section(_extra_text(extra, limit=max(200, extra_room))))
    return blocks


def text_section(text: str, *, label: str | None, limit: int) -> str:
    """Text with its line breaks; a code block when it looks like a log."""
    head = f"*{cut(label, 100)}*\n" if label else ""
    if looks_like_log(text):
        return head + code_block(text, limit - len(head))
    return head + cut(text, limit - len(head))


def looks_like_log(text: str) -> bool:
    """Several lines, most of them shaped like log or program output (times, levels, indents)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    return sum(1 for line in lines if _LOG_LINE.match(line)) * 2 >= len(lines)


def tool_calls(value: Sequence[Any]) -> list[tuple[str, Mapping[str, Any]]] | None:
    """``value`` as (tool, input) pairs if it is a list of tool calls, else None.

    Accepts ``{"tool": name, "input": {...}}`` (what a batch gate usually builds) and
    Strands' own ``{"name": name, "input": {...}}`` (a ``toolUse``).
    """
    if isinstance(value, str) or not value:
        return None
    calls: list[tuple[str, Mapping[str, Any]]] = []
    for item in value:
        if not isinstance(item, Mapping):
            return None
        name = item.get("tool", item.get("name"))
        given = item.get("input", {})
        if not isinstance(name, str) or not isinstance(given, Mapping):
            return None
        calls.append((name, given))
    return calls


def calls_text(value: Sequence[Any], *, label: str | None, limit: int) -> str:
    """One line per call: ``• `tool` key: value, key: value``; whole lines only, then a count."""
    calls = tool_calls(value) or []
    text = f"*{cut(label, 100)}* ({len(calls)}):" if label else f"*{len(calls)} tool calls:*"
    shown = 0
    for name, given in calls[:_MAX_CALLS]:
        line = f"• {_code(name, 80)} {call_arguments(given)}".rstrip()
        if len(text) + 1 + len(line) > limit - 40:
            break
        text, shown = f"{text}\n{line}", shown + 1
    if shown < len(calls):
        text += f"\n…and {len(calls) - shown} more"
    return text


def call_arguments(given: Mapping[str, Any]) -> str:
    """A call's arguments on one line (``host: eu-api-1, force: true``), escaped and cut."""
    parts = []
    for key, value in given.items():
        shown = value if isinstance(value, str) else to_json(value, indent=None)
        parts.append(f"{key}: {shown}")
    return short(", ".join(parts), _CALL_LINE)


def _is_short(value: Any) -> bool:
    if isinstance(value, str):
        return "\n" not in value and len(value) <= _SHORT_TEXT
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, list | tuple) and all(isinstance(v, _SCALARS) for v in value):
        return len(to_json(value, indent=None)) <= _SHORT_TEXT  # a short list of names or numbers
    return False


def _field(key: str, value: Any, *, limit: int) -> MarkdownTextObject:
    text = value if isinstance(value, str) else to_json(value, indent=None)
    rendered = f"*{cut(key, 100)}*\n{escape(text)}"
    return MarkdownTextObject(text=fit(rendered, limit, total=len(text)))


def _long_value(key: str, value: Any, *, limit: int) -> str:
    if isinstance(value, str):
        return text_section(value, label=key, limit=limit)
    if isinstance(value, list | tuple) and tool_calls(value) is not None:
        return calls_text(value, label=key, limit=limit)
    return _json_section(value, label=key, limit=limit)


def _json_section(value: Any, *, label: str | None, limit: int) -> str:
    head = f"*{cut(label, 100)}*\n" if label else ""
    return head + code_block(to_json(value, indent=None), limit - len(head))


def _extra_text(extra: list[tuple[str, Any]], *, limit: int) -> str:
    # Name every extra key first, so a cut in the JSON below never hides which keys exist.
    names = ", ".join(inline_code(k, 60) for k, _ in extra)
    summary = fit(f"*+{len(extra)} more:* {names}", limit // 2, total=len(names))
    rest = code_block(to_json(dict(extra), indent=None), limit - len(summary) - 1)
    return f"{summary}\n{rest}"


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text))


def _code(raw: str, limit: int) -> str:
    """One line of inline code; a backtick would end the span early."""
    return "`" + short(raw.replace("`", "'"), limit) + "`"
