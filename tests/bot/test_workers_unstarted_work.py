"""Only work a worker started counts a delivery when that worker dies (``bot.workers``).

A piece of work that kills its worker (a graph's native crash, an out-of-memory pass) is
given up after ``MAX_DELIVERIES`` starts. The pieces queued behind it in the same worker,
which no worker ever started, are handed again without a count: an acked click or start
is never dropped because of another piece. A piece given up tells its person through its
``response_url``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from bot import workers
from bot.work import PickUp, StartRun
from bot.workers import WorkerPool

REPO = Path(__file__).resolve().parents[2]
POISON = "pppppppppppppppp"
INNOCENT = "iiiiiiiiiiiiiiii"


async def until(predicate: Callable[[], object], *, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_work_queued_behind_a_piece_that_kills_its_worker_is_not_dropped(
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


async def test_a_piece_given_up_tells_its_person_through_its_response_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(workers, "RESTART_DELAYS", (0.0, 0.0))
    told: list[dict[str, object]] = []

    async def answer(request: web.Request) -> web.Response:
        told.append(await request.json())
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    env = {**os.environ, "PYTHONPATH": str(REPO), "STAND_IN_LOG": str(tmp_path / "seen"), "POISON_RUN": POISON}
    pool = WorkerPool(count=1, sweep_seconds=60, env=env, module="tests.support.poison_worker")
    await pool.start()
    start = StartRun(
        run_id=POISON, graph="g", task="t", user="U1", channel="C1", response_url=f"http://127.0.0.1:{port}/hook"
    )
    pool.submit(start)
    try:
        await until(lambda: told)
    finally:
        await pool.drain(timeout=10)
        await runner.cleanup()
    assert caplog.text.count(f"gave up on start work for run {POISON}") == 1, caplog.text
    assert "gave up on your request" in str(told[0]), told
