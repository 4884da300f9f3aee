"""The least an interactive payload must hold before Bolt routes it.

Bolt's listener matching indexes into ``actions`` and ``view`` without checking them, so
a signed but malformed payload would surface as a 500 (Bolt's middleware cannot help:
it injects the same arguments). ``bot.server`` runs these checks after verifying the
signature and before Bolt, so an unsigned request never gets this far.
"""

from __future__ import annotations

from typing import Any


def shape_problem(body: dict[str, Any]) -> str | None:
    kind = body.get("type")
    if kind is None:
        return None  # slash commands and events: Bolt handles their shape
    user = body.get("user")
    if kind in ("block_actions", "view_submission", "view_closed") and not (
        isinstance(user, dict) and isinstance(user.get("id"), str)
    ):
        return "no user"
    if kind == "block_actions":
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions:
            return "no actions"
        if not all(isinstance(a, dict) and isinstance(a.get("action_id"), str) for a in actions):
            return "an action without an action_id"
    if kind in ("view_submission", "view_closed"):
        view = body.get("view")
        if not isinstance(view, dict) or not isinstance(view.get("callback_id"), str):
            return "no view"
    return None
