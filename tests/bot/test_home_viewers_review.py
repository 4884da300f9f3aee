"""Review of issue 23's App Home viewers read off the pass (``bot.home``): what its docstring promises.

``bot.home`` says only people who opened Home in the last ``VIEWER_DAYS`` are refreshed,
and that a change waits at most one ``VIEWERS_TTL`` for a viewer another process recorded.
A long-lived process breaks both: a re-read keeps every viewer it held before (so nobody
ever ages out), and a change that meets a stale list is dropped for the viewers it does
not know yet, not delayed.
"""

from __future__ import annotations

import asyncio
import time

import pytest

import bot.home as home
from tests.bot.test_home import _Client, _Inbox, _run, _Store, _Workspace

DAY = 86400.0


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _views(store: _Store, client: _Client, clock: _Clock) -> home.RunViews:
    return home.RunViews(
        client=client,  # type: ignore[arg-type]
        store=store,  # type: ignore[arg-type]
        inbox=_Inbox(),  # type: ignore[arg-type]
        directory=None,
        workspace=_Workspace(),  # type: ignore[arg-type]
        clock=clock,
    )


async def _reread_lands(views: home.RunViews, store: _Store, reads: int) -> None:
    for _ in range(100):
        if store.reads >= reads and views._rereading is None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the background read did not land")


async def test_a_viewer_who_stopped_using_home_ages_out_of_a_long_lived_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Dave last opened Home 29 days ago; two days later he is past ``VIEWER_DAYS``. The
    store no longer returns him, yet ``_reread`` merges back every viewer the process held
    (``at > seen.get(u, -1.0)`` is true for anyone the store left out), so his tab is
    published on every change concerning him, for as long as the process lives."""
    monkeypatch.setattr(home, "VIEWERS_TTL", 0.0)  # every list is stale: each change reads again
    clock = _Clock(1_000_000_000.0)
    store, client = _Store({"U0DAVE": clock.now - 29 * DAY}), _Client()
    views = _views(store, client, clock)
    await views.warm()
    clock.now += 2 * DAY  # Dave's last open is now 31 days old
    await views.run_changed(_run("U0OTHER"))  # a change: the stale list is read again
    await _reread_lands(views, store, reads=2)
    assert store.home_viewers(since=clock.now - home.VIEWER_DAYS * DAY) == {}, "the store has let Dave go"
    await views.run_changed(_run("U0DAVE"))
    assert client.published == [], "Dave is refreshed although he has not opened Home in 31 days"


async def test_a_change_after_the_ttl_reaches_a_viewer_another_process_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The docstring: "a change reaching a tab waits at most one VIEWERS_TTL for a viewer
    another process recorded". Bob opened Home through another process; more than a TTL
    later a change concerns him. The stale list serves that change (Bob is skipped) and
    the background read only helps the *next* change, which may come hours later: this
    change never reaches Bob's tab at all."""
    monkeypatch.setattr(home, "VIEWERS_TTL", 0.05)
    clock = _Clock(1_000_000_000.0)
    store, client = _Store({}), _Client()
    views = _views(store, client, clock)
    await views.warm()
    store.viewers["U0BOB"] = clock.now  # another process recorded Bob's open
    await asyncio.sleep(0.1)  # more than one VIEWERS_TTL later
    await views.run_changed(_run("U0BOB"))  # a new ask Bob may decide
    await _reread_lands(views, store, reads=2)
    assert "U0BOB" in client.published, "the change was dropped for Bob, not delayed by at most one VIEWERS_TTL"


async def test_a_cycle_on_a_quiet_server_reads_who_uses_home_no_more_than_the_bench_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bench/README (cost): "No request reads: who uses App Home is read when a server
    starts". The bench starts a fresh bot per cycle and resets its meter after the start,
    and its cycle ends within a minute, so the read lands outside what it counts. On a
    served bot whose runs come more than ``VIEWERS_TTL`` apart, and whose approver takes
    more than ``VIEWERS_TTL`` to click, each pass of the cycle sets off one read: as many
    as before the change (one per TTL per process), only off the pass's path."""
    monkeypatch.setattr(home, "VIEWERS_TTL", 0.05)
    clock = _Clock(1_000_000_000.0)
    store, client = _Store({"U0ALICE": clock.now - 60}), _Client()
    views = _views(store, client, clock)
    await views.warm()  # the server's start, before the meter
    warmed = store.reads
    await asyncio.sleep(0.1)  # the server was quiet for a while before this run
    await views.run_changed(_run("U0ALICE"))  # the first pass: the ask is posted
    await _reread_lands(views, store, reads=warmed + 1)
    await asyncio.sleep(0.1)  # the approver clicks a while later
    await views.run_changed(_run("U0ALICE"))  # the resumed pass: the run ends
    await _reread_lands(views, store, reads=warmed + 2)
    assert store.reads - warmed == 0, f"the cycle read who uses Home {store.reads - warmed} time(s)"


class _SlowStore(_Store):
    """A read that takes a DynamoDB round trip."""

    def home_viewers(self, *, since: float) -> dict[str, float]:
        time.sleep(0.05)
        return super().home_viewers(since=since)


def test_on_lambda_a_pass_leaves_no_read_running_when_its_invocation_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bot.aws_lambda.runtime``: a container "leaves nothing running when an invocation
    returns" (it is frozen then). It runs each event with ``loop.run_until_complete`` on one
    loop; a pass that meets a stale list starts ``_reread_later`` and returns without it, so
    the read is still in its thread when the invocation ends: frozen mid-request, finished
    (or failed) in some later invocation, and then taken as fresh for a whole TTL."""
    monkeypatch.setattr(home, "VIEWERS_TTL", 0.0)
    clock = _Clock(1_000_000_000.0)
    store, client = _SlowStore({}), _Client()
    views = _views(store, client, clock)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(views.run_changed(_run("U0ALICE")))  # the container's first pass reads inline
        loop.run_until_complete(views.run_changed(_run("U0ALICE")))  # a later invocation: the list is stale
        running = [task for task in asyncio.all_tasks(loop) if not task.done()]
        assert running == [], f"{len(running)} task(s) still running as the invocation returned"
    finally:
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        if left:
            loop.run_until_complete(asyncio.gather(*left))
        loop.close()
