"""What a Slack workspace shows after the bot's calls: messages, threads, ephemerals and modals.

Kept apart from the HTTP layer so the same rules (who may edit what, how a modal stack
behaves after a submission) apply whether a change came through the Web API, a
response_url, or an ack body that Slack itself turns into a message or a view change.
Everything handed out is a deep copy: tests can keep an old message and compare it later.
"""

from __future__ import annotations

import copy
import itertools
import secrets
import time
from typing import Any

from localslack.calls import Call
from localslack.limits import check_message, check_view


class ApiError(Exception):
    """A Web API failure, turned into Slack's ``{"ok": false, "error": ...}`` body."""

    def __init__(self, error: str, messages: list[str] | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.messages = messages or []


class SlackState:
    """The workspace content; ``LocalSlack`` adds the HTTP server on top."""

    def __init__(self, *, team_id: str, bot_user_id: str, bot_id: str, app_id: str) -> None:
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.app_id = app_id
        self.calls: list[Call] = []
        """Every Web API call in order, as ``(method, params)`` with JSON fields decoded; each also
        has ``at`` (when it came) and ``result`` (the answer), see ``calls.py``."""
        self.rejected: list[dict[str, Any]] = []
        """Everything Slack would have refused (method, error, errors, params); normally empty."""
        self.responses: list[dict[str, Any]] = []
        """Every accepted response_url post: url, channel, user, message_ts, effect, body."""
        self._channels: dict[str, dict[str, dict[str, Any]]] = {}
        self._ephemerals: list[dict[str, Any]] = []
        self._views: dict[str, dict[str, Any]] = {}
        self._view_user: dict[str, str | None] = {}
        self._open: list[str] = []
        self._ids = itertools.count(1)
        self._last_ts_us = 0

    def reject(self, method: str, params: dict[str, Any], error: ApiError) -> dict[str, Any]:
        """Record a refusal and build the body Slack would answer with."""
        self.rejected.append({"method": method, "error": error.error, "errors": error.messages, "params": params})
        body: dict[str, Any] = {"ok": False, "error": error.error}
        if error.messages:
            body["errors"] = error.messages
            body["response_metadata"] = {"messages": [f"[ERROR] {m}" for m in error.messages]}
        return body

    def next_ts(self) -> str:
        """A message ts like Slack's ("1700000000.000100"): wall-clock micros, strictly increasing."""
        self._last_ts_us = max(int(time.time() * 1_000_000), self._last_ts_us + 1)
        return f"{self._last_ts_us // 1_000_000}.{self._last_ts_us % 1_000_000:06d}"

    # -- inspection ------------------------------------------------------------------------------

    def messages(self, channel: str, *, top_level: bool = False) -> list[dict[str, Any]]:
        """The channel's messages in post order, as they look now (after updates and deletes).

        ``top_level`` leaves out thread replies that were not broadcast to the channel.
        """
        found = list(self._channels.get(channel, {}).values())
        if top_level:
            found = [m for m in found if shown_in_channel(m)]
        return copy.deepcopy(list(found))

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The thread's parent followed by its replies."""
        return [m for m in self.messages(channel) if m["ts"] == ts or m.get("thread_ts") == ts]

    def stored_message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """The live channel message (not a copy), for the modules that change messages in place."""
        return self._channels.get(channel, {}).get(ts)

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """The current state of one message, channel or ephemeral."""
        found = self._channels.get(channel, {}).get(ts) or self._ephemeral(channel, ts)
        return copy.deepcopy(found)

    def ephemerals(self, user: str | None = None, *, channel: str | None = None) -> list[dict[str, Any]]:
        """Ephemeral messages (``recipient`` is the user who saw them), oldest first."""
        return copy.deepcopy(
            [e for e in self._ephemerals if user in (None, e["recipient"]) and channel in (None, e["channel"])]
        )

    @property
    def views(self) -> list[dict[str, Any]]:
        """Every modal opened or pushed, in its current state, each with its ``id``."""
        return copy.deepcopy(list(self._views.values()))

    def view(self, view_id: str) -> dict[str, Any]:
        return copy.deepcopy(self._views[view_id])

    def open_views(self, user: str | None = None) -> list[dict[str, Any]]:
        """Modals still on screen (not closed by a submission), bottom of the stack first."""
        return [self.view(v) for v in self._open if user in (None, self._view_user[v])]

    def view_user(self, view_id: str) -> str | None:
        return self._view_user[view_id]

    # -- messages --------------------------------------------------------------------------------

    def post_message(self, *, channel: str, params: dict[str, Any], user: str | None = None) -> dict[str, Any]:
        """Add a message (by the bot unless ``user`` is given) and keep thread bookkeeping."""
        ts = self.next_ts()
        message: dict[str, Any] = {"type": "message", "channel": channel, "ts": ts, "team": self.team_id}
        message |= {"user": user} if user else {"user": self.bot_user_id, "bot_id": self.bot_id, "app_id": self.app_id}
        message |= {"text": params.get("text") or "", "blocks": copy.deepcopy(params.get("blocks") or [])}
        for key in ("attachments", "metadata"):
            if params.get(key):
                message[key] = copy.deepcopy(params[key])
        posted = self._channels.setdefault(channel, {})
        thread_ts = params.get("thread_ts")
        if thread_ts:
            parent = posted.get(thread_ts)
            thread_ts = parent.get("thread_ts", thread_ts) if parent else thread_ts  # reply to a reply
            message["thread_ts"] = thread_ts
            if params.get("reply_broadcast"):
                message["subtype"] = "thread_broadcast"
            root = posted.get(thread_ts)
            if root is not None:
                root |= {
                    "thread_ts": thread_ts,
                    "reply_count": root.get("reply_count", 0) + 1,
                    "latest_reply": ts,
                }
        posted[ts] = message
        return copy.deepcopy(message)

    def post_ephemeral(self, *, channel: str, user: str, params: dict[str, Any]) -> dict[str, Any]:
        ephemeral: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "ts": self.next_ts(),
            "recipient": user,
        }
        ephemeral |= {"user": self.bot_user_id, "bot_id": self.bot_id, "is_ephemeral": True}
        ephemeral |= {"text": params.get("text") or "", "blocks": copy.deepcopy(params.get("blocks") or [])}
        if params.get("thread_ts"):
            ephemeral["thread_ts"] = params["thread_ts"]
        self._ephemerals.append(ephemeral)
        return copy.deepcopy(ephemeral)

    def edit_message(
        self, *, channel: str, ts: str, user: str | None, params: dict[str, Any], replace: bool
    ) -> dict[str, Any]:
        """Edit a message as chat.update (``replace=False``) or a response_url's replace_original.

        chat.update keeps blocks it was not given (Slack's documented behaviour) and cannot reach
        ephemerals; a response_url (``user`` set) replaces the whole message, ephemeral or not.
        """
        message = self._channels.get(channel, {}).get(ts)
        if message is None and user is not None:
            message = self._ephemeral(channel, ts, user=user)
        if message is None:
            raise ApiError("message_not_found")
        if message.get("bot_id") != self.bot_id:
            raise ApiError("cant_update_message")
        if replace or "text" in params:
            message["text"] = params.get("text") or ""
        if replace or "blocks" in params:
            message["blocks"] = copy.deepcopy(params.get("blocks") or [])
        if "metadata" in params:  # absent keeps it, {} removes it (chat.update's documented rule)
            if params["metadata"]:
                message["metadata"] = copy.deepcopy(params["metadata"])
            else:
                message.pop("metadata", None)
        if not message.get("is_ephemeral"):
            message["edited"] = {"user": self.bot_user_id, "ts": self.next_ts()}
        return copy.deepcopy(message)

    def delete_message(self, *, channel: str, ts: str, user: str | None) -> None:
        posted = self._channels.get(channel, {})
        message = posted.get(ts)
        if message is None and user is not None and (ephemeral := self._ephemeral(channel, ts, user=user)):
            self._ephemerals.remove(ephemeral)
            return
        if message is None:
            raise ApiError("message_not_found")
        if message.get("bot_id") != self.bot_id:
            raise ApiError("cant_delete_message")
        del posted[ts]
        root = posted.get(message.get("thread_ts") or "")
        if root is not None:  # a reply went: the parent counts one fewer
            left = [m["ts"] for m in posted.values() if m.get("thread_ts") == root["ts"] and m is not root]
            root |= {"reply_count": len(left), "latest_reply": left[-1] if left else root["ts"]}

    def add_user_message(self, *, channel: str, user: str, text: str, thread_ts: str | None = None) -> dict[str, Any]:
        """A message typed by a person (the bot may read it but never edit or delete it)."""
        return self.post_message(channel=channel, params={"text": text, "thread_ts": thread_ts}, user=user)

    def record_command_reply(self, *, channel: str, user: str, body: Any) -> str | None:
        """Show a slash command's ack body the way Slack does: ephemeral unless ``in_channel``."""
        if isinstance(body, str):
            body = {"text": body} if body.strip() else None
        if not isinstance(body, dict) or not body:
            return None
        problem = check_message(body)
        if problem is not None:
            self.reject("command_ack", body, ApiError(*problem))
            return "rejected"
        if body.get("response_type") == "in_channel":
            self.post_message(channel=channel, params=body)
            return "in_channel"
        self.post_ephemeral(channel=channel, user=user, params=body)
        return "ephemeral"

    def _ephemeral(self, channel: str, ts: str, *, user: str | None = None) -> dict[str, Any] | None:
        for e in self._ephemerals:
            if e["channel"] == channel and e["ts"] == ts and user in (None, e["recipient"]):
                return e
        return None

    # -- modals ----------------------------------------------------------------------------------

    def open_view(self, *, view: dict[str, Any], user: str | None, push: bool) -> dict[str, Any]:
        """Open a modal, or push it onto the user's open stack (at most 3 deep, Slack's rule)."""
        external_id = view.get("external_id")
        if external_id and any(v.get("external_id") == external_id for v in self._views.values()):
            raise ApiError("duplicate_external_id")
        stack = [v for v in self._open if self._view_user[v] == user]
        if push and not stack:
            raise ApiError("invalid_arguments", ["views.push needs a modal already open for this user"])
        if push and len(stack) >= 3:
            raise ApiError("push_limit_reached")
        if not push:
            for view_id in stack:
                self._open.remove(view_id)
        view_id = self.new_view_id()
        stored = copy.deepcopy(view) | {"id": view_id, "team_id": self.team_id, "state": {"values": {}}}
        stored |= {k: view.get(k, "") for k in ("private_metadata", "callback_id", "external_id")}
        stored |= {"hash": self.new_hash(), "root_view_id": self._views[stack[0]]["id"] if push else view_id}
        stored |= {
            "previous_view_id": stack[-1] if push else None,
            "app_id": self.app_id,
            "bot_id": self.bot_id,
        }
        self._views[view_id] = stored
        self._view_user[view_id] = user
        self._open.append(view_id)
        return copy.deepcopy(stored)

    def update_view(
        self, *, view_id: str | None, external_id: str | None, view: dict[str, Any], hash_: str | None
    ) -> dict[str, Any]:
        """Replace a modal's content in place, keeping its id; a stale ``hash`` is a conflict."""
        found = [
            v for v in self._views.values() if view_id in (None, v["id"]) and external_id in (None, v["external_id"])
        ]
        if not found or (view_id is None and external_id is None):
            raise ApiError("not_found")
        stored = found[0]
        if hash_ and hash_ != stored["hash"]:
            raise ApiError("hash_conflict")
        keep = {
            k: stored[k] for k in ("id", "team_id", "state", "root_view_id", "previous_view_id", "app_id", "bot_id")
        }
        fresh = copy.deepcopy(view) | {k: view.get(k, "") for k in ("private_metadata", "callback_id", "external_id")}
        stored.clear()
        stored |= fresh | keep | {"hash": self.new_hash()}
        return copy.deepcopy(stored)

    def apply_view_ack(self, *, view_id: str, status: int, body: Any) -> str:
        """Do what Slack does with the bot's answer to a view_submission; returns the effect."""
        if status != 200:
            return "error_shown"  # Slack shows "We had some trouble connecting", the modal stays
        action = body.get("response_action") if isinstance(body, dict) else None
        user = self._view_user[view_id]
        if action is None:
            self._open.remove(view_id)
            return "closed"
        if action == "clear":
            self._open[:] = [v for v in self._open if self._view_user[v] != user]
            return "cleared"
        if action == "errors":
            inputs = {b.get("block_id") for b in self._views[view_id].get("blocks", []) if b.get("type") == "input"}
            unknown = sorted(set(body.get("errors") or {}) - inputs)
            if unknown:
                self.reject(
                    "view_submission_ack",
                    body,
                    ApiError("invalid_arguments", [f"not input blocks: {unknown}"]),
                )
            return "errors"
        errors = check_view(body.get("view")) if action in ("update", "push") else [f"unknown action {action!r}"]
        if errors:
            self.reject("view_submission_ack", body, ApiError("invalid_arguments", errors))
            return "rejected"
        if action == "update":
            self.update_view(view_id=view_id, external_id=None, view=body["view"], hash_=None)
            return "updated"
        self.open_view(view=body["view"], user=user, push=True)
        return "pushed"

    def record_state_values(self, *, view_id: str, values: dict[str, Any]) -> None:
        self._views[view_id]["state"] = {"values": copy.deepcopy(values)}

    def new_view_id(self) -> str:
        return f"V{next(self._ids):010d}"

    def new_hash(self) -> str:
        """A view ``hash`` like Slack's; every change gets a new one, so a stale one can be told apart."""
        return f"{int(time.time())}.{secrets.token_hex(4)}"


def shown_in_channel(message: dict[str, Any]) -> bool:
    """Top-level messages, thread parents and replies broadcast to the channel."""
    return message.get("thread_ts") in (None, message["ts"]) or message.get("subtype") == "thread_broadcast"
