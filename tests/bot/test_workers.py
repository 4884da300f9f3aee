"""The worker pool (``bot.workers``) with stand-in workers: real processes and pipes, no bot.

What the pool promises the serving process: ``submit`` never waits and refuses past its
bound; a worker that dies is restarted and given again what it had not reported done, up
to ``MAX_DELIVERIES`` times; a drain lets the workers finish and exit. The real worker
(``bot.worker``) runs in ``tests/e2e/test_workers.py``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot import workers
from bot.handoff import HandoffFailed
from bot.work import PickUp
from bot.workers import WorkerPool

REPO = Path(__file__).resolve().parents[2]
RUN = "aaaaaaaaaaaaaaaa"


def pool(tmp_path: Path, *, count: int = 1, die: str = "", max_pending: int = 10) -> WorkerPool:
    env = {**os.environ, "PYTHONPATH": str(REPO), "STAND_IN_LOG": str(tmp_path / "seen"), "STAND_IN_DIE": die}
    return WorkerPool(
        count=count, sweep_seconds=60, env=env, module="tests.support.stand_in_worker", max_pending=max_pending
    )


def seen(tmp_path: Path) -> list[tuple[int, int]]:
    """(pid, seq) for each line a worker read, in order."""
    path = tmp_path / "seen"
    lines = path.read_text().split() if path.exists() else []
    return [(int(pid), int(seq)) for pid, seq in zip(lines[::2], lines[1::2], strict=True)]


async def until(predicate: Callable[[], object], *, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_work_goes_to_a_worker_and_is_reported_done_and_a_drain_ends_the_workers(tmp_path: Path) -> None:
    workers_ = pool(tmp_path, count=2)
    await workers_.start()
    for _ in range(4):
        workers_.submit(PickUp(run_id=RUN))
    await until(lambda: workers_.pending == 0)
    assert sorted(seq for _, seq in seen(tmp_path)) == [1, 2, 3, 4]
    assert len({pid for pid, _ in seen(tmp_path)}) == 2, "spread over both workers"
    pids = workers_.pids()
    await workers_.drain(timeout=10)
    assert workers_.pids() == [None, None]
    assert all(pid is not None and not os.path.exists(f"/proc/{pid}") for pid in pids)
    with pytest.raises(HandoffFailed):
        workers_.submit(PickUp(run_id=RUN))


async def test_past_the_bound_submit_refuses_at_once(tmp_path: Path) -> None:
    workers_ = pool(tmp_path, max_pending=2)  # not started: nothing is ever reported done
    workers_.submit(PickUp(run_id=RUN))
    workers_.submit(PickUp(run_id=RUN))
    with pytest.raises(HandoffFailed, match="too much work in hand"):
        workers_.submit(PickUp(run_id=RUN))
    assert workers_.pending == 2


async def test_a_worker_that_dies_is_restarted_and_given_its_work_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "RESTART_DELAYS", (0.0, 0.0))
    workers_ = pool(tmp_path, die="first")
    await workers_.start()
    workers_.submit(PickUp(run_id=RUN))
    await until(lambda: workers_.pending == 0)
    (first, seq), (second, again) = seen(tmp_path)
    assert seq == again == 1 and first != second, "the same work, in the restarted worker"
    assert workers_.restarts == 1
    await workers_.drain(timeout=10)


async def test_work_that_kills_every_worker_is_given_up_after_max_deliveries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(workers, "RESTART_DELAYS", (0.0, 0.0))
    workers_ = pool(tmp_path, die="always")
    await workers_.start()
    workers_.submit(PickUp(run_id=RUN))
    await until(lambda: workers_.pending == 0)
    assert [seq for _, seq in seen(tmp_path)] == [1] * workers.MAX_DELIVERIES
    assert f"gave up on pick_up work for run {RUN}" in caplog.text
    await workers_.drain(timeout=10)
