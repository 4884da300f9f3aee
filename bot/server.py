"""``approval-bot serve``: Bolt behind aiohttp, plus a health check and the sweeper.

Graph modules are imported at start-up (before the port opens), so no request ever
pays for importing Strands; the ack path stays Bolt and a few string operations.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.app import build_app
from bot.payloads import shape_problem
from bot.services import Services, build_services
from bot.settings import Settings
from bot.sweeper import drain, sweep_forever

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024  # Slack payloads are a few KB; refuse anything absurd early
SERVICES_KEY = web.AppKey("services", Services)
SWEEPER_KEY = web.AppKey("sweeper", asyncio.Task[None])
DRAIN_SECONDS = 25.0  # under the usual 30 s grace period of ECS and Kubernetes


def build_web_app(*, services: Services, app: AsyncApp, sweep_seconds: float = 60.0) -> web.Application:
    web_app = web.Application(client_max_size=MAX_BODY_BYTES)
    web_app[SERVICES_KEY] = services
    verifier = SignatureVerifier(services.settings.slack_signing_secret.get_secret_value())

    async def events(request: web.Request) -> web.Response:
        try:
            body = (await request.read()).decode("utf-8")
        except UnicodeDecodeError:  # not from Slack, and never worth a 5xx
            return web.json_response({"error": "malformed request"}, status=400)
        if not verifier.is_valid_request(body, dict(request.headers)):
            return web.json_response({"error": "invalid signature"}, status=401)
        try:
            bolt_request = AsyncBoltRequest(body=body, query=request.query_string, headers=dict(request.headers))
        except ValueError:
            return web.json_response({"error": "malformed request"}, status=400)
        # After the signature, before Bolt: Bolt's argument injection (listeners and
        # middleware alike) indexes into actions and views unchecked.
        problem = shape_problem(bolt_request.body)
        if problem is not None:
            logger.warning("refused a malformed payload: %s", problem)
            return web.json_response({"error": f"malformed payload: {problem}"}, status=400)
        try:
            response = await app.async_dispatch(bolt_request)
        except Exception:  # a bug of ours; Slack shows the person an error either way
            logger.exception("could not handle a %s request", bolt_request.body.get("type") or "command")
            return web.json_response({"error": "could not handle this request"}, status=400)
        return await to_aiohttp_response(response)

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"ok": True, "graphs_loaded": services.graphs.loaded})

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        await asyncio.to_thread(services.graphs.load)
        app[SWEEPER_KEY] = asyncio.create_task(sweep_forever(services, every=sweep_seconds))
        yield
        await stop_sweeping(app)

    web_app.router.add_post("/slack/events", events)
    web_app.router.add_get("/healthz", health)
    web_app.cleanup_ctx.append(lifecycle)
    return web_app


async def stop_sweeping(app: web.Application) -> None:
    """No new passes from the sweeper; called before draining, and again at clean-up."""
    sweeper = app.get(SWEEPER_KEY)
    if sweeper is not None and not sweeper.done():
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper


async def serve(settings: Settings, *, host: str, port: int, sweep_seconds: float = 60.0) -> None:
    services = build_services(settings)
    web_app = build_web_app(services=services, app=build_app(services), sweep_seconds=sweep_seconds)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    logger.info("approval-bot listening on http://%s:%d/slack/events", host, port)
    print(f"approval-bot listening on http://{host}:{port}/slack/events", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
        await site.stop()  # no new requests; finish what is running
        await stop_sweeping(web_app)
        await drain(services, timeout=DRAIN_SECONDS)
    finally:
        await runner.cleanup()
