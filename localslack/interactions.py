"""What a person can act on, and how Slack reports the act: buttons, modal inputs, events.

``LocalSlackUser`` uses these to find a button on a message or a Home tab as it is shown now
(a person cannot click what is not there), to turn plain values into ``view.state.values``
and to wrap an event in the Events API's ``event_callback`` envelope.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any


def find_button(
    blocks: list[dict[str, Any]] | None, label: str, *, value: str | None = None, where: str
) -> tuple[str | None, dict[str, Any]]:
    """The one button whose text or action_id is ``label`` (and ``value``, when given), with its block_id.

    Raises LookupError naming ``where`` and the buttons shown when there is none, or more than one.
    """
    shown: list[tuple[str | None, dict[str, Any]]] = []
    for block in blocks or []:
        candidates = list(block.get("elements") or []) if block.get("type") == "actions" else []
        if block.get("type") == "section" and "accessory" in block:
            candidates.append(block["accessory"])
        shown += [(block.get("block_id"), e) for e in candidates if isinstance(e, dict) and e.get("type") == "button"]
    found = [
        (block_id, button)
        for block_id, button in shown
        if label in (button["text"].get("text"), button.get("action_id")) and value in (None, button.get("value"))
    ]
    if len(found) != 1:
        what = "no button" if not found else f"{len(found)} buttons"
        wanted = f"labelled {label!r}" + (f" with value {value!r}" if value is not None else "")
        labels = [b["text"]["text"] for _, b in shown]
        raise LookupError(f"{what} {wanted} {where}; buttons shown: {labels}")
    return found[0]


def button_action(block_id: str | None, button: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of a block_actions payload's ``actions``, for a click on ``button``."""
    return {
        "action_id": button.get("action_id"),
        "block_id": block_id,
        "text": button["text"],
        **{k: button[k] for k in ("value", "style") if k in button},
        "type": "button",
        "action_ts": f"{time.time():.6f}",
    }


def event_callback(
    event: Mapping[str, Any], *, token: str, team_id: str, api_app_id: str, bot_user_id: str
) -> dict[str, Any]:
    """``event`` as the Events API delivers it: in an ``event_callback`` with its id, time and authorizations.

    The event gets an ``event_ts`` when it has none, as every event Slack sends has one.
    """
    now = time.time()
    return {
        "token": token,
        "team_id": team_id,
        "context_team_id": team_id,
        "context_enterprise_id": None,
        "api_app_id": api_app_id,
        "event": {**event, "event_ts": event.get("event_ts") or f"{now:.6f}"},
        "type": "event_callback",
        "event_id": f"Ev{secrets.token_hex(5).upper()}",
        "event_time": int(now),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-{secrets.token_urlsafe(24)}",
    }


def state_values(view: Mapping[str, Any], values: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Build ``view.state.values`` in Slack's shape from plain values, for every input block."""
    state: dict[str, dict[str, Any]] = {}
    for block in view.get("blocks") or []:
        if block.get("type") != "input":
            continue
        element = block["element"]
        block_id, action_id, kind = block.get("block_id"), element.get("action_id"), element["type"]
        value = values.get(block_id, {}).get(action_id)
        if value in (None, "") and not block.get("optional"):
            raise ValueError(f"input {block_id}/{action_id} is required: Slack would not let the user submit")
        if isinstance(value, str) and kind == "plain_text_input":
            low, high = element.get("min_length", 0), element.get("max_length", 3000)
            if value and not low <= len(value) <= high:
                raise ValueError(f"input {block_id}/{action_id} must be {low}..{high} characters")
        state[block_id] = {action_id: {"type": kind, **_shaped(kind, element, value)}}
    unknown = {f"{b}/{a}" for b, actions in values.items() for a in actions} - {
        f"{b}/{a}" for b, actions in state.items() for a in actions
    }
    if unknown:
        raise LookupError(f"no input block for {sorted(unknown)} in view {view.get('id')}")
    return state


def _shaped(kind: str, element: Mapping[str, Any], value: Any) -> dict[str, Any]:
    """How Slack reports one input's value, per element type."""
    if kind.endswith("static_select") or kind in ("radio_buttons", "checkboxes"):
        options = {o["value"]: o for o in element.get("options") or []}
        if kind.startswith("multi_") or kind == "checkboxes":
            return {"selected_options": [options[v] for v in value or []]}
        return {"selected_option": options[value] if value is not None else None}
    if kind.endswith(("users_select", "conversations_select", "channels_select")):
        noun = kind.removeprefix("multi_").removesuffix("s_select")
        return {f"selected_{noun}s" if kind.startswith("multi_") else f"selected_{noun}": value}
    key = {
        "datepicker": "selected_date",
        "timepicker": "selected_time",
        "datetimepicker": "selected_date_time",
    }
    return {key.get(kind, "value"): value}
