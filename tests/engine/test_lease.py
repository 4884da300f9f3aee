"""The heartbeat keeps renewing even when every other worker thread is stuck in the store."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from engine.lease import heartbeat
from engine.records import RunStatus
from engine.threads import in_thread
from persistence.sqlite import SqliteRunStore
from tests.persistence.conftest import make_run


async def test_renewals_run_while_the_store_pool_is_saturated(tmp_path: Path) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    store.create(make_run("r", status=RunStatus.RESUMING, lease_owner="me", lease_until=time.time() + 1))
    release = threading.Event()
    stuck = [asyncio.create_task(in_thread(release.wait, 10)) for _ in range(40)]  # an outage's worth of calls
    await asyncio.sleep(0.05)
    try:
        async with heartbeat(
            store=store, run_id="r", token="me", until=time.time() + 1, lease_seconds=0.6, clock=time.time
        ) as beat:
            first = beat.until
            await asyncio.sleep(0.7)
            assert beat.until > first and not beat.lost, "renewed although every store thread was busy"
    finally:
        release.set()
        await asyncio.gather(*stuck)
    stored = store.load("r", snapshot=False)
    assert stored is not None and (stored.lease_until or 0) > first
