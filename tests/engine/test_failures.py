"""When the store, Slack or a snapshot misbehaves, a run ends or recovers; it never
re-runs an approved side effect in a loop and never waits forever for an invisible card.

(Regression tests for an independent review's findings C1, C2, H2, H3.)
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import tests.support.graphs as test_graphs
from engine import PublishError, RunEngine
from engine.ports import PublishUnconfirmed
from engine.records import Decision, Run, RunStatus, Verdict
from engine.store import StoreBroken, StoreUnavailable
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource


def approve(user: str = "U1") -> Decision:
    return Decision(verdict=Verdict.APPROVE, user=user, at=time.time())


YEAR = 365 * 86400.0


def engine(store: SqliteRunStore, publisher: RecordingPublisher, *, lease: float = 900, ahead: float = 0) -> RunEngine:
    # Asks that never expire in these tests: they move the clock on by days to test back-offs.
    made = RunEngine(
        store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=lease, default_expires_after=YEAR
    )
    if ahead:
        made._clock = lambda: time.time() + ahead
    return made


async def test_a_failing_heartbeat_never_discards_a_pass_that_ran(tmp_path: Path, publisher) -> None:
    class FlakyRenew(SqliteRunStore):
        failing = False

        def renew(self, run_id: str, *, owner: str, lease_until: float, now: float | None = None) -> bool:
            if self.failing:
                raise ConnectionError("store unreachable")
            return super().renew(run_id, owner=owner, lease_until=lease_until, now=now)

    store = FlakyRenew(str(tmp_path / "runs.sqlite3"))
    first = engine(store, publisher, lease=3)
    run = await first.start(graph="guarded-write", task="x", user="U0", channel="C1")
    decided = await first.decide(run_id=run.run_id, ask_key=run.pending_asks()[0].key, decision=approve())
    store.failing = True
    test_graphs.DURING_PASS.append(lambda: time.sleep(1.5))  # longer than a heartbeat period

    final = await first.resume(run.run_id, known=decided.run)

    assert final is not None and final.status is RunStatus.COMPLETED
    test_graphs.DURING_PASS.clear()
    store.failing = False
    assert await engine(store, publisher, ahead=10).sweep() == []
    assert test_graphs.markers() == ["writer:x"], "the approved tool ran exactly once"


async def test_a_store_that_cannot_save_ends_the_run_instead_of_looping(tmp_path: Path, publisher) -> None:
    class RefusesBigRuns(SqliteRunStore):
        def save(self, run: Run, *, expected_version: int, write_id: str | None = None) -> Run:
            if run.status is RunStatus.COMPLETED:
                raise StoreBroken("record too large")
            return super().save(run, expected_version=expected_version, write_id=write_id)

    store = RefusesBigRuns(str(tmp_path / "runs.sqlite3"))
    first = engine(store, publisher)
    run = await first.start(graph="guarded-write", task="x", user="U0", channel="C1")
    decided = await first.decide(run_id=run.run_id, ask_key=run.pending_asks()[0].key, decision=approve())

    final = await first.resume(run.run_id, known=decided.run)

    assert final is not None and final.status is RunStatus.FAILED
    assert final.error is not None and "could not be saved" in final.error
    assert publisher.of("finished") == [("finished", run.run_id, "failed")]
    assert await engine(store, publisher, ahead=3600).sweep() == []
    assert test_graphs.markers() == ["writer:x"], "no sweeper re-ran the pass"


async def test_an_unrestorable_snapshot_fails_the_run_once(tmp_path: Path, publisher) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    first = engine(store, publisher)
    run = await first.start(graph="guarded-write", task="x", user="U0", channel="C1")
    stored = store.load(run.run_id)
    assert stored is not None
    store.save(stored.evolve(snapshot=b'{"_internal_state": 5}'), expected_version=stored.version)
    decided = await first.decide(run_id=run.run_id, ask_key=run.pending_asks()[0].key, decision=approve())

    final = await first.resume(run.run_id, known=decided.run)

    assert final is not None and final.status is RunStatus.FAILED
    assert publisher.of("finished") == [("finished", run.run_id, "failed")]
    assert await engine(store, publisher, ahead=3600).sweep() == []


async def test_cards_that_failed_to_post_are_posted_again_by_the_sweeper(tmp_path: Path, publisher) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    original = publisher.post_card

    async def slack_is_down(**kwargs: Any) -> Any:
        raise RuntimeError("Slack answered 503")

    publisher.post_card = slack_is_down
    run = await engine(store, publisher).start(graph="guarded-write", task="x", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    assert run.status is RunStatus.WAITING and ask.card is None
    assert await engine(store, publisher).sweep() == [], "not before the retry pause"

    publisher.post_card = original
    (reposted,) = await engine(store, publisher, ahead=120).sweep()

    assert reposted.status is RunStatus.WAITING and reposted.asks[ask.key].card is not None
    assert publisher.of("card") == [("card", run.run_id, ask.key)]
    assert await engine(store, publisher, ahead=240).sweep() == [], "posted once, then left alone"
    result = await engine(store, publisher).decide(run_id=run.run_id, ask_key=ask.key, decision=approve())
    assert result.accepted


async def test_a_delivery_that_keeps_failing_backs_off_and_recovers(tmp_path: Path, publisher) -> None:
    """Slack refusing a card for good (a channel that is gone) must not be hammered every
    sweep: each failed sweeper round doubles the wait, counted from that round (so the
    run moves on in the index and never starves other runs); a success resets it."""
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    original = publisher.post_card

    async def channel_is_gone(**kwargs: Any) -> Any:
        raise RuntimeError("channel_not_found")

    publisher.post_card = channel_is_gone
    run = await engine(store, publisher).start(graph="guarded-write", task="x", user="U0", channel="C1")
    waits, ahead = [], 61.0
    for _ in range(12):
        (swept,) = await engine(store, publisher, ahead=ahead).sweep()
        assert swept.owes_slack and swept.sweep_at is not None and swept.stalled_at is not None
        waits.append(round(swept.sweep_at - swept.stalled_at))
        assert await engine(store, publisher, ahead=ahead + 1).sweep() == [], f"not before the wait is over {waits}"
        ahead = swept.sweep_at - time.time() + 1
    assert waits[:3] == [120, 240, 480], "each failed round doubles the wait"
    assert waits[-1] == 60 * 2**10, "capped, and still counted from the last round"

    publisher.post_card = original
    (delivered,) = await engine(store, publisher, ahead=ahead).sweep()
    assert not delivered.owes_slack and delivered.stalled == 0
    (ask,) = delivered.pending_asks()
    assert delivered.sweep_at == ask.next_deadline(), "next due when the ask needs a reminder, not before"
    assert run.run_id == delivered.run_id


async def test_a_save_that_keeps_failing_while_the_lease_holds_ends_the_run_within_the_retry_window(
    tmp_path: Path, publisher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renewals succeed (the lease stays live) but the save itself keeps failing: the save
    is not retried for ever, the run ends failed and its card is closed."""
    from engine import saving

    monkeypatch.setattr(saving, "RETRY_WINDOW", 2.0)

    class SavesUnavailable(SqliteRunStore):
        def save(self, run: Run, *, expected_version: int, write_id: str | None = None) -> Run:
            if run.status is RunStatus.COMPLETED:
                raise StoreUnavailable("throttled")
            return super().save(run, expected_version=expected_version, write_id=write_id)

    store = SavesUnavailable(str(tmp_path / "runs.sqlite3"))
    run = await engine(store, publisher).start(graph="guarded-write", task="x", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    await engine(store, publisher).decide(run_id=run.run_id, ask_key=ask.key, decision=approve())
    started = time.monotonic()
    final = await engine(store, publisher).resume(run.run_id)

    assert final is not None and final.status is RunStatus.FAILED
    assert time.monotonic() - started < 10, "gave up after the retry window, not the 900 s lease"
    assert test_graphs.markers() == ["writer:x"]


async def test_a_run_without_a_thread_is_announced_by_the_sweeper_and_its_messages_follow(
    tmp_path: Path, publisher
) -> None:
    """A takeover whose announcement failed leaves a run with no thread: it still owes the
    announcement (then its cards, or its end), and two sweepers racing leave one thread."""
    import asyncio

    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    run = await engine(store, publisher).start(graph="guarded-write", task="x", user="U0", channel="C1")
    stored = store.load(run.run_id)
    assert stored is not None
    (ask,) = stored.pending_asks()
    bare = {ask.key: replace(ask, card=None, shown=None)}
    store.save(stored.evolve(thread=None, asks=bare), expected_version=stored.version)  # as a takeover left it
    assert (threadless := store.load(run.run_id, snapshot=False)) is not None and threadless.owes_slack
    publisher.posted.clear()
    publisher.events.clear()

    slow_find, slow_start = publisher.find_posted, publisher.run_started

    async def find_posted(**kwargs: Any) -> Any:
        await asyncio.sleep(0.01)  # both sweepers look before either posts
        return await slow_find(**kwargs)

    async def run_started(**kwargs: Any) -> Any:
        await asyncio.sleep(0.01)
        return await slow_start(**kwargs)

    publisher.find_posted, publisher.run_started = find_posted, run_started
    await asyncio.gather(engine(store, publisher, ahead=61).sweep(), engine(store, publisher, ahead=61).sweep())

    after = store.load(run.run_id, snapshot=False)
    assert after is not None and after.thread is not None and not after.owes_slack
    assert len(publisher.of("started")) == 2 and len(publisher.of("retracted")) == 1, "the losing thread is deleted"
    assert publisher.of("retracted")[0][2] != after.thread.ts, "the recorded thread stays"
    assert len(publisher.of("card")) == 1 and after.asks[ask.key].card is not None


async def test_a_run_that_ended_without_a_thread_still_gets_announced_and_its_end_posted(
    tmp_path: Path, publisher
) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    run = await engine(store, publisher).start(graph="boom", task="x", user="U0", channel="C1")
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None and stored.status is RunStatus.FAILED
    store.save(stored.evolve(thread=None, final=None), expected_version=stored.version)
    publisher.events.clear()
    publisher.posted.clear()
    (swept,) = await engine(store, publisher, ahead=61).sweep()
    assert swept.thread is not None and swept.final is not None and not swept.owes_slack
    assert [e[0] for e in publisher.events if e[0] in ("started", "finished")] == ["started", "finished"]


async def test_a_run_whose_announcement_failed_at_the_start_owes_nothing(tmp_path: Path, publisher) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))

    async def not_in_channel(**kwargs: Any) -> Any:
        raise PublishError("not_in_channel")

    publisher.run_started = not_in_channel
    with pytest.raises(PublishError):
        await engine(store, publisher).start(graph="guarded-write", task="x", user="U0", channel="C1")
    assert await engine(store, publisher, ahead=10**6).sweep() == [], "the requester was told; nothing to post"


async def test_an_announcement_slack_took_without_answering_in_time_is_adopted(tmp_path: Path, publisher) -> None:
    """Slack posted the announcement but its answer came after the client's timeout: the
    run goes on in that message's thread, instead of failing under it."""
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    took = publisher.run_started

    async def answer_lost(**kwargs: Any) -> Any:
        await took(**kwargs)  # in the channel, but the answer never came
        raise PublishUnconfirmed("no answer from Slack: TimeoutError")

    publisher.run_started = answer_lost
    run = await engine(store, publisher).start(graph="guarded-write", task="x", user="U0", channel="C1")

    assert run.status is RunStatus.WAITING and run.thread == publisher.posted[(run.run_id, "")]
    assert len(publisher.of("started")) == 1, "looked for, not posted twice"
    assert len(publisher.of("card")) == 1
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None and stored.thread == run.thread and not stored.owes_slack


async def test_an_announcement_slack_never_answered_is_posted_once_slack_is_back(tmp_path: Path, publisher) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    took = publisher.run_started
    down = True

    async def no_answer(**kwargs: Any) -> Any:
        if down:
            raise PublishUnconfirmed("ratelimited")
        return await took(**kwargs)

    publisher.run_started = no_answer
    run = await engine(store, publisher).start(graph="guarded-write", task="x", user="U0", channel="C1")
    assert run.status is RunStatus.WAITING and run.thread is None, "the run went on; its announcement is owed"
    assert publisher.of("card") == [] and test_graphs.markers() == []
    down = False
    (swept,) = await engine(store, publisher, ahead=61).sweep()
    assert swept.thread is not None and not swept.owes_slack
    assert len(publisher.of("started")) == 1 and len(publisher.of("card")) == 1
