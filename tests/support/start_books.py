"""A person who has started a run before, for tests that measure the usual start's cost."""

from __future__ import annotations

import time

from engine.store import RunStore


def had_started_before(store: RunStore, user: str) -> None:
    """Give ``user`` a book of start limits (``engine.start_limits``), as anyone who started a
    run before has: their first start ever costs one request more (the refused UpdateItem,
    then the PutItem that makes the book), the cost tests measure the usual one."""
    store.take_start(user, run_id="an-earlier-run", at=time.time() - 3600, per_minute=0, open_limit=1)
    store.forget_starts(user, run_ids=["an-earlier-run"])
