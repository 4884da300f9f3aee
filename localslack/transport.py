"""How Slack's side hands a user action to the bot: a signed HTTP request, or a Socket Mode envelope.

``LocalSlackUser`` builds every payload once, in Slack's shape, and gives it to a transport
with its Socket Mode envelope type (``slash_commands``, ``interactive`` or ``events_api``). Each transport
then encodes it the way Slack does on that path, so the payload code is never duplicated and
the two paths cannot drift apart. The socket transport lives in ``socket_mode.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

EnvelopeType = Literal["slash_commands", "interactive", "events_api"]
"""Socket Mode's names for the kinds of request Slack sends an app: a slash command, an
interaction (click, submission), an Events API event (``app_home_opened``, ...)."""

_FORM: Final = "application/x-www-form-urlencoded"
_JSON: Final = "application/json"


@dataclass(frozen=True)
class BotResponse:
    """The bot's answer: ``body`` is parsed JSON when it was JSON, else the text.

    Over Socket Mode the answer is the ack's ``payload`` (status 200, no headers), so callers
    that apply an ack the way Slack does need not know which path it came by.
    """

    status: int
    body: Any
    text: str
    headers: Mapping[str, str]


class Transport(Protocol):
    """Delivers one payload to the bot and returns what the bot acknowledged it with."""

    async def deliver(self, *, kind: EnvelopeType, payload: Mapping[str, Any]) -> BotResponse: ...

    async def aclose(self) -> None: ...


class HttpTransport:
    """Slack's HTTP path: signed with the app's signing secret, POSTed to the bot's URL.

    Commands and interactions are form-encoded; Events API callbacks are a JSON body.
    """

    def __init__(self, *, bot_url: str, signing_secret: str) -> None:
        self.bot_url = bot_url
        self._verifier = SignatureVerifier(signing_secret)
        self._session: aiohttp.ClientSession | None = None

    async def deliver(self, *, kind: EnvelopeType, payload: Mapping[str, Any]) -> BotResponse:
        if kind == "events_api":
            return await self.post(json.dumps(payload).encode(), headers={"Content-Type": _JSON})
        # Slash commands arrive as plain form fields; interactions as one ``payload=<json>`` field.
        form = dict(payload) if kind == "slash_commands" else {"payload": json.dumps(payload)}
        return await self.post(urlencode(form).encode())

    async def post(
        self,
        body: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        sign: bool = True,
        timestamp: str | None = None,
        signature: str | None = None,
    ) -> BotResponse:
        """POST ``body`` as Slack would, or forged/unsigned/stale when the arguments say so."""
        sent = {"Content-Type": _FORM, **(headers or {})}
        if sign:
            timestamp = timestamp or str(int(time.time()))
            signature = signature or self._verifier.generate_signature(timestamp=timestamp, body=body)
            sent |= {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature or ""}
        if self._session is None:
            self._session = aiohttp.ClientSession()
        async with self._session.post(self.bot_url, data=body, headers=sent) as response:
            text = await response.text()
            parsed: Any = text
            if text and response.content_type == _JSON:
                parsed = json.loads(text)
            return BotResponse(status=response.status, body=parsed, text=text, headers=dict(response.headers))

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
