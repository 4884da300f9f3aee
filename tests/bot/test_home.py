"""App Home's viewers: read at a server's start, never on a pass's path once read."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.home import VIEWERS_TTL, RunViews
from engine.records import Run, RunStatus


class _Store:
    """Who opened Home, as the store has it; counts its reads."""

    def __init__(self, viewers: dict[str, float]) -> None:
        self.viewers = viewers
        self.reads = 0
        self.gate: asyncio.Event | None = None

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


def _run(started_by: str) -> Run:
    return Run(
        run_id="r1", graph="g", task="t", started_by=started_by, status=RunStatus.RUNNING,
        version=1, created_at=1.0, updated_at=1.0,
    )  # fmt: skip


def _views(store: _Store, client: _Client, now: float) -> RunViews:
    return RunViews(
        client=client,  # type: ignore[arg-type]
        store=store,  # type: ignore[arg-type]
        inbox=_Inbox(),  # type: ignore[arg-type]
        directory=None,
        workspace=_Workspace(),  # type: ignore[arg-type]
        clock=lambda: now,
    )


async def test_a_warmed_process_refreshes_tabs_without_reading_the_store() -> None:
    now = 1_000_000.0
    store, client = _Store({"U0ALICE": now - 60}), _Client()
    views = _views(store, client, now)
    await views.warm()
    assert store.reads == 1
    await views.run_changed(_run("U0ALICE"))
    assert client.published == ["U0ALICE"]
    assert store.reads == 1, "a pass read the viewers again"


async def test_a_process_that_never_read_them_reads_once_inline() -> None:
    now = 1_000_000.0
    store, client = _Store({"U0ALICE": now - 60}), _Client()
    views = _views(store, client, now)
    await views.run_changed(_run("U0ALICE"))
    await views.run_changed(_run("U0ALICE"))
    assert (store.reads, client.published) == (1, ["U0ALICE", "U0ALICE"])


async def test_a_stale_list_serves_while_a_background_read_replaces_it() -> None:
    now = 1_000_000.0
    store, client = _Store({"U0ALICE": now - 60}), _Client()
    views = _views(store, client, now)
    await views.warm()
    store.viewers["U0BOB"] = now - 1  # recorded by another process meanwhile
    read_at, seen = views._viewers  # type: ignore[misc]
    views._viewers = (read_at - VIEWERS_TTL - 1, seen)  # a minute and more ago
    await views.run_changed(_run("U0BOB"))
    assert client.published == [], "the stale list does not know Bob yet: no inline read"
    for _ in range(50):  # the background read lands
        if store.reads == 2:
            break
        await asyncio.sleep(0.01)
    assert store.reads == 2
    await views.run_changed(_run("U0BOB"))
    assert client.published == ["U0BOB"]


async def test_an_open_this_process_saw_survives_a_reread() -> None:
    now = 1_000_000.0
    store, client = _Store({}), _Client()
    views = _views(store, client, now)
    await views.warm()
    views._viewers[1]["U0CAROL"] = now  # type: ignore[index]  # as ``opened`` records it
    await views.warm()  # the store has not caught up (its write failed)
    await views.run_changed(_run("U0CAROL"))
    assert client.published == ["U0CAROL"]
