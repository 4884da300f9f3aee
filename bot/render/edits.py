"""What a gated tool call looks like on a card, and what an Edit changed in it.

A ``BeforeToolCallEvent`` gate asks about one concrete call, so its card shows the tool
and the input the agent proposed. Once someone approves it with edits, the card says
what changed (keys added, removed and changed, old → new) rather than repeating the
whole new input: the reviewer of the thread wants the difference, and the difference
is usually a line or two where the input may be a page.

Everything here is foreign text (tool names, inputs, edits typed by people), so it is
escaped and cut like every other card text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from slack_sdk.models.blocks import Block, MarkdownTextObject, SectionBlock

from bot.render.mrkdwn import short, to_json
from bot.render.values import value_blocks
from engine.records import ToolCall

TOOL_LIMIT = 2000  # the tool sections of a card; the card's other parts have their own budgets
DIFF_LIMIT = 1500
MAX_CHANGES = 15
_VALUE_LIMIT = 120
_NAME_LIMIT = 80
_MORE_ROOM = 40  # the "…and N more" line


@dataclass(frozen=True, kw_only=True)
class Change:
    """One difference between the proposed and the edited input, at a dotted key path."""

    path: str
    kind: Literal["added", "removed", "changed"]
    old: Any = None
    new: Any = None


def json_schema_of(tool: ToolCall) -> dict[str, Any] | None:
    """The JSON Schema of the tool's input, unwrapped from Strands' ``{"json": {...}}``.

    Strands tool specs carry ``inputSchema = {"json": schema}``; whoever recorded the ask
    may have stored either form, and a schema keyword is never called ``json``.
    """
    schema = tool.input_schema
    if not isinstance(schema, dict) or not schema:
        return None
    if set(schema) == {"json"} and isinstance(schema["json"], dict):
        schema = schema["json"]
    return schema or None


def tool_blocks(tool: ToolCall, *, shown: Mapping[str, Any] | None = None) -> list[Block]:
    """The gated call: the tool's name, then its proposed input as fields (``bot.render.values``).

    Inputs the card already shows (a gate that put the call's arguments in its reason,
    ``shown``) are not repeated; the input is a model's proposal, so no mention in it is live.
    """
    name = _code(tool.name, _NAME_LIMIT)
    rest = {k: v for k, v in tool.input.items() if not (shown and k in shown and shown[k] == v)}
    if not tool.input:
        return [SectionBlock(text=MarkdownTextObject(text=f"*Tool* {name} · no input"))]
    if not rest:
        return [SectionBlock(text=MarkdownTextObject(text=f"*Tool* {name} · input as above"))]
    head = f"*Tool* {name} · proposed input" + (", besides the above:" if len(rest) < len(tool.input) else ":")
    head_block = SectionBlock(text=MarkdownTextObject(text=head))
    return [head_block, *value_blocks(rest, budget=TOOL_LIMIT - len(head))]


def input_changes(before: Mapping[str, Any], after: Mapping[str, Any], *, prefix: str = "") -> list[Change]:
    """Keys added, removed and changed, descending into objects present on both sides.

    Lists are compared whole: an element-wise diff of a list someone re-ordered would be
    longer than the list itself.
    """
    changes: list[Change] = []
    for key, new in after.items():
        path = f"{prefix}{key}"
        if key not in before:
            changes.append(Change(path=path, kind="added", new=new))
            continue
        old = before[key]
        if isinstance(old, dict) and isinstance(new, dict) and old and new:
            changes.extend(input_changes(old, new, prefix=f"{path}."))
        elif old != new or type(old) is not type(new):  # 1 == 1.0 == True, but the tool sees the type
            changes.append(Change(path=path, kind="changed", old=old, new=new))
    changes.extend(Change(path=f"{prefix}{k}", kind="removed", old=v) for k, v in before.items() if k not in after)
    return changes


def edit_diff_blocks(*, tool: ToolCall, edited: Mapping[str, Any]) -> list[Block]:
    """The decided card's summary of an Edit: what changed, within :data:`DIFF_LIMIT`."""
    changes = input_changes(tool.input, edited)
    if not changes:
        text = "*Input edited:* no changes, the call ran with the proposed input."
        return [SectionBlock(text=MarkdownTextObject(text=text))]
    text = f"*Input edited* ({_count(len(changes))}):"
    shown = 0
    for change in changes[:MAX_CHANGES]:
        line = _line(change)
        # Whole lines only: a cut inside one would leave an inline code span open.
        if len(text) + 1 + len(line) > DIFF_LIMIT - _MORE_ROOM:
            break
        text, shown = f"{text}\n{line}", shown + 1
    if shown < len(changes):
        text += f"\n…and {len(changes) - shown} more"
    return [SectionBlock(text=MarkdownTextObject(text=text))]


def _count(n: int) -> str:
    return "1 change" if n == 1 else f"{n} changes"


def _line(change: Change) -> str:
    name = _code(change.path, _NAME_LIMIT)
    if change.kind == "added":
        return f"• added {name}: {_value(change.new)}"
    if change.kind == "removed":
        return f"• removed {name} (was {_value(change.old)})"
    return f"• changed {name}: {_value(change.old)} → {_value(change.new)}"


def _value(value: Any) -> str:
    return _code(to_json(value, indent=None), _VALUE_LIMIT)


def _code(raw: str, limit: int) -> str:
    """One line of inline code, cut with an ellipsis: a backtick would end the span early,
    and ``mrkdwn.inline_code``'s cut marker starts a new line, which breaks the span."""
    return "`" + short(raw.replace("`", "'"), limit) + "`"
