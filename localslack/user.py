"""Slack's side towards the bot: slash commands, button clicks, modal submissions and events.

Payloads are built the way Slack builds them and handed to a transport (``transport.py``):
by default signed HTTP posts to the bot's ``/slack/events`` URL (form-encoded, or JSON for
events), or Socket Mode envelopes over the bot's WebSocket (``socket_mode.py``), so Bolt's own
parsing (and, over HTTP, its signature check) run unchanged. What a person could not do in the Slack client
(click a button that is no longer shown, submit a modal with a required input empty) raises
here instead of producing a payload Slack would never send.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Self

from localslack.interactions import button_action, event_callback, find_button, state_values
from localslack.server import LocalSlack
from localslack.transport import BotResponse, HttpTransport, Transport

LOCAL_SIGNING_SECRET: Final = "local-signing-secret"
LOCAL_VERIFICATION_TOKEN: Final = "local-verification-token"

__all__ = ["LOCAL_SIGNING_SECRET", "LOCAL_VERIFICATION_TOKEN", "BotResponse", "LocalSlackUser"]


class LocalSlackUser:
    """Acts as Slack delivering one workspace's user actions to the bot.

    Over HTTP to ``bot_url`` unless a ``transport`` is given (e.g. ``SocketModeTransport`` for a
    bot running ``approval-bot socket``); the payloads are the same either way.
    """

    def __init__(
        self,
        *,
        bot_url: str | None = None,
        signing_secret: str = LOCAL_SIGNING_SECRET,
        slack: LocalSlack,
        team_id: str = "T0LOCAL",
        api_app_id: str = "A0LOCAL",
        transport: Transport | None = None,
    ) -> None:
        if transport is None:
            if bot_url is None:
                raise TypeError("LocalSlackUser needs bot_url (HTTP) or a transport")
            transport = HttpTransport(bot_url=bot_url, signing_secret=signing_secret)
        self.bot_url = bot_url
        self.slack = slack
        self.team_id = team_id
        self.api_app_id = api_app_id
        self.transport = transport

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.transport.aclose()

    # -- what a person does ----------------------------------------------------------------------

    async def slash_command(
        self,
        *,
        text: str,
        user_id: str,
        channel_id: str,
        command: str = "/graph",
        user_name: str | None = None,
    ) -> BotResponse:
        """Type ``command text`` in a channel; the ack body is shown the way Slack shows it."""
        form = {
            "token": LOCAL_VERIFICATION_TOKEN,
            "team_id": self.team_id,
            "team_domain": self.slack.team_domain,
            "channel_id": channel_id,
            "channel_name": self.slack.channel_name(channel_id),
            "user_id": user_id,
            "user_name": user_name or self.slack.user_name(user_id),
            "command": command,
            "text": text,
            "api_app_id": self.api_app_id,
            "is_enterprise_install": "false",
            "response_url": self.slack.new_response_url(channel=channel_id, user=user_id),
            "trigger_id": self.slack.new_trigger_id(user_id=user_id),
        }
        response = await self.transport.deliver(kind="slash_commands", payload=form)
        if response.status == 200:
            effect = self.slack.record_command_reply(channel=channel_id, user=user_id, body=response.body)
            if effect is not None:
                await self.slack.changed("command_ack", {"body": response.body, "effect": effect})
        return response

    async def click(
        self,
        *,
        message: Mapping[str, Any],
        label: str,
        user_id: str,
        channel_id: str | None = None,
        allow_stale: bool = False,
        value: str | None = None,
    ) -> BotResponse:
        """Click the button whose text or action_id is ``label`` (and value ``value``, if given) on ``message``.

        The button is looked up in the message as it is now, because that is all a person can
        click; ``allow_stale`` clicks the given (older) copy instead, to reproduce two people
        clicking before the first update reached the second screen.
        """
        channel = channel_id or str(message["channel"])
        current = self.slack.message(channel, str(message["ts"]))
        shown = dict(message) if allow_stale or current is None else current
        block_id, button = find_button(shown.get("blocks"), label, value=value, where=f"on message {shown.get('ts')}")
        ephemeral = bool(shown.get("is_ephemeral"))
        payload: dict[str, Any] = {
            "type": "block_actions",
            "user": self._user(user_id),
            "api_app_id": self.api_app_id,
            "token": LOCAL_VERIFICATION_TOKEN,
            "container": {
                "type": "message",
                "message_ts": shown["ts"],
                "channel_id": channel,
                "is_ephemeral": ephemeral,
            },
            "trigger_id": self.slack.new_trigger_id(user_id=user_id),
            "team": {"id": self.team_id, "domain": self.slack.team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel, "name": self.slack.channel_name(channel)},
            "state": {"values": {}},
            "response_url": self.slack.new_response_url(channel=channel, message_ts=shown["ts"], user=user_id),
            "actions": [button_action(block_id, button)],
        }
        if not ephemeral:  # Slack leaves the message out for ephemeral containers
            payload["message"] = shown
        return await self.transport.deliver(kind="interactive", payload=payload)

    async def submit_view(
        self, *, view: Mapping[str, Any], values: Mapping[str, Mapping[str, Any]], user_id: str
    ) -> BotResponse:
        """Fill in a modal's inputs (``values[block_id][action_id]``) and press its submit button.

        The bot's ack is then applied as Slack would (close, errors, update, push, clear); see
        ``LocalSlack.open_views``.
        """
        current = self.slack.view(str(view["id"]))
        if current["id"] not in [v["id"] for v in self.slack.open_views()]:
            raise LookupError(f"view {current['id']} is not open: nobody can submit it")
        state = state_values(current, values)
        self.slack.record_state_values(view_id=current["id"], values=state)
        submitted = self.slack.view(current["id"])
        payload: dict[str, Any] = {
            "type": "view_submission",
            "team": {"id": self.team_id, "domain": self.slack.team_domain},
            "user": self._user(user_id),
            "api_app_id": self.api_app_id,
            "token": LOCAL_VERIFICATION_TOKEN,
            "trigger_id": self.slack.new_trigger_id(user_id=user_id),
            "view": submitted,
            "response_urls": [],
            "enterprise": None,
            "is_enterprise_install": False,
        }
        response = await self.transport.deliver(kind="interactive", payload=payload)
        effect = self.slack.apply_view_ack(view_id=current["id"], status=response.status, body=response.body)
        await self.slack.changed("view_submission", {"view_id": current["id"], "effect": effect})
        return response

    async def send_event(self, event: Mapping[str, Any]) -> BotResponse:
        """Deliver ``event`` (``{"type": ..., ...}``) as the Events API does: an ``event_callback``.

        Over HTTP a signed JSON POST, over Socket Mode an ``events_api`` envelope. Slack only
        wants a 200 (or an ack) back; nothing in the answer is shown to anyone.
        """
        payload = event_callback(
            event,
            token=LOCAL_VERIFICATION_TOKEN,
            team_id=self.team_id,
            api_app_id=self.api_app_id,
            bot_user_id=self.slack.bot_user_id,
        )
        return await self.transport.deliver(kind="events_api", payload=payload)

    async def open_home(self, *, user_id: str) -> BotResponse:
        """Open the app's Home tab: ``app_home_opened`` with the home view the person sees, if any."""
        event: dict[str, Any] = {
            "type": "app_home_opened",
            "user": user_id,
            "channel": self.slack.dm_channel(user_id),
            "tab": "home",
            "event_ts": f"{time.time():.6f}",
        }
        home = self.slack.home(user_id)
        if home is not None:
            event["view"] = home
        return await self.send_event(event)

    async def click_home(self, *, user_id: str, label: str, value: str | None = None) -> BotResponse:
        """Click a button on ``user_id``'s Home tab, by text or action_id (and ``value``, if given).

        Slack sends a view container and the view, with no message, channel or response_url;
        the trigger_id opens a modal. LookupError when there is no Home tab or no such button.
        """
        home = self.slack.home(user_id)
        if home is None:
            raise LookupError(f"{user_id} has no Home tab yet: the bot never published one (views.publish)")
        block_id, button = find_button(home.get("blocks"), label, value=value, where=f"in {user_id}'s Home tab")
        payload: dict[str, Any] = {
            "type": "block_actions",
            "user": self._user(user_id),
            "api_app_id": self.api_app_id,
            "token": LOCAL_VERIFICATION_TOKEN,
            "container": {"type": "view", "view_id": home["id"]},
            "trigger_id": self.slack.new_trigger_id(user_id=user_id),
            "team": {"id": self.team_id, "domain": self.slack.team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "view": home,
            "actions": [button_action(block_id, button)],
        }
        return await self.transport.deliver(kind="interactive", payload=payload)

    async def send_raw(
        self,
        *,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        sign: bool = True,
        timestamp: str | None = None,
        signature: str | None = None,
    ) -> BotResponse:
        """Post any body, to test what the bot does with unsigned, forged or stale requests (HTTP only)."""
        if not isinstance(self.transport, HttpTransport):
            raise TypeError(f"send_raw posts raw HTTP bodies; this user delivers over {type(self.transport).__name__}")
        return await self.transport.post(body, headers=headers, sign=sign, timestamp=timestamp, signature=signature)

    # -- plumbing --------------------------------------------------------------------------------

    def _user(self, user_id: str) -> dict[str, str]:
        name = self.slack.user_name(user_id)
        return {"id": user_id, "username": name, "name": name, "team_id": self.team_id}
