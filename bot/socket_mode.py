"""``approval-bot socket``: the same app over Socket Mode (no public URL needed)."""

from __future__ import annotations

import asyncio
import contextlib

from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

from bot.app import build_app
from bot.services import build_services
from bot.settings import Settings
from bot.sweeper import sweep_forever


async def run_socket_mode(settings: Settings, *, sweep_seconds: float = 60.0) -> None:
    if settings.slack_app_token is None:
        raise SystemExit("approval-bot socket needs SLACK_APP_TOKEN (an xapp- token with connections:write)")
    services = build_services(settings)
    app = build_app(services)
    await asyncio.to_thread(services.graphs.load)
    handler = AsyncSocketModeHandler(app, settings.slack_app_token.get_secret_value())
    sweeper = asyncio.create_task(sweep_forever(services, every=sweep_seconds))
    try:
        await handler.start_async()  # type: ignore[no-untyped-call]
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
