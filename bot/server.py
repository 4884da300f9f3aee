"""``approval-bot serve``: Bolt behind aiohttp, plus a health check and the sweeper.

Graph modules are imported at start-up (before the port opens), so no request ever
pays for importing Strands; the ack path stays Bolt and a few string operations.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
from collections.abc import AsyncIterator, Mapping

from aiohttp import web

from bot import metrics
from bot.app import build_edge
from bot.edge import MAX_BODY_BYTES
from bot.handoff import InProcessHandoff
from bot.health import Health, HealthCheck, no_worker_reason
from bot.preflight import check_store
from bot.services import Services, build_services
from bot.settings import Settings
from bot.slack_access import ConfigError
from bot.sweeper import drain, sweep_forever
from bot.workers import WorkerHandoff, WorkerPool
from engine import log_context

logger = logging.getLogger(__name__)

SERVICES_KEY = web.AppKey("services", Services)
HANDOFF_KEY = web.AppKey[InProcessHandoff | WorkerHandoff]("handoff")
SWEEPER_KEY = web.AppKey("sweeper", asyncio.Task[None])
DRAIN_SECONDS = 25.0  # under the usual 30 s grace period of ECS and Kubernetes


def build_web_app(
    *,
    services: Services,
    sweep_seconds: float = 60.0,
    process_before_response: bool = False,
    workers: int = 0,
    worker_env: Mapping[str, str] | None = None,
) -> web.Application:
    """The server's routes; with ``workers`` (``bot.workers``), work and the sweeper run in
    that many worker processes (their environment ``worker_env``, default this one's)."""
    web_app = web.Application(client_max_size=MAX_BODY_BYTES)
    handoff: InProcessHandoff | WorkerHandoff
    if workers:
        handoff = WorkerHandoff(pool=WorkerPool(count=workers, sweep_seconds=sweep_seconds, env=worker_env))
        edge = build_edge(services, handoff=handoff, process_before_response=process_before_response)
    else:
        handoff = InProcessHandoff(services=services)
        edge = build_edge(
            services, handoff=handoff, ack_first=handoff.ack_first, process_before_response=process_before_response
        )
    web_app[SERVICES_KEY] = services
    web_app[HANDOFF_KEY] = handoff

    async def events(request: web.Request) -> web.Response:
        # Slack's requests carry no id: one of ours names the request in its lines and in
        # those of the work it hands off (a task copies the context it was made in).
        with log_context.about(request_id=secrets.token_hex(6)):
            reply = await edge.http(body=await request.read(), headers=request.headers)
        return web.Response(status=reply.status, body=reply.body.encode(), headers=reply.headers)

    checker = HealthCheck(services=services)

    async def health(_: web.Request) -> web.Response:
        """200 when the graphs are loaded and the store answers, else 503 with a one-line reason.

        With workers, ``"workers"`` counts those ready now (running, graphs loaded), and none
        ready is a 503 too: the acks would go on while the work only waits, or is given up.
        A load balancer or an orchestrator must see that and replace the process."""
        found = await checker.check()
        if isinstance(handoff, WorkerHandoff) and found.ok and not handoff.pool.ready:
            found = Health(ok=False, reason=no_worker_reason(handoff.pool.failing_at_start))
        body = found.body(graphs_loaded=services.graphs.loaded)
        if isinstance(handoff, WorkerHandoff):
            body["workers"] = handoff.pool.ready
        return web.json_response(body, status=200 if found.ok else 503)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        try:
            if isinstance(handoff, WorkerHandoff):
                # Workers first: they load the graphs while this process does (the policies of
                # a modal's decision, recorded in its ack, need them here too); one of them sweeps.
                await handoff.pool.start()
            await asyncio.to_thread(services.graphs.load)
            if isinstance(handoff, InProcessHandoff):
                app[SWEEPER_KEY] = asyncio.create_task(
                    sweep_forever(services, every=sweep_seconds, ack_first=handoff.ack_first)
                )
            yield
        finally:
            await stop_sweeping(app)
            if isinstance(handoff, WorkerHandoff):
                await handoff.pool.kill()  # after a drain there is nothing left to kill

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


async def serve(settings: Settings, *, host: str, port: int, sweep_seconds: float = 60.0, workers: int = 0) -> None:
    """Serve until SIGINT or SIGTERM, then drain.

    Everything that can be misconfigured fails before the port opens: the store is asked
    once (``bot.preflight``: credentials, region, table, bucket, SQLite path), the graph
    modules are imported (``GraphModuleError``),
    and a port that cannot be bound is a ``ConfigError`` naming it.

    ``workers``: graph passes and the sweeper run in that many worker processes
    (``bot.workers``), which SIGTERM drains too; 0 runs them all in this process.

    The "listening on" line is logged once, through logging like every other line (no
    ``print`` beside it): at ``LOG_LEVEL=WARNING`` or above it is not shown.
    """
    services = build_services(settings)
    await check_store(services)  # no credentials, no table: one line and exit 2, not a 200 /healthz
    web_app = build_web_app(services=services, sweep_seconds=sweep_seconds, workers=workers)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as error:
        await runner.cleanup()
        raise ConfigError(
            f"cannot listen on {host}:{port} ({error.strerror or error}); choose another --port (or PORT) or --host"
        ) from None
    logger.info(
        "approval-bot listening on http://%s:%d/slack/events%s",
        host,
        port,
        f" with {workers} worker process(es)" if workers else "",
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with metrics.flushing() if metrics.start(on=settings.metrics) else contextlib.nullcontext():
            await stop.wait()
            await site.stop()  # no new requests; finish what is running
            await stop_sweeping(web_app)
            await drain(services, handoff=web_app[HANDOFF_KEY], timeout=DRAIN_SECONDS)
    finally:
        await runner.cleanup()
