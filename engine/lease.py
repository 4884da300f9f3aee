"""Lease tokens and the heartbeat that keeps a lease alive while a pass runs.

A token names one claim, not one process: two passes in the same process (a stalled
holder and the sweeper that took over from it) must not mistake each other's lease
for their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable

from persistence.base import RunStore

logger = logging.getLogger(__name__)


def new_token(owner: str) -> str:
    return f"{owner}/{secrets.token_hex(4)}"


@contextlib.asynccontextmanager
async def heartbeat(
    *, store: RunStore, run_id: str, token: str, lease_seconds: float, clock: Callable[[], float]
) -> AsyncIterator[None]:
    """Renew the lease every third of its length until the block ends.

    A failing renewal is logged and retried, never raised: the pass it protects may
    already have run side effects, and only its save can record them.
    """

    async def beat() -> None:
        while True:
            await asyncio.sleep(lease_seconds / 3)
            try:
                renewed = await asyncio.to_thread(store.renew, run_id, owner=token, lease_until=clock() + lease_seconds)
            except Exception:
                logger.warning("run %s: renewing the lease failed; retrying", run_id, exc_info=True)
                continue
            if not renewed:
                logger.warning("run %s: the lease went to another process", run_id)
                return

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
