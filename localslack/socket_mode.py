"""Slack's Socket Mode, locally: ``apps.connections.open``, the WebSocket, envelopes and acks.

The bot's unmodified ``AsyncSocketModeHandler`` (slack_sdk's aiohttp client) connects here as
it would to Slack: it asks ``apps.connections.open`` (with the app-level token, over the same
HTTP Web API as every other call) for a WebSocket URL, connects, gets a ``hello``, and from then
on receives slash commands, interactions and events as envelopes that it must ack with the envelope id,
optionally carrying the response payload. Only the delivery of people's actions moves to the
socket; the bot's own calls stay HTTP Web API calls, as with real Slack.

``SocketModeTransport`` plugs this into ``LocalSlackUser``, so the same user-side payloads reach
the bot either way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from aiohttp import WSMsgType, web

from localslack.state import ApiError
from localslack.transport import BotResponse, EnvelopeType

if TYPE_CHECKING:
    from localslack.server import LocalSlack

LOCAL_APP_TOKEN: Final = "xapp-local"
ACK_TIMEOUT_SECONDS: Final = 3.0
"""Slack waits 3 s for an envelope's ack before it shows the person an error."""
APP_LEVEL_METHODS: Final = frozenset({"apps.connections.open"})
"""Web API methods that take the app-level (``xapp-``) token instead of the bot token."""

_log = logging.getLogger(__name__)


@dataclass
class _Connection:
    ticket: str
    ws: web.WebSocketResponse
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)


class SocketMode:
    """The Socket Mode side of one app: issues WebSocket URLs, delivers envelopes, collects acks."""

    def __init__(self, *, slack: LocalSlack, app_token: str, ack_timeout: float) -> None:
        self.slack = slack
        self.app_token = app_token
        self.ack_timeout = ack_timeout
        self.connections_opened = 0
        """How many WebSockets were ever accepted: a (re)started bot is ready when this grows."""
        self.envelopes: list[dict[str, Any]] = []
        """Every envelope sent, as ``{"envelope": ..., "ack": ...}``; ``ack`` is None until acked."""
        self.stray: list[Any] = []
        """Messages from the client that acked nothing pending (unknown or late envelope ids)."""
        self._tickets: set[str] = set()
        self._connections: list[_Connection] = []

    @property
    def connected(self) -> int:
        """Open WebSockets right now (Slack allows an app several; envelopes go to the newest)."""
        return sum(1 for c in self._connections if not c.ws.closed)

    # -- apps.connections.open and the WebSocket -------------------------------------------------

    def connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        """Issue a WebSocket URL; the app-level token was already checked by the HTTP layer."""
        ticket = secrets.token_urlsafe(12)
        self._tickets.add(ticket)
        ws_base = "ws://" + self.slack.base_url.removeprefix("http://")
        return {"url": f"{ws_base}socket/{ticket}"}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """One client connection: ``hello`` first (as Slack sends it), then read acks until it closes.

        aiohttp answers the client's pings with pongs (``autoping``), which is what the SDK's
        stale-connection check waits for.
        """
        ticket = request.match_info["ticket"]
        if ticket not in self._tickets:
            raise web.HTTPUnauthorized(text="unknown Socket Mode ticket: call apps.connections.open first")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        connection = _Connection(ticket=ticket, ws=ws)
        self._connections.append(connection)
        self.connections_opened += 1
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": self.connected,
                "debug_info": {"host": "localslack", "build_number": 1, "approximate_connection_time": 3600},
                "connection_info": {"app_id": self.slack.app_id},
            }
        )
        await self.slack.changed("socket_connected", {"ticket": ticket, "connections": self.connected})
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    await self._on_text(connection, message.data)
        finally:
            self._connections.remove(connection)
            for future in connection.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the bot's Socket Mode connection closed before it acked"))
            await self.slack.changed("socket_closed", {"ticket": ticket, "connections": self.connected})
        return ws

    async def _on_text(self, connection: _Connection, data: str) -> None:
        try:
            message = json.loads(data)
        except json.JSONDecodeError:
            message = data
        envelope_id = message.get("envelope_id") if isinstance(message, dict) else None
        future = connection.pending.get(envelope_id) if isinstance(envelope_id, str) else None
        if future is None or future.done():
            _log.warning("Socket Mode message acks nothing pending: %.200s", data)
            self.stray.append(message)
            await self.slack.changed("socket_stray", {"message": message})
            return
        future.set_result(message)

    # -- delivering what people do ---------------------------------------------------------------

    async def deliver(
        self, *, kind: EnvelopeType, payload: Mapping[str, Any], timeout: float | None = None
    ) -> dict[str, Any] | None:
        """Send ``payload`` as an envelope on the newest connection; return the ack's payload (None if bare).

        Raises TimeoutError when no ack comes within ``timeout`` (default: Slack's 3 s), and
        ConnectionError when nobody is connected or the socket closes first: both are what
        the person would see as an error in Slack.
        """
        live = [c for c in self._connections if not c.ws.closed]
        if not live:
            raise ConnectionError("no Socket Mode connection: is the bot running `approval-bot socket`?")
        connection = live[-1]
        envelope_id = str(uuid.uuid4())
        envelope: dict[str, Any] = {"envelope_id": envelope_id, "payload": dict(payload), "type": kind}
        if kind == "events_api":  # an event's ack carries nothing back; Slack says which delivery this is
            envelope |= {"accepts_response_payload": False, "retry_attempt": 0, "retry_reason": ""}
        else:
            envelope["accepts_response_payload"] = True
        record: dict[str, Any] = {"envelope": envelope, "ack": None}
        self.envelopes.append(record)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        connection.pending[envelope_id] = future
        limit = self.ack_timeout if timeout is None else timeout
        try:
            await connection.ws.send_json(envelope)
            ack = await asyncio.wait_for(future, limit)
        except TimeoutError:
            raise TimeoutError(
                f"the bot did not ack the {kind} envelope {envelope_id} within {limit}s over Socket Mode "
                "(Slack would show the person an error)"
            ) from None
        finally:
            connection.pending.pop(envelope_id, None)
        record["ack"] = ack
        await self.slack.changed("socket_ack", {"envelope_id": envelope_id, "ack": ack})
        acked = ack.get("payload")
        if acked is not None and not isinstance(acked, dict):
            self.slack.reject("socket_ack", ack, ApiError("invalid_ack", ["the ack payload must be an object"]))
            return None
        return acked

    async def disconnect(self, *, reason: str = "refresh_requested") -> None:
        """Ask every client to reconnect, as Slack does before it recycles a connection."""
        message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "localslack"}}
        for connection in list(self._connections):
            await connection.ws.send_json(message)

    async def close(self) -> None:
        """Close every WebSocket (going away), so the HTTP server can stop without waiting on them."""
        for connection in list(self._connections):
            await connection.ws.close(code=1001, message=b"server shutting down")


class SocketModeTransport:
    """Delivers ``LocalSlackUser``'s payloads as Socket Mode envelopes instead of HTTP posts."""

    def __init__(self, *, socket_mode: SocketMode, timeout: float | None = None) -> None:
        self.socket_mode = socket_mode
        self.timeout = timeout

    async def deliver(self, *, kind: EnvelopeType, payload: Mapping[str, Any]) -> BotResponse:
        """The ack as a 200 response, so the caller applies it exactly as it applies an HTTP body.

        A bare ack is an empty body (like an empty HTTP 200); Bolt wraps a text answer as
        ``{"text": ...}`` itself, so the payload is always an object here.
        """
        acked = await self.socket_mode.deliver(kind=kind, payload=payload, timeout=self.timeout)
        if acked is None:
            return BotResponse(status=200, body="", text="", headers={})
        return BotResponse(status=200, body=acked, text=json.dumps(acked), headers={})

    async def aclose(self) -> None:
        """Nothing to close: the WebSocket belongs to the bot, not to the user."""
