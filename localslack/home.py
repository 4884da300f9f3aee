"""App Home: ``views.publish`` and the one Home tab view each person sees.

The bot can show each person a Home tab (their pending approvals, say). Slack keeps one home
view per person and app: its ``id`` stays the same across publishes, its ``hash`` changes with
each one, so a bot that publishes with a stale ``hash`` (two updates racing) is refused with
``hash_conflict`` instead of overwriting the newer view. ``LocalSlackUser.open_home`` and
``click_home`` act on what ``home(user_id)`` holds.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from localslack.directory import DirectoryApi
from localslack.params import checked_view
from localslack.state import ApiError

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class HomeTabs:
    """Every person's Home tab; ``WebApi`` registers ``methods``."""

    def __init__(self, *, directory: DirectoryApi) -> None:
        self.directory = directory
        self._homes: dict[str, dict[str, Any]] = {}
        self.methods: dict[str, Handler] = {"views.publish": self._views_publish}

    def home(self, user_id: str) -> dict[str, Any] | None:
        """The Home tab view ``user_id`` sees now (with ``id``, ``hash``, ``state``), or None before any publish."""
        return copy.deepcopy(self._homes.get(user_id))

    def _views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        user_id = params.get("user_id")
        if not isinstance(user_id, str) or not self.directory.knows_user(user_id):
            raise ApiError("user_not_found")
        view = checked_view(params, surface="home")
        current = self._homes.get(user_id)
        hash_ = params.get("hash")
        if hash_ and (current is None or hash_ != current["hash"]):
            raise ApiError("hash_conflict")
        d = self.directory
        view_id = current["id"] if current else d.new_view_id()
        stored = copy.deepcopy(view) | {k: view.get(k, "") for k in ("private_metadata", "callback_id", "external_id")}
        stored |= {
            "id": view_id,
            "team_id": d.team_id,
            "state": {"values": {}},
            "hash": d.new_hash(),
            "root_view_id": view_id,
            "previous_view_id": None,
            "app_id": d.app_id,
            "app_installed_team_id": d.team_id,
            "bot_id": d.bot_id,
        }
        self._homes[user_id] = stored
        return {"view": copy.deepcopy(stored)}
