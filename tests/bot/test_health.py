"""``/healthz``'s check: cached, one probe in flight, a timeout, and a one-line reason."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from bot.health import PROBE_RUN_ID, STORE_FAILED, HealthCheck
from bot.services import Services
from engine.store import StoreUnavailable


@dataclass
class _Graphs:
    loaded: bool = True


@dataclass
class _Store:
    """Counts reads; fails or blocks when told to."""

    reads: list[str] = field(default_factory=list)
    error: Exception | None = None
    gate: threading.Event | None = None

    def load(self, run_id: str, *, snapshot: bool = True) -> Any:
        self.reads.append(run_id)
        if self.gate is not None:
            self.gate.wait(5)
        if self.error is not None:
            raise self.error
        return None


@dataclass
class _Services:
    store: _Store = field(default_factory=_Store)
    graphs: _Graphs = field(default_factory=_Graphs)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _check(services: _Services, clock: _Clock, *, timeout: float = 2.0) -> HealthCheck:
    return HealthCheck(services=cast(Services, services), cache_seconds=2.0, timeout=timeout, clock=clock)


async def test_polls_within_the_cache_cost_one_read() -> None:
    services, clock = _Services(), _Clock()
    check = _check(services, clock)

    results = await asyncio.gather(*(check.check() for _ in range(10)))
    clock.now += 1.9
    results.append(await check.check())

    assert all(r.ok for r in results)
    assert services.store.reads == [PROBE_RUN_ID]
    clock.now += 0.2
    await check.check()
    assert len(services.store.reads) == 2


async def test_a_store_error_is_a_fixed_public_reason_and_its_detail_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """/healthz is public: AWS's message (account id, role, table, region) goes to the log only."""
    services, clock = _Services(), _Clock()
    secret = "User: arn:aws:sts::123456789012:assumed-role/bot/x is not authorized on table/prod-approvals"
    services.store.error = StoreUnavailable(f"{secret}\nmore")
    check = _check(services, clock)
    with caplog.at_level(logging.WARNING, logger="bot.health"):
        found = await check.check()
        clock.now += 5
        await check.check()  # the same cause again: not logged again
    assert not found.ok and found.reason == STORE_FAILED
    assert "123456789012" not in json.dumps(found.body(graphs_loaded=True))
    assert found.body(graphs_loaded=True) == {"ok": False, "graphs_loaded": True, "reason": STORE_FAILED}
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 1 and secret in logged[0], logged

    services = _Services(graphs=_Graphs(loaded=False))
    found = await _check(services, clock).check()
    assert not found.ok and "graph modules are not loaded" in found.reason
    assert services.store.reads == []


async def test_a_store_that_hangs_is_a_timeout_and_is_not_probed_twice() -> None:
    gate = threading.Event()
    services, clock = _Services(store=_Store(gate=gate)), _Clock()
    check = _check(services, clock, timeout=0.05)

    first = await check.check()
    clock.now += 5
    second = await check.check()  # the first probe still runs: waited for again, not doubled

    assert not first.ok and first.reason == "the store did not answer within 0.05 s"
    assert not second.ok and services.store.reads == [PROBE_RUN_ID]
    gate.set()
    clock.now += 5
    await asyncio.sleep(0.05)
    assert (await check.check()).ok


async def test_a_probe_that_fails_after_its_wait_says_why_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """/healthz said only "did not answer within"; when the hung probe fails at last, the log names the cause."""
    gate = threading.Event()
    services, clock = _Services(store=_Store(gate=gate)), _Clock()
    services.store.error = StoreUnavailable("could not connect to the endpoint URL")
    check = _check(services, clock, timeout=0.05)
    with caplog.at_level(logging.WARNING, logger="bot.health"):
        assert not (await check.check()).ok
        gate.set()
        for _ in range(100):
            if caplog.records:
                break
            await asyncio.sleep(0.01)
    assert [r.getMessage() for r in caplog.records] == [
        "/healthz: the store did not answer (StoreUnavailable: could not connect to the endpoint URL)"
    ]
