"""The Web API methods and response URL semantics of the local Slack.

Each handler takes the decoded request parameters and returns the fields of an ``ok`` answer,
or raises ``ApiError`` with the error Slack would give. The HTTP layer lives in ``server.py``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from localslack.conversations import checked_channel
from localslack.directory import DirectoryApi
from localslack.home import HomeTabs
from localslack.limits import check_message
from localslack.params import check_message_params, checked_view, required
from localslack.state import ApiError
from localslack.streams import STREAM_LIFETIME_SECONDS, Streams

# Slack's rules: a trigger_id lives 3 s and is exchanged once; a response_url takes 5 posts in 30 min.
TRIGGER_TTL_SECONDS: Final = 3.0
RESPONSE_URL_USES: Final = 5
RESPONSE_URL_TTL_SECONDS: Final = 30 * 60.0


@dataclass
class _Trigger:
    user: str | None
    issued: float
    used: bool = False


@dataclass
class _ResponseUrl:
    channel: str
    message_ts: str | None
    user: str
    issued: float
    uses: int = 0


class WebApi(DirectoryApi):
    """The Web API methods a bot uses, and what a post to a response_url does."""

    def __init__(
        self,
        *,
        team_id: str,
        team_domain: str,
        bot_user_id: str,
        bot_id: str,
        app_id: str,
        users: Mapping[str, str] | None,
        channels: Mapping[str, str] | None,
        trigger_ttl: float,
        streaming: bool = True,
        stream_lifetime: float = STREAM_LIFETIME_SECONDS,
    ) -> None:
        super().__init__(
            team_id=team_id, bot_user_id=bot_user_id, bot_id=bot_id, app_id=app_id, users=users, channels=channels
        )
        self.team_domain = team_domain
        self.trigger_ttl = trigger_ttl
        self.streams = Streams(state=self, enabled=streaming, lifetime=stream_lifetime)
        """chat.startStream/appendStream/stopStream; see ``streams.py``."""
        self.homes = HomeTabs(directory=self)
        """views.publish and each person's Home tab; see ``home.py``."""
        self.lacking_blocks: set[str] = set()
        """Block types this workspace does not know yet (say ``{"table"}``): a message using
        one is refused as ``invalid_blocks``, as Slack refuses blocks a client cannot show."""
        self._triggers: dict[str, _Trigger] = {}
        self._response_urls: dict[str, _ResponseUrl] = {}
        self.methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._chat_post_message,
            "chat.update": self._chat_update,
            "chat.postEphemeral": self._chat_post_ephemeral,
            "chat.delete": self._chat_delete,
            "chat.getPermalink": self._chat_get_permalink,
            "views.open": self._views_open,
            "views.update": self._views_update,
            "views.push": self._views_push,
            "users.info": self._users_info,
            "usergroups.users.list": self._usergroups_users_list,
            "usergroups.list": self._usergroups_list,
            "users.conversations": self._users_conversations,
            "conversations.info": self._conversations_info,
            "conversations.replies": self._conversations_replies,
            "conversations.history": self._conversations_history,
            **self.streams.methods,
            **self.homes.methods,
        }

    @property
    def base_url(self) -> str:
        """Where response URLs point; the HTTP server (``LocalSlack``) knows it."""
        raise NotImplementedError

    # -- ids issued on Slack's side --------------------------------------------------------------

    def new_trigger_id(self, *, user_id: str | None = None) -> str:
        """Issue a trigger_id as Slack does with each interaction; it is good for one modal, 3 s."""
        trigger_id = f"{next(self._ids)}.{int(time.time())}.{secrets.token_hex(16)}"
        self._triggers[trigger_id] = _Trigger(user=user_id, issued=time.monotonic())
        return trigger_id

    def new_response_url(self, *, channel: str, message_ts: str | None = None, user: str) -> str:
        """Issue a response_url for an interaction by ``user`` on ``message_ts`` (None: slash command)."""
        token = secrets.token_urlsafe(16)
        self._response_urls[token] = _ResponseUrl(channel, message_ts, user, time.monotonic())
        return f"{self.base_url}response/{token}"

    @property
    def workspace_url(self) -> str:
        """``https://<team_domain>.slack.com/``, as auth.test answers it; message links start here."""
        return f"https://{self.team_domain}.slack.com/"

    # -- inspection: streams end on their own, so look at them as they are now --------------------

    def messages(self, channel: str, *, top_level: bool = False) -> list[dict[str, Any]]:
        self.streams.expire()
        return super().messages(channel, top_level=top_level)

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        self.streams.expire()
        return super().message(channel, ts)

    def home(self, user_id: str) -> dict[str, Any] | None:
        """The Home tab view ``user_id`` sees now, or None before the bot published one."""
        return self.homes.home(user_id)

    # -- response URLs ---------------------------------------------------------------------------

    def respond(self, token: str, body: dict[str, Any]) -> str:
        """Apply a post to a response_url: delete or replace the original, or post a new message.

        A new message is ephemeral unless ``response_type`` is ``in_channel`` (Slack's default);
        for a slash command's URL it becomes the "original" that later posts may replace.
        """
        issued = self._response_urls.get(token)
        if issued is None:
            raise ApiError("no_such_url")
        if time.monotonic() - issued.issued > RESPONSE_URL_TTL_SECONDS:
            raise ApiError("expired_url")
        if issued.uses >= RESPONSE_URL_USES:
            raise ApiError("used_url")
        if body.get("delete_original"):
            self.delete_message(channel=issued.channel, ts=self._original(issued), user=issued.user)
            effect = "delete_original"
        else:
            problem = check_message(body)
            if problem is not None:
                raise ApiError(*problem)
            if body.get("replace_original"):
                ts = self._original(issued)
                self.edit_message(channel=issued.channel, ts=ts, user=issued.user, params=body, replace=True)
                effect = "replace_original"
            elif body.get("response_type") == "in_channel":
                message = self.post_message(channel=issued.channel, params=body)
                issued.message_ts = issued.message_ts or message["ts"]
                effect = "in_channel"
            else:
                ephemeral = self.post_ephemeral(channel=issued.channel, user=issued.user, params=body)
                issued.message_ts = issued.message_ts or ephemeral["ts"]
                effect = "ephemeral"
        issued.uses += 1
        self.responses.append(
            {"url": f"{self.base_url}response/{token}", "channel": issued.channel, "user": issued.user}
            | {"message_ts": issued.message_ts, "effect": effect, "body": body}
        )
        return effect

    @staticmethod
    def _original(issued: _ResponseUrl) -> str:
        if issued.message_ts is None:
            raise ApiError("message_not_found", ["this response_url has no original message yet"])
        return issued.message_ts

    # -- Web API methods -------------------------------------------------------------------------

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": self.workspace_url,
            "team": self.team_domain,
            "user": "approval-bot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _chat_post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = required(params, "channel", "channel_not_found")
        check_message_params(params)
        self._check_known_blocks(params)
        message = self.post_message(channel=channel, params=params)
        return {"channel": channel, "ts": message["ts"], "message": message}

    def _chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = required(params, "channel", "channel_not_found")
        ts = required(params, "ts", "message_not_found")
        check_message_params(params, require_content=False)
        self._check_known_blocks(params)
        self.streams.check_editable(channel=channel, ts=ts)
        message = self.edit_message(channel=channel, ts=ts, user=None, params=params, replace=False)
        message.pop("stream", None)  # the local record of a stream, not part of Slack's message
        return {"channel": channel, "ts": ts, "text": message["text"], "message": message}

    def _check_known_blocks(self, params: Mapping[str, Any]) -> None:
        for i, block in enumerate(params.get("blocks") or []):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in self.lacking_blocks:
                raise ApiError("invalid_blocks", [f"unsupported block type: {kind!r} [json-pointer:/blocks/{i}/type]"])

    def _chat_post_ephemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = required(params, "channel", "channel_not_found")
        user = required(params, "user", "user_not_in_channel")
        check_message_params(params)
        return {"message_ts": self.post_ephemeral(channel=channel, user=user, params=params)["ts"]}

    def _chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = required(params, "channel", "channel_not_found")
        ts = required(params, "ts", "message_not_found")
        self.delete_message(channel=channel, ts=ts, user=None)
        return {"channel": channel, "ts": ts}

    def _chat_get_permalink(self, params: dict[str, Any]) -> dict[str, Any]:
        """``<workspace>/archives/<channel>/p<ts without the dot>``; a reply's link names its thread."""
        channel = checked_channel(params)
        message = self.stored_message(channel, required(params, "message_ts", "message_not_found"))
        if message is None:
            raise ApiError("message_not_found")
        link = f"{self.workspace_url}archives/{channel}/p{message['ts'].replace('.', '')}"
        thread_ts = message.get("thread_ts")
        if thread_ts and thread_ts != message["ts"]:
            link += f"?thread_ts={thread_ts}&cid={channel}"
        return {"channel": channel, "permalink": link}

    def _views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self._exchange_trigger(params)
        return {"view": self.open_view(view=checked_view(params), user=user, push=False)}

    def _views_push(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self._exchange_trigger(params)
        return {"view": self.open_view(view=checked_view(params), user=user, push=True)}

    def _views_update(self, params: dict[str, Any]) -> dict[str, Any]:
        view = checked_view(params)
        return {
            "view": self.update_view(
                view_id=params.get("view_id"),
                external_id=params.get("external_id"),
                view=view,
                hash_=params.get("hash"),
            )
        }

    def _exchange_trigger(self, params: dict[str, Any]) -> str | None:
        trigger = self._triggers.get(str(params.get("trigger_id", "")))
        if trigger is None:
            raise ApiError("invalid_arguments", ["invalid `trigger_id`"])
        if trigger.used:
            raise ApiError("exchanged_trigger_id")
        if time.monotonic() - trigger.issued > self.trigger_ttl:
            raise ApiError("expired_trigger_id")
        trigger.used = True
        return trigger.user
