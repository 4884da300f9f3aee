"""Hostile review of ``bot.workers``: work that kills its worker takes innocent work down with it.

The pool counts a delivery when it writes a line, and drops every piece a worker had in
hand once it was written ``MAX_DELIVERIES`` times, whatever killed the worker. A piece that
kills its worker (a graph's native crash, an out-of-memory pass) therefore has the pool drop
the other pieces queued in the same worker, though none of them failed, and some were never
even read: a click acked and never recorded, a start acked and never created, and nobody
told. With ``--workers 1`` (what docs/running.md advises on two cores) that is every piece
handed off while the poison piece is retried.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot import workers
from bot.work import PickUp
from bot.workers import WorkerPool

REPO = Path(__file__).resolve().parents[2]
POISON = "pppppppppppppppp"
INNOCENT = "iiiiiiiiiiiiiiii"


async def until(predicate: Callable[[], object], *, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_innocent_work_queued_behind_a_poison_piece_is_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(workers, "RESTART_DELAYS", (0.0, 0.0))
    log = tmp_path / "seen"
    env = {**os.environ, "PYTHONPATH": str(REPO), "STAND_IN_LOG": str(log), "POISON_RUN": POISON}
    pool = WorkerPool(count=1, sweep_seconds=60, env=env, module="tests.support.poison_worker")
    await pool.start()
    pool.submit(PickUp(run_id=POISON))
    pool.submit(PickUp(run_id=INNOCENT))  # e.g. a click acked right after the poison piece
    try:
        await until(lambda: pool.pending == 0)
    finally:
        await pool.drain(timeout=10)
    read = [line.split()[1] for line in log.read_text().splitlines()]
    assert read.count(POISON) == workers.MAX_DELIVERIES, read
    assert f"gave up on pick_up work for run {INNOCENT}" not in caplog.text, "innocent work dropped"
    assert INNOCENT in read, "the innocent piece was dropped without any worker ever reading it"
