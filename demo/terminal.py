"""Slack messages as terminal boxes, for the offline demo.

It renders what the local Slack actually received (the bot's real Block Kit), so the
demo shows what a workspace would show: headers in bold (not shouted), fields as
``name: value`` lines, buttons as ``[Approve]``. JSON, which cards use for tool inputs
and structured reasons, is shown as an outline (``key: value``, lists as ``- item``,
tool calls as ``tool(arg=value)``) so that a multi-line string reads as lines rather
than one line of ``\\n``. A streamed message (a run's status while its first pass runs)
shows its plan and tasks. Everything is wrapped to the terminal's width.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from demo.mrkdwn import Line, Run, cols, inline, paint, printable, resolve, wrap

UserName = Callable[[str], str]
_FENCE = re.compile(r"```\n?(.*?)\n?```", re.DOTALL)
_QUOTE = re.compile(r"^(?:>|&gt;) ?")
_MIN_WIDTH = 24
# A streamed task's state (Slack's pending, in_progress, complete, error), as localslack writes it.
TASK_ICONS = {"pending": "○", "in_progress": "◐", "complete": "✓", "error": "✗"}
_TASK_STYLES = {"complete": "primary", "error": "danger", "pending": "dim"}


def render_message(
    message: Mapping[str, Any], *, label: str, user_name: UserName, width: int = 79, color: bool = False
) -> str:
    """The message as a box of at most ``width`` columns, headed by ``label``."""
    return box(message_lines(message, user_name=user_name), label=label, width=width, color=color)


def message_lines(message: Mapping[str, Any], *, user_name: UserName) -> list[Line]:
    """What a message shows, unwrapped: a stream's plan and tasks, its blocks, else its text.

    A streamed message edited since (``chat.update``) shows what the edit gave it: the local
    Slack keeps the stream's record on the message, but Slack shows the new content.
    """
    stream = message.get("stream") if "edited" not in message else None
    lines: list[Line] = stream_lines(stream, user_name=user_name) if isinstance(stream, Mapping) else []
    for block in message.get("blocks") or []:
        lines.extend(block_lines(block, user_name=user_name))
    if not lines:
        lines = text_lines(str(message.get("text") or ""), user_name=user_name)
    return lines


def stream_lines(stream: Mapping[str, Any], *, user_name: UserName) -> list[Line]:
    """A streamed message (``chat.startStream``) as Slack draws it: the plan's title, one line per
    task with its state (``○ ◐ ✓ ✗``, as the local Slack's text has them), then its markdown.

    Task titles are plain text in Slack, so they are shown as they are, not read as mrkdwn.
    """
    lines: list[Line] = [[Run(str(stream["plan"]), frozenset({"bold"}))]] if stream.get("plan") else []
    tasks = stream.get("tasks")
    for task in tasks.values() if isinstance(tasks, Mapping) else ():
        status = str(task.get("status") or "")
        icon = Run(TASK_ICONS.get(status, "?") + " ", frozenset({_TASK_STYLES.get(status, "")} - {""}))
        lines.append([icon, Run(str(task.get("title") or ""))])
        for extra in ("details", "output"):
            if task.get(extra):
                lines.extend(_indented(text_lines(str(task[extra]), user_name=user_name), "  "))
    if stream.get("markdown"):
        lines.extend(text_lines(str(stream["markdown"]), user_name=user_name))
    return lines


def box(lines: list[Line], *, label: str, width: int, color: bool) -> str:
    """``┌─ label ───`` / ``│ line`` / ``└───``, as wide as the content needs, at most ``width``."""
    width, label = max(_MIN_WIDTH, width), printable(label)
    safe = [[Run(printable(run.text), run.style) for run in line] for line in lines]  # graph output
    wrapped = [part for line in safe for part in wrap(line, width - 2)]
    inner = max([cols(label) + 3, *(cols("".join(r.text for r in line)) for line in wrapped)])
    size = min(width, inner + 2)
    title = paint([Run(label, frozenset({"bold"}))], color=color)
    head = f"┌─ {title} " + "─" * max(0, size - cols(label) - 4)
    body = [("│ " + paint(line, color=color)).rstrip() for line in wrapped]
    return "\n".join([head, *body, "└" + "─" * (size - 1)])


def block_lines(block: Mapping[str, Any], *, user_name: UserName) -> list[Line]:
    """One Block Kit block as unwrapped terminal lines."""
    kind = block.get("type")
    text = _text_of(block.get("text"))
    if kind == "header":  # plain text, shown in bold as Slack does (never upper-cased)
        return [[Run(html.unescape(resolve(text, user_name=lambda u: u)), frozenset({"bold"}))]]
    if kind == "section":
        lines = text_lines(text, user_name=user_name) if text else []
        for field in block.get("fields") or []:
            lines.extend(field_lines(_text_of(field), user_name=user_name))
        accessory = block.get("accessory") or {}
        if accessory.get("type") == "button":
            lines.append(_buttons([accessory]))
        return lines
    if kind == "context":
        parts = [inline(_text_of(e), user_name=user_name) for e in block.get("elements") or [] if _text_of(e)]
        joined: Line = []
        for index, part in enumerate(parts):
            joined.extend(([Run("  ·  ")] if index else []) + part)
        return [[Run(r.text, r.style | {"dim"}) for r in joined]]
    if kind == "actions":
        return [_buttons(list(block.get("elements") or []))]
    if kind == "divider":
        return [[Run("─" * 20, frozenset({"dim"}))]]
    if kind == "image":
        return [[Run(f"[image: {block.get('alt_text') or block.get('image_url', '')}]", frozenset({"dim"}))]]
    if kind == "table":  # two columns as the bot sends them: the first in bold
        rows = [[str(c.get("text") or "") for c in row if isinstance(c, Mapping)] for row in block.get("rows") or []]
        return [[Run(cells[0], frozenset({"bold"})), Run("  " + "  ".join(cells[1:]))] for cells in rows if cells]
    if kind == "rich_text":
        return rich_text_lines(block)
    return [[Run(f"({kind} block)", frozenset({"dim"}))]]


def rich_text_lines(block: Mapping[str, Any]) -> list[Line]:
    """A rich_text block's sections as lines, each text element in its own style."""
    lines: list[Line] = [[]]
    for section in block.get("elements") or []:
        for element in section.get("elements") or [] if isinstance(section, Mapping) else ():
            style = frozenset(k for k, on in (element.get("style") or {}).items() if on)
            for index, piece in enumerate(str(element.get("text") or "").split("\n")):
                if index:
                    lines.append([])
                if piece:
                    lines[-1].append(Run(piece, style))
    return [line for line in lines if line]


def text_lines(text: str, *, user_name: UserName) -> list[Line]:
    """A mrkdwn text: code blocks (JSON as an outline), quotes and styled lines."""
    lines: list[Line] = []
    at = 0
    for fence in _FENCE.finditer(text):
        lines.extend(_prose(text[at : fence.start()], user_name))
        lines.extend(_code(html.unescape(fence.group(1))))
        at = fence.end()
    lines.extend(_prose(text[at:], user_name))
    return lines


def field_lines(text: str, *, user_name: UserName) -> list[Line]:
    """A section field, ``*name*\\nvalue`` in Slack, as ``name: value``."""
    name, newline, value = text.partition("\n")
    if not newline:
        return _prose(text, user_name)
    head = inline(name, user_name=user_name)
    data = _json(html.unescape(value))
    if data is not None:
        return [[*head, Run(":")], *_indented(outline(data), "  ")]
    rest = _prose(value, user_name)
    if len(rest) == 1:
        return [[*head, Run(": "), *rest[0]]]
    return [[*head, Run(":")], *_indented(rest, "  ")]


def _prose(text: str, user_name: UserName) -> list[Line]:
    text = text.strip("\n")
    if not text:
        return []
    lines: list[Line] = []
    for raw in text.split("\n"):
        if _QUOTE.match(raw):
            lines.append([Run("▎ ", frozenset({"dim"})), *inline(_QUOTE.sub("", raw), user_name=user_name)])
            continue
        start = min((i for i in (raw.find("{"), raw.find("[")) if i >= 0), default=-1)
        data = _json(html.unescape(raw[start:])) if start >= 0 else None
        if data is not None:  # "Input: {...}" on one line reads better as an outline
            head = inline(raw[:start].rstrip(), user_name=user_name)
            lines.extend([head, *_indented(outline(data), "  ")] if head else outline(data))
        else:
            lines.append(inline(raw, user_name=user_name))
    return lines


def _code(body: str) -> list[Line]:
    data = _json(body)
    if data is not None:
        return _indented(outline(data), "  ")
    return [[Run("  "), Run(line, frozenset({"code"}))] for line in body.split("\n")]


def _json(text: str) -> Any:
    """The parsed object or list, or None: scalars and plain text stay text."""
    text = text.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict | list) and data else None


def outline(data: Any) -> list[Line]:
    """JSON as readable lines: ``key: value``, ``- item``, ``tool(arg=value)``, real line breaks."""
    if isinstance(data, dict) and not _call(data):
        lines: list[Line] = []
        for key, value in data.items():
            name = Run(str(key), frozenset({"bold"}))
            if _inline(value):
                lines.append([name, Run(": " + _scalar(value))])
            else:
                lines.append([name, Run(":")])
                lines.extend(_indented(outline(value), "  "))
        return lines
    if isinstance(data, list):
        lines = []
        for item in data:
            if _inline(item):
                lines.append([Run("- " + _scalar(item))])
            else:
                first, *rest = outline(item) or [[Run("")]]
                lines.append([Run("- "), *first])
                lines.extend(_indented(rest, "  "))
        return lines
    if isinstance(data, str):
        return [[Run(line)] for line in data.split("\n")]
    return [[Run(_scalar(data))]]


def _call(data: Mapping[str, Any]) -> bool:
    """``{"tool": name, "input": {...}}``: one tool call, shown as ``name(arg=value)``."""
    return set(data) == {"tool", "input"} and isinstance(data["tool"], str) and isinstance(data["input"], dict)


def _inline(value: Any) -> bool:
    if isinstance(value, str):
        return "\n" not in value
    if isinstance(value, dict):
        return not value or _call(value)
    return not isinstance(value, list) or not value


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and _call(value):
        args = ", ".join(f"{k}={_scalar(v)}" for k, v in value["input"].items())
        return f"{value['tool']}({args})"
    return json.dumps(value, ensure_ascii=False)


def _indented(lines: list[Line], pad: str) -> list[Line]:
    return [[Run(pad), *line] for line in lines]


def _text_of(element: Any) -> str:
    return str(element.get("text") or "") if isinstance(element, Mapping) else ""


def _buttons(elements: list[Mapping[str, Any]]) -> Line:
    line: Line = []
    for element in elements:
        if element.get("type") != "button":
            continue
        style = {"primary": "primary", "danger": "danger"}.get(str(element.get("style")), "")
        line.extend(
            [Run(" ") if line else Run(""), Run(f"[{_text_of(element.get('text'))}]", frozenset({style} - {""}))]
        )
    return line


def buttons_of(message: Mapping[str, Any]) -> list[str]:
    """The labels of the message's buttons, in order: what a person can still click."""
    return [
        str((element.get("text") or {}).get("text"))
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements") or []
    ]
