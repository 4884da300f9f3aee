"""The periodic sweep that long-lived processes run (Lambda uses a schedule instead)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from bot.ack_first import AckFirst
from bot.cli_errors import explain
from bot.health import store_reason
from bot.services import Services
from engine.store import StoreError

logger = logging.getLogger(__name__)


class Draining(Protocol):
    """A handoff that can wait for what it was handed: tasks here, or worker processes."""

    async def drain(self, *, timeout: float) -> None: ...


async def drain(services: Services, *, handoff: Draining, timeout: float) -> None:
    """Wait for handed-off work and graph passes in flight: cutting a pass short means
    another process redoes it after the lease expires, side effects included. With
    workers, this process's own part is a modal's decision being recorded in its ack."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    await handoff.drain(timeout=timeout)
    while services.engine.busy and loop.time() < deadline:
        await asyncio.sleep(0.1)
    if services.engine.busy:
        logger.warning("shutting down with a graph pass still running; its lease will expire and be taken over")


async def sweep_forever(
    services: Services, *, every: float, ack_first: AckFirst | None = None, enabled: Callable[[], bool] | None = None
) -> None:
    """A sweep every ``every`` seconds; each round starts once no request is being acked (``bot.ack_first``).

    ``enabled``: whether this process sweeps now, asked before each round (a worker of
    ``serve --workers`` sweeps while the pool tells it to): a round under way finishes,
    since cancelling it would cut a pass short.

    A failing round is logged once per kind of failure, not once a minute: one line when
    the cause is known (``bot.cli_errors``: a table deleted, credentials expired; or the
    store's own ``StoreError``), a traceback the first time when it is not (a bug), and
    one line when sweeping works again.
    """
    failing: str | None = None
    while True:
        await asyncio.sleep(every)
        if enabled is not None and not enabled():
            continue
        if ack_first is not None:
            await ack_first.quiet()
        try:
            resumed = await services.engine.sweep()
        except Exception as error:  # the store may be briefly unreachable; try again next round
            failing = _log_failure(error, previous=failing, every=every)
            continue
        if failing is not None:
            logger.warning("sweep works again")
            failing = None
        if resumed:
            logger.info("sweep picked up %d run(s)", len(resumed))
        else:
            logger.debug("sweep round: nothing to pick up")


def _log_failure(error: Exception, *, previous: str | None, every: float) -> str:
    """Log ``error`` unless it is the same kind as the round before; returns its kind."""
    known = explain(error) is not None or isinstance(error, StoreError)
    kind = store_reason(error) if known else f"{type(error).__module__}.{type(error).__qualname__}"
    if kind == previous:
        logger.debug("sweep failed again: %s", kind)
    elif known:
        logger.error("sweep failed: %s (retrying every %gs; logged again only if the cause changes)", kind, every)
    else:
        logger.exception("sweep failed (retrying every %gs; logged again only if the cause changes)", every)
    return kind
