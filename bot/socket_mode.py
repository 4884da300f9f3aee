"""``approval-bot socket``: the same app over Socket Mode (no public URL needed).

Envelopes go through the same edge as HTTP requests (``bot.edge``), minus the signature
(the socket is the app's own authenticated connection), and every envelope is acked:
one Slack would retry can only come back the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

import aiohttp
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from bot import metrics
from bot.app import build_edge
from bot.edge import SlackEdge
from bot.handoff import InProcessHandoff
from bot.preflight import check_store
from bot.server import DRAIN_SECONDS
from bot.services import build_services
from bot.settings import Settings
from bot.slack_access import ConfigError
from bot.sweeper import drain, sweep_forever


class _EdgeHandler(AsyncSocketModeHandler):
    def __init__(self, edge: SlackEdge, app_token: str) -> None:
        super().__init__(edge.app, app_token)
        self._edge = edge

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        reply = await self._edge.payload(req.payload)
        # A refusal's ``{"error": ...}`` means something over HTTP; over the socket Slack would
        # read it as the message to show, so a refused envelope is acked bare (logged by the edge).
        payload = reply.payload if reply.status < 400 else None
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id, payload=payload))


async def run_socket_mode(settings: Settings, *, sweep_seconds: float = 60.0) -> None:
    """Serve over Socket Mode until SIGINT or SIGTERM, then drain.

    Raises:
        ConfigError: ``SLACK_APP_TOKEN`` is missing or Slack refuses it, or ``SLACK_API_URL``
            cannot be reached; one line each.
    """
    if settings.slack_app_token is None:
        raise ConfigError(
            "socket mode needs SLACK_APP_TOKEN, which is not set: set it to the app-level token (xapp-…, with "
            "connections:write)"
        )
    services = build_services(settings)
    await check_store(services)  # no credentials, no table: one line and exit 2 before connecting
    handoff = InProcessHandoff(services=services)
    edge = build_edge(services, handoff=handoff, ack_first=handoff.ack_first)
    await asyncio.to_thread(services.graphs.load)
    handler = _EdgeHandler(edge, settings.slack_app_token.get_secret_value())
    # Ask for the WebSocket URL once up front: on a refused token the SDK would log and retry forever
    # (the process looking alive), so exit clearly instead. The handler then connects to this URL.
    try:
        handler.client.wss_uri = await handler.client.issue_new_wss_url()
    except SlackApiError as error:
        problem = error.response.get("error")
        await handler.client.close()  # type: ignore[no-untyped-call]
        raise ConfigError(
            f"Slack refused SLACK_APP_TOKEN ({problem}); set it to the app's app-level token (xapp-…)"
        ) from None
    except aiohttp.ClientError as error:
        await handler.client.close()  # type: ignore[no-untyped-call]
        raise ConfigError(
            f"could not reach Slack at SLACK_API_URL={settings.slack_api_url!r} ({type(error).__name__}); "
            "check the URL (unset means https://slack.com/api/) and the network"
        ) from None
    sweeper = asyncio.create_task(sweep_forever(services, every=sweep_seconds, ack_first=handoff.ack_first))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with metrics.flushing() if metrics.start(on=settings.metrics) else contextlib.nullcontext():
            await handler.connect_async()  # type: ignore[no-untyped-call]
            await stop.wait()
            await handler.disconnect_async()  # type: ignore[no-untyped-call]  # no new work; finish what runs
            sweeper.cancel()
            await drain(services, handoff=handoff, timeout=DRAIN_SECONDS)
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        await handler.close_async()  # type: ignore[no-untyped-call]
