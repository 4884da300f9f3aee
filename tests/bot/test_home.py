"""App Home's viewers: read at most once a ``VIEWERS_TTL`` per process, and only current ones.

A change refreshes the Home tabs of the people it concerns who opened Home lately. The list
of those people is one store item, read inline when this process's copy is older than
``VIEWERS_TTL``: a change never serves from a list older than that (a viewer another
process recorded is reached by the first change after one TTL), people whose last open is
past ``VIEWER_DAYS`` age out, and nothing is left running when a change has been handled
(a Lambda container is frozen between invocations).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import bot.home as home
from engine.records import Run, RunStatus

DAY = 86400.0


class _Store:
    """Who opened Home, as the store has it; counts its reads."""

    def __init__(self, viewers: dict[str, float]) -> None:
        self.viewers = viewers
        self.reads = 0

    def home_viewers(self, *, since: float) -> dict[str, float]:
        self.reads += 1
        return {u: at for u, at in self.viewers.items() if at >= since}

    def started_by(self, user: str, *, limit: int) -> list[Run]:
        return []


class _Client:
    def __init__(self) -> None:
        self.published: list[str] = []

    async def views_publish(self, *, user_id: str, view: Any) -> None:
        self.published.append(user_id)


class _Inbox:
    async def waiting_for(self, user: str) -> list[Any]:
        return []


class _Workspace:
    async def identity(self) -> None:
        raise RuntimeError("no links in this test")


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _run(started_by: str) -> Run:
    return Run(
        run_id="r1", graph="g", task="t", started_by=started_by, status=RunStatus.RUNNING,
        version=1, created_at=1.0, updated_at=1.0,
    )  # fmt: skip


def _views(store: _Store, client: _Client, clock: _Clock) -> home.RunViews:
    home_views = home.RunViews(
        client=client,  # type: ignore[arg-type]
        store=store,  # type: ignore[arg-type]
        inbox=_Inbox(),  # type: ignore[arg-type]
        directory=None,
        workspace=_Workspace(),  # type: ignore[arg-type]
        clock=clock,
    )
    return home_views


@pytest.fixture(autouse=True)
def _no_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(home, "MIN_INTERVAL", 0.0)


async def test_changes_within_a_ttl_read_the_viewers_once() -> None:
    clock = _Clock(1_000_000_000.0)
    store, client = _Store({"U0ALICE": clock.now - 60}), _Client()
    views = _views(store, client, clock)
    await views.run_changed(_run("U0ALICE"))
    await views.run_changed(_run("U0ALICE"))
    assert (store.reads, client.published) == (1, ["U0ALICE", "U0ALICE"])
    await views.run_changed(_run("U0NOBODY"))  # never opened Home: no tab published
    assert client.published == ["U0ALICE", "U0ALICE"]


async def test_the_first_change_after_a_ttl_reaches_a_viewer_another_process_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(home, "VIEWERS_TTL", 0.05)
    clock = _Clock(1_000_000_000.0)
    store, client = _Store({}), _Client()
    views = _views(store, client, clock)
    await views.run_changed(_run("U0BOB"))
    assert client.published == []
    store.viewers["U0BOB"] = clock.now  # Bob opened Home through another process
    await asyncio.sleep(0.1)
    await views.run_changed(_run("U0BOB"))
    assert client.published == ["U0BOB"]


async def test_a_viewer_who_stopped_using_home_ages_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(home, "VIEWERS_TTL", 0.0)  # every change reads again
    clock = _Clock(1_000_000_000.0)
    store, client = _Store({"U0DAVE": clock.now - 29 * DAY}), _Client()
    views = _views(store, client, clock)
    await views.run_changed(_run("U0DAVE"))
    assert client.published == ["U0DAVE"]
    clock.now += 2 * DAY  # Dave's last open is now 31 days old
    await views.run_changed(_run("U0DAVE"))
    assert client.published == ["U0DAVE"], "refreshed although he has not opened Home in 31 days"


def test_a_change_leaves_nothing_running_when_it_is_handled(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a Lambda invocation runs it: its loop must hold no task once the change returns."""
    monkeypatch.setattr(home, "VIEWERS_TTL", 0.0)
    clock = _Clock(1_000_000_000.0)
    store, client = _Store({"U0ALICE": clock.now}), _Client()
    views = _views(store, client, clock)
    loop = asyncio.new_event_loop()
    try:
        for _ in range(2):
            loop.run_until_complete(views.run_changed(_run("U0ALICE")))
            assert [t for t in asyncio.all_tasks(loop) if not t.done()] == []
    finally:
        loop.close()
    assert store.reads == 2
