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
from dataclasses import dataclass

from engine.store import RunStore
from engine.threads import in_lease_thread

logger = logging.getLogger(__name__)


def new_token(owner: str) -> str:
    return f"{owner}/{secrets.token_hex(4)}"


@dataclass
class Beat:
    """What the heartbeat knows: until when the lease surely holds (the last renewal)."""

    until: float
    lost: bool = False


@contextlib.asynccontextmanager
async def heartbeat(
    *, store: RunStore, run_id: str, token: str, until: float, lease_seconds: float, clock: Callable[[], float]
) -> AsyncIterator[Beat]:
    """Renew the lease every third of its length for as long as the process holds the run.

    That is the whole hold: delivering card updates, the pass, and the save with its
    retries (a slow store can take longer than a lease). A failing renewal is logged and
    retried, never raised: the pass it protects may already have run side effects, and
    only its save can record them. ``Beat.until`` tells the save how long it may retry.
    """
    state = Beat(until=until)

    async def beat() -> None:
        while True:
            # Every third of the lease, and never later than a third before it runs out: a
            # hold that begins late (its claim made a while ago) renews at once, since a lease
            # that ran out is not renewed (another process may be claiming it).
            await asyncio.sleep(max(0.0, min(lease_seconds / 3, state.until - clock() - lease_seconds / 3)))
            now = clock()
            next_until = now + lease_seconds
            try:
                renewed = await in_lease_thread(store.renew, run_id, owner=token, lease_until=next_until, now=now)
            except Exception:
                logger.warning("run %s: renewing the lease failed; retrying", run_id, exc_info=True)
                continue
            if not renewed:
                logger.warning("run %s: the lease went to another process", run_id)
                state.lost = True
                return
            state.until = next_until

    task = asyncio.create_task(beat())
    try:
        yield state
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
