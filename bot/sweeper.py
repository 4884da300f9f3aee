"""The periodic sweep that long-lived processes run (Lambda uses a schedule instead)."""

from __future__ import annotations

import asyncio
import logging

from bot.ack_first import AckFirst
from bot.handoff import InProcessHandoff
from bot.services import Services

logger = logging.getLogger(__name__)


async def drain(services: Services, *, handoff: InProcessHandoff, timeout: float) -> None:
    """Wait for handed-off work and graph passes in flight: cutting a pass short means
    another process redoes it after the lease expires, side effects included."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    await handoff.drain(timeout=timeout)
    while services.engine.busy and loop.time() < deadline:
        await asyncio.sleep(0.1)
    if services.engine.busy:
        logger.warning("shutting down with a graph pass still running; its lease will expire and be taken over")


async def sweep_forever(services: Services, *, every: float, ack_first: AckFirst | None = None) -> None:
    """A sweep every ``every`` seconds; each round starts once no request is being acked (``bot.ack_first``)."""
    while True:
        await asyncio.sleep(every)
        if ack_first is not None:
            await ack_first.quiet()
        try:
            resumed = await services.engine.sweep()
        except Exception:  # the store may be briefly unreachable; try again next round
            logger.exception("sweep failed")
            continue
        if resumed:
            logger.info("sweep picked up %d run(s)", len(resumed))
        else:
            logger.debug("sweep round: nothing to pick up")
