"""The periodic sweep that long-lived processes run (Lambda uses a schedule instead)."""

from __future__ import annotations

import asyncio
import logging

from bot.services import Services

logger = logging.getLogger(__name__)


async def sweep_forever(services: Services, *, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            resumed = await services.engine.sweep()
        except Exception:  # the store may be briefly unreachable; try again next round
            logger.exception("sweep failed")
            continue
        if resumed:
            logger.info("sweep picked up %d run(s)", len(resumed))
