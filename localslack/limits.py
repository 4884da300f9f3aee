"""Block Kit and Web API checks that the local Slack applies before accepting a message or a view.

The point is to fail in tests and in the demo for exactly the payloads that real Slack would
refuse in production. ``slack_sdk.models`` already checks some limits on ``to_dict()``, but not
all (the 50-block limit, ``plain_text_input`` lengths, duplicate ids), and hand-built dicts are
not checked at all, so the check has to live on the receiving side.

Errors are phrased like Slack's own ``response_metadata.messages``: a reason followed by a
``[json-pointer:...]`` to the offending field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

# Slack's documented limits (api.slack.com/reference/block-kit/blocks, .../block-elements,
# .../composition-objects, api.slack.com/reference/surfaces/views, and the chat.postMessage
# reference for the 40,000 character top-level text; chat.startStream/appendStream for streamed
# markdown and task titles). Keep every number here, nowhere else.
LIMITS: Final[Mapping[str, int]] = {
    "message.blocks": 50,
    "modal.blocks": 100,
    "message.text": 40_000,
    "message.blocks_text_total": 12_000,
    "block_id": 255,
    "action_id": 255,
    "text": 3000,
    "section.text": 3000,
    "section.fields": 10,
    "section.field": 2000,
    "header.text": 150,
    "context.elements": 10,
    "actions.elements": 25,
    "markdown.text": 12_000,
    "image.image_url": 3000,
    "image.alt_text": 2000,
    "image.title": 2000,
    "input.label": 2000,
    "input.hint": 2000,
    "button.text": 75,
    "button.value": 2000,
    "button.url": 3000,
    "button.accessibility_label": 75,
    "placeholder": 150,
    "plain_text_input.max_length": 3000,
    "plain_text_input.min_length": 3000,
    "select.options": 100,
    "checkboxes.options": 10,
    "overflow.options": 5,
    "option.text": 75,
    "option.value": 150,
    "confirm.title": 100,
    "confirm.text": 300,
    "confirm.button": 30,
    "modal.title": 24,
    "modal.submit": 24,
    "modal.close": 24,
    "modal.private_metadata": 3000,
    "modal.callback_id": 255,
    "modal.external_id": 255,
    "metadata.event_type": 255,
    "home.blocks": 100,
    "stream.markdown_text": 12_000,
    "stream.task_title": 256,
    "stream.plan_title": 256,
    "table.rows": 100,
    "table.cells": 20,
    "table.per_message": 1,
}

BLOCK_TYPES: Final = frozenset(
    {"section", "divider", "image", "actions", "context", "input", "header", "rich_text", "video", "file"}
    | {"markdown", "table"}
)
_SELECTS: Final = frozenset(
    {"static_select", "external_select", "users_select", "conversations_select", "channels_select"}
)
_MULTI_SELECTS: Final = frozenset("multi_" + s for s in _SELECTS)
_CHOICES: Final = frozenset({"checkboxes", "radio_buttons", "datepicker", "datetimepicker", "timepicker"})
INTERACTIVE: Final = frozenset({"button", "overflow", "workflow_button"}) | _SELECTS | _MULTI_SELECTS | _CHOICES
INPUTS: Final = (
    frozenset({"plain_text_input", "email_text_input", "url_text_input", "number_input"})
    | frozenset({"rich_text_input", "file_input"})
    | _SELECTS
    | _MULTI_SELECTS
    | _CHOICES
)
ELEMENT_TYPES: Final = INTERACTIVE | INPUTS | {"image"}
_TEXT_TYPES: Final = frozenset({"plain_text", "mrkdwn"})


class _Checker:
    """Walks one payload and collects every violation, so a test sees all of them at once."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def err(self, path: str, reason: str) -> None:
        self.errors.append(f"{reason} [json-pointer:{path}]")

    def length(self, value: Any, key: str, path: str) -> None:
        if isinstance(value, str) and len(value) > LIMITS[key]:
            self.err(path, f"must be less than {LIMITS[key] + 1} characters")

    def text(self, obj: Any, key: str, path: str, *, plain: bool = False) -> None:
        if not isinstance(obj, dict):
            self.err(path, "must be a text object")
            return
        if obj.get("type") not in (("plain_text",) if plain else _TEXT_TYPES):
            self.err(f"{path}/type", "must be plain_text" if plain else "must be plain_text or mrkdwn")
        text = obj.get("text")
        if not isinstance(text, str) or not text:
            self.err(f"{path}/text", "must be more than 0 characters")
        self.length(text, key, f"{path}/text")

    def blocks(self, blocks: Any, path: str, *, key: str) -> None:
        if not isinstance(blocks, list):
            self.err(path, "must be an array")
            return
        if len(blocks) > LIMITS[key]:
            self.err(path, f"no more than {LIMITS[key]} items allowed")
        tables = [i for i, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == "table"]
        if len(tables) > LIMITS["table.per_message"]:
            self.err(f"{path}/{tables[-1]}", "only_one_table_allowed")
        seen: set[str] = set()
        for i, block in enumerate(blocks):
            bpath = f"{path}/{i}"
            if not isinstance(block, dict):
                self.err(bpath, "must be an object")
                continue
            block_id = block.get("block_id")
            if isinstance(block_id, str):
                self.length(block_id, "block_id", f"{bpath}/block_id")
                if block_id in seen:
                    self.err(f"{bpath}/block_id", "duplicate block_id")
                seen.add(block_id)
            self.block(block, bpath)

    def block(self, block: dict[str, Any], path: str) -> None:
        kind = block.get("type")
        if kind not in BLOCK_TYPES:
            self.err(f"{path}/type", f"unsupported block type: {kind!r}")
        elif kind == "section":
            if "text" not in block and "fields" not in block:
                self.err(path, "must provide text or fields")
            if "text" in block:
                self.text(block["text"], "section.text", f"{path}/text")
            fields = block.get("fields", [])
            if not isinstance(fields, list) or len(fields) > LIMITS["section.fields"]:
                self.err(f"{path}/fields", f"no more than {LIMITS['section.fields']} items allowed")
            else:
                for j, field in enumerate(fields):
                    self.text(field, "section.field", f"{path}/fields/{j}")
            if "accessory" in block:
                self.elements([block["accessory"]], f"{path}/accessory", allowed=INTERACTIVE | {"image"})
        elif kind == "header":
            self.text(block.get("text"), "header.text", f"{path}/text", plain=True)
        elif kind == "actions":
            self.elements(block.get("elements"), f"{path}/elements", allowed=INTERACTIVE, key="actions.elements")
        elif kind == "context":
            self.context(block.get("elements"), f"{path}/elements")
        elif kind == "input":
            self.text(block.get("label"), "input.label", f"{path}/label", plain=True)
            if "hint" in block:
                self.text(block["hint"], "input.hint", f"{path}/hint", plain=True)
            self.elements([block.get("element")], f"{path}/element", allowed=INPUTS)
        elif kind == "image":
            self.image(block, path)
            if "title" in block:
                self.text(block["title"], "image.title", f"{path}/title", plain=True)
        elif kind == "markdown":
            self.length(block.get("text"), "markdown.text", f"{path}/text")
        elif kind == "table" and path.startswith("/view/"):
            self.err(f"{path}/type", "unsupported block type for this surface: 'table' (messages only)")
        elif kind == "table":
            self.table(block.get("rows"), f"{path}/rows")

    def table(self, rows: Any, path: str) -> None:
        if not isinstance(rows, list) or not rows or len(rows) > LIMITS["table.rows"]:
            self.err(path, f"must provide from 1 to {LIMITS['table.rows']} rows")
            return
        for i, row in enumerate(rows):
            if not isinstance(row, list) or not row or len(row) > LIMITS["table.cells"]:
                self.err(f"{path}/{i}", f"must provide from 1 to {LIMITS['table.cells']} cells")
                continue
            for j, cell in enumerate(row):
                kind = cell.get("type") if isinstance(cell, dict) else None
                if kind == "raw_text" and not isinstance(cell.get("text"), str):
                    self.err(f"{path}/{i}/{j}/text", "must be a string")
                elif kind not in ("raw_text", "rich_text"):
                    self.err(f"{path}/{i}/{j}/type", f"unsupported cell type: {kind!r}")

    def context(self, elements: Any, path: str) -> None:
        if not isinstance(elements, list) or not elements:
            self.err(path, "must provide at least one element")
            return
        if len(elements) > LIMITS["context.elements"]:
            self.err(path, f"no more than {LIMITS['context.elements']} items allowed")
        for i, element in enumerate(elements):
            kind = element.get("type") if isinstance(element, dict) else None
            if kind == "image":
                self.image(element, f"{path}/{i}")
            elif kind in _TEXT_TYPES:
                self.text(element, "text", f"{path}/{i}")
            else:
                self.err(f"{path}/{i}/type", f"unsupported context element type: {kind!r}")

    def image(self, obj: dict[str, Any], path: str) -> None:
        if "image_url" not in obj and "slack_file" not in obj:
            self.err(path, "must provide image_url or slack_file")
        self.length(obj.get("image_url"), "image.image_url", f"{path}/image_url")
        if not isinstance(obj.get("alt_text"), str):
            self.err(f"{path}/alt_text", "must provide alt_text")
        self.length(obj.get("alt_text"), "image.alt_text", f"{path}/alt_text")

    def elements(self, elements: Any, path: str, *, allowed: frozenset[str], key: str | None = None) -> None:
        if not isinstance(elements, list) or not elements:
            self.err(path, "must provide at least one element")
            return
        single = key is None  # accessory / input element: the path already names the element
        if key is not None and len(elements) > LIMITS[key]:
            self.err(path, f"no more than {LIMITS[key]} items allowed")
        seen: set[str] = set()
        for i, element in enumerate(elements):
            epath = path if single else f"{path}/{i}"
            if not isinstance(element, dict):
                self.err(epath, "must be an object")
                continue
            action_id = element.get("action_id")
            if isinstance(action_id, str):
                self.length(action_id, "action_id", f"{epath}/action_id")
                if action_id in seen:
                    self.err(f"{epath}/action_id", "duplicate action_id")
                seen.add(action_id)
            kind = element.get("type")
            if kind not in ELEMENT_TYPES:
                self.err(f"{epath}/type", f"unsupported element type: {kind!r}")
            elif kind not in allowed:
                self.err(f"{epath}/type", f"element type {kind!r} is not allowed here")
            else:
                self.element(element, epath)

    def element(self, el: dict[str, Any], path: str) -> None:
        kind = el["type"]
        if "placeholder" in el:
            self.text(el["placeholder"], "placeholder", f"{path}/placeholder", plain=True)
        if "confirm" in el:
            self.confirm(el["confirm"], f"{path}/confirm")
        if kind == "button":
            self.text(el.get("text"), "button.text", f"{path}/text", plain=True)
            self.length(el.get("value"), "button.value", f"{path}/value")
            self.length(el.get("url"), "button.url", f"{path}/url")
            self.length(el.get("accessibility_label"), "button.accessibility_label", f"{path}/accessibility_label")
            if el.get("style") not in (None, "primary", "danger"):
                self.err(f"{path}/style", "must be primary or danger")
        elif kind == "plain_text_input":
            for bound in ("min_length", "max_length"):
                value = el.get(bound)
                if value is not None and (not isinstance(value, int) or value > LIMITS[f"plain_text_input.{bound}"]):
                    self.err(f"{path}/{bound}", f"must be at most {LIMITS[f'plain_text_input.{bound}']}")
        elif kind == "image":
            self.image(el, path)
        elif "options" in el:
            key = {"overflow": "overflow.options"}.get(kind, "select.options")
            key = "checkboxes.options" if kind in ("checkboxes", "radio_buttons") else key
            self.options(el["options"], key, f"{path}/options")

    def options(self, options: Any, key: str, path: str) -> None:
        if not isinstance(options, list) or len(options) > LIMITS[key]:
            self.err(path, f"no more than {LIMITS[key]} items allowed")
            return
        for i, option in enumerate(options):
            if not isinstance(option, dict):
                self.err(f"{path}/{i}", "must be an object")
                continue
            self.text(option.get("text"), "option.text", f"{path}/{i}/text")
            self.length(option.get("value"), "option.value", f"{path}/{i}/value")

    def confirm(self, obj: Any, path: str) -> None:
        if not isinstance(obj, dict):
            self.err(path, "must be a confirmation dialog object")
            return
        self.text(obj.get("title"), "confirm.title", f"{path}/title", plain=True)
        self.text(obj.get("text"), "confirm.text", f"{path}/text")
        self.text(obj.get("confirm"), "confirm.button", f"{path}/confirm", plain=True)
        self.text(obj.get("deny"), "confirm.button", f"{path}/deny", plain=True)


def check_message(params: Mapping[str, Any], *, require_content: bool = True) -> tuple[str, list[str]] | None:
    """Return ``(error, messages)`` as Slack would for a message payload, or None when it is accepted.

    ``require_content`` is off for ``chat.update`` calls that keep the old blocks and text.
    """
    text = params.get("text")
    if isinstance(text, str) and len(text) > LIMITS["message.text"]:
        return "msg_too_long", [f"text must be less than {LIMITS['message.text'] + 1} characters"]
    blocks = params.get("blocks")
    has_content = bool(text) or bool(blocks) or bool(params.get("attachments"))
    if require_content and not has_content:
        return "no_text", ["no text, blocks or attachments"]
    if blocks is None:
        return None
    checker = _Checker()
    checker.blocks(blocks, "/blocks", key="message.blocks")
    if checker.errors:
        return "invalid_blocks", checker.errors
    total = _block_text_total(blocks)
    if total > LIMITS["message.blocks_text_total"]:
        return "msg_blocks_too_long", [f"the blocks hold {total} characters of text in all"]
    return None


def _block_text_total(value: Any) -> int:
    """All ``text`` strings inside the blocks, added up.

    Undocumented but real: Slack refuses a message whose blocks add up to more than about
    12,000 characters of text with ``msg_blocks_too_long`` (bolt-js issues #2509, #2867),
    even when every single block is within its own limit.
    """
    if isinstance(value, dict):
        own = len(value["text"]) if isinstance(value.get("text"), str) else 0
        return own + sum(_block_text_total(v) for k, v in value.items() if k != "text" or not isinstance(v, str))
    if isinstance(value, list):
        return sum(_block_text_total(v) for v in value)
    return 0


def check_view(view: Any, *, surface: Literal["modal", "home"] = "modal") -> list[str]:
    """Return the reasons Slack would refuse this view (empty when it is accepted).

    ``surface`` is what the method publishes: a ``modal`` (views.open/push/update) needs a title
    and a submit button for its inputs; a ``home`` tab (views.publish) has neither.
    """
    checker = _Checker()
    if not isinstance(view, dict):
        return ["must be a view object [json-pointer:/view]"]
    if view.get("type") != surface:
        checker.err("/view/type", f"must be {surface}")
    if surface == "modal":
        checker.text(view.get("title"), "modal.title", "/view/title", plain=True)
        for key in ("submit", "close"):
            if key in view:
                checker.text(view[key], f"modal.{key}", f"/view/{key}", plain=True)
    for key in ("private_metadata", "callback_id", "external_id"):
        checker.length(view.get(key), f"modal.{key}", f"/view/{key}")
    blocks = view.get("blocks")
    checker.blocks(blocks, "/view/blocks", key=f"{surface}.blocks")
    has_input = isinstance(blocks, list) and any(isinstance(b, dict) and b.get("type") == "input" for b in blocks)
    if surface == "modal" and has_input and "submit" not in view:
        checker.err("/view/submit", "submit is required when an input block is within the blocks array")
    return checker.errors
