"""The modals behind ``Reply``, ``Reject`` and ``Edit``.

A modal submission arrives without the card it came from, so ``private_metadata``
carries the ids and the card's location (channel, message ts): enough for the listener
to record the decision and update the card, and nothing else, because it round-trips
through the user's client and must be validated like any other input.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import (
    Block,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.render.cards import load_ids_json, validate_id
from bot.render.edits import json_schema_of
from bot.render.mrkdwn import cut, invisible_chars, short
from engine.records import MessageRef, ToolCall, Verdict

REPLY_CALLBACK_ID = "ask:reply"
REJECT_CALLBACK_ID = "ask:reject"
EDIT_CALLBACK_ID = "ask:edit"
TEXT_BLOCK_ID = "ask_text"
TEXT_ACTION_ID = "ask_text_input"
TEXT_MAX_LENGTH = 3000
MAX_METADATA = 3000

_CALLBACKS = {Verdict.REPLY: REPLY_CALLBACK_ID, Verdict.REJECT: REJECT_CALLBACK_ID}
_CHANNEL = re.compile(r"^[A-Za-z0-9]{1,64}\Z")
_MESSAGE_TS = re.compile(r"^[0-9]{1,20}\.[0-9]{1,20}\Z")
_HINT_LIMIT = 500
_SCHEMA_HINT_FIELDS = 12


@dataclass(frozen=True, kw_only=True)
class ModalTarget:
    """What a modal submission answers and where that ask's card is."""

    run_id: str
    ask_key: str
    channel: str
    message_ts: str

    @property
    def card(self) -> MessageRef | None:
        """None for a modal opened from App Home: the card is wherever the store says."""
        if not self.channel:
            return None
        return MessageRef(channel=self.channel, ts=self.message_ts)


def clicked_card(body: dict[str, Any]) -> MessageRef | None:
    """Where the clicked card is, from a block_actions payload; None if it is not a clean id pair."""
    container = body.get("container") or {}
    channel, ts = container.get("channel_id"), container.get("message_ts")
    if isinstance(channel, str) and _CHANNEL.match(channel) and isinstance(ts, str) and _MESSAGE_TS.match(ts):
        return MessageRef(channel=channel, ts=ts)
    return None


def callback_id_for(verdict: Verdict) -> str:
    """The modal's callback_id; only Reply and Reject have modals."""
    try:
        return _CALLBACKS[verdict]
    except KeyError:
        raise ValueError(f"no modal for verdict {verdict.value!r}") from None


def verdict_for_callback_id(callback_id: str) -> Verdict:
    """Inverse of :func:`callback_id_for`, raising ValueError on anything else."""
    for verdict, known in _CALLBACKS.items():
        if known == callback_id:
            return verdict
    raise ValueError(f"not an ask modal: {callback_id[:80]!r}")


def encode_modal_metadata(target: ModalTarget) -> str:
    """``private_metadata``: compact JSON of the validated ids and the card's location."""
    _validate_target(target.run_id, target.ask_key, target.channel, target.message_ts)
    payload = {"r": target.run_id, "a": target.ask_key, "c": target.channel, "t": target.message_ts}
    return json.dumps(payload, separators=(",", ":"))


def parse_modal_metadata(s: str) -> ModalTarget:
    """Read a :class:`ModalTarget` back from ``private_metadata``, strictly."""
    data = load_ids_json(s, keys={"r", "a", "c", "t"}, limit=MAX_METADATA, what="modal metadata")
    run_id, ask_key, channel, ts = _validate_target(data["r"], data["a"], data["c"], data["t"])
    return ModalTarget(run_id=run_id, ask_key=ask_key, channel=channel, message_ts=ts)


def reply_modal(
    *,
    run_id: str,
    ask_key: str,
    verdict: Verdict,
    channel: str,
    message_ts: str,
    title_hint: str | None = None,
) -> dict[str, Any]:
    """The modal for Reply (text required) or Reject (reason optional), as a views.open dict."""
    callback_id = callback_id_for(verdict)
    metadata = encode_modal_metadata(
        ModalTarget(run_id=run_id, ask_key=ask_key, channel=channel, message_ts=message_ts)
    )
    replying = verdict is Verdict.REPLY
    blocks: list[Block] = []
    if title_hint:
        about = f"{'Replying to' if replying else 'Rejecting'} *{cut(title_hint, _HINT_LIMIT)}*"
        blocks.append(SectionBlock(text=MarkdownTextObject(text=about)))
    element = PlainTextInputElement(
        action_id=TEXT_ACTION_ID,
        multiline=True,
        max_length=TEXT_MAX_LENGTH,
        placeholder=PlainTextObject(text="What should the graph know?" if replying else "Why? (optional)"),
    )
    blocks.append(
        InputBlock(
            block_id=TEXT_BLOCK_ID,
            label=PlainTextObject(text="Your reply" if replying else "Reason"),
            element=element,
            optional=not replying,
        )
    )
    view = View(
        type="modal",
        callback_id=callback_id,
        title=PlainTextObject(text="Reply" if replying else "Reject"),
        submit=PlainTextObject(text="Send" if replying else "Reject"),
        close=PlainTextObject(text="Cancel"),
        blocks=blocks,
        private_metadata=metadata,
    )
    return view.to_dict()


def edit_text(tool_input: dict[str, Any]) -> str:
    """The tool input as the Edit modal shows it: pretty JSON, non-ASCII kept readable, and
    every invisible character (a right-to-left override, a zero-width space) written as its
    JSON escape (``\\u202e``), which the submission parses back into the same character:
    the approver sees it, and submitting the text unchanged approves the input unchanged."""
    dumped = json.dumps(tool_input, indent=2, ensure_ascii=False, default=str)
    return invisible_chars().sub(lambda found: json.dumps(found.group(0))[1:-1], dumped)


def edit_modal(*, run_id: str, ask_key: str, channel: str, message_ts: str, tool: ToolCall) -> dict[str, Any]:
    """The Edit modal, pre-filled with the proposed input, as a views.open dict.

    Raises ValueError when the input's JSON is longer than the text input holds: a
    pre-filled text that was cut would be approved as the cut version, so the caller
    must refuse the edit instead (see :func:`edit_text` and :data:`TEXT_MAX_LENGTH`).
    """
    text = edit_text(tool.input)
    if len(text) > TEXT_MAX_LENGTH:
        raise ValueError(f"the input is {len(text)} characters as JSON; the modal holds {TEXT_MAX_LENGTH}")
    metadata = encode_modal_metadata(
        ModalTarget(run_id=run_id, ask_key=ask_key, channel=channel, message_ts=message_ts)
    )
    about = f"Edit the input of *{short(tool.name, 100)}*. Submitting approves the call with your input."
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=about))]
    hint = _schema_hint(tool)
    if hint:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=cut(hint, _HINT_LIMIT))))
    element = PlainTextInputElement(
        action_id=TEXT_ACTION_ID, multiline=True, max_length=TEXT_MAX_LENGTH, initial_value=text
    )
    label = PlainTextObject(text="Tool input (a JSON object)")
    blocks.append(InputBlock(block_id=TEXT_BLOCK_ID, label=label, element=element, optional=False))
    view = View(
        type="modal",
        callback_id=EDIT_CALLBACK_ID,
        title=PlainTextObject(text="Edit and approve"),
        submit=PlainTextObject(text="Approve"),
        close=PlainTextObject(text="Cancel"),
        blocks=blocks,
        private_metadata=metadata,
    )
    return view.to_dict()


def _schema_hint(tool: ToolCall) -> str | None:
    """The top-level fields the schema names, so nobody has to guess a key's spelling."""
    schema = json_schema_of(tool)
    properties = schema.get("properties") if schema else None
    if not isinstance(properties, dict) or not properties:
        return None
    required = set(schema.get("required") or []) if schema else set()
    parts = []
    for name, spec in list(properties.items())[:_SCHEMA_HINT_FIELDS]:
        kind = spec.get("type") if isinstance(spec, dict) else None
        kind_text = "/".join(map(str, kind)) if isinstance(kind, list) else str(kind or "any")
        parts.append(f"{name} ({kind_text}{', required' if name in required else ''})")
    more = len(properties) - _SCHEMA_HINT_FIELDS
    return "Fields: " + "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def modal_text(view_state_values: dict[str, Any]) -> str | None:
    """The text typed into the modal, or None when it was left empty.

    Reads ``view.state.values[TEXT_BLOCK_ID][TEXT_ACTION_ID]["value"]`` and tolerates
    missing pieces (Slack sends ``"value": null`` for an untouched optional input).
    """
    block = view_state_values.get(TEXT_BLOCK_ID)
    action = block.get(TEXT_ACTION_ID) if isinstance(block, dict) else None
    value = action.get("value") if isinstance(action, dict) else None
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def _validate_target(run_id: object, ask_key: object, channel: object, ts: object) -> tuple[str, str, str, str]:
    run = validate_id(run_id, what="run id")
    key = validate_id(ask_key, what="ask key")
    if channel == "" and ts == "":  # opened from App Home, not from a card
        return run, key, "", ""
    if not isinstance(channel, str) or not _CHANNEL.match(channel):
        raise ValueError(f"channel must match {_CHANNEL.pattern}, got {str(channel)[:80]!r}")
    if not isinstance(ts, str) or not _MESSAGE_TS.match(ts):
        raise ValueError(f"message ts must match {_MESSAGE_TS.pattern}, got {str(ts)[:80]!r}")
    return run, key, channel, ts
