"""The start limits (``engine.start_limits``) on the real SQLite store, and through ``RunEngine.start``."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from engine import RunEngine
from engine.ports import StartLimited
from engine.records import Run, RunStatus
from engine.start_limits import GONE_AFTER, OPEN_CAP, StartLimits, check_start
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource

NOW = 1_800_000_010.0  # 10 s into a minute
USER = "U0ALICE"


def _run(run_id: str, status: RunStatus, *, at: float, user: str = USER) -> Run:
    return Run(
        run_id=run_id,
        graph="g",
        task="t",
        started_by=user,
        status=status,
        version=0,
        created_at=at,
        updated_at=at,
    )


def test_the_per_minute_share_is_taken_then_refused_until_the_next_minute(store: SqliteRunStore) -> None:
    limits = StartLimits(per_minute=3)
    for i in range(3):
        check_start(store, limits, user=USER, run_id=f"r{i}", now=NOW + i)
    with pytest.raises(StartLimited) as limited:
        check_start(store, limits, user=USER, run_id="r3", now=NOW + 40)
    assert (limited.value.limit, limited.value.allowed, limited.value.have) == ("per_minute", 3, 3)
    assert limited.value.retry_at == NOW - 10 + 60, "the next clock minute"
    check_start(store, limits, user="U0BOB", run_id="b0", now=NOW + 40)  # a share per person
    check_start(store, limits, user=USER, run_id="r3", now=NOW + 50)  # the next minute


def test_a_start_delivered_twice_takes_one_place(store: SqliteRunStore) -> None:
    limits = StartLimits(per_minute=2)
    check_start(store, limits, user=USER, run_id="r0", now=NOW)
    check_start(store, limits, user=USER, run_id="r0", now=NOW + 1)
    check_start(store, limits, user=USER, run_id="r1", now=NOW + 2)
    with pytest.raises(StartLimited):
        check_start(store, limits, user=USER, run_id="r2", now=NOW + 3)


def _open(store: SqliteRunStore, statuses: list[RunStatus], *, limits: StartLimits, at: float = NOW - 600) -> None:
    """Runs r0.. started (each in a minute of its own) and recorded with these statuses."""
    for i, status in enumerate(statuses):
        check_start(store, limits, user=USER, run_id=f"r{i}", now=at + 60 * i)
        store.create(_run(f"r{i}", status, at=at + 60 * i))


def test_a_person_with_their_share_of_unfinished_runs_is_refused_and_told_which(store: SqliteRunStore) -> None:
    limits = StartLimits(per_minute=5, waiting=3)
    _open(store, [RunStatus.WAITING, RunStatus.RUNNING, RunStatus.RESUMING], limits=limits)
    check_start(store, limits, user="U0BOB", run_id="other", now=NOW)  # a share per person
    with pytest.raises(StartLimited) as limited:
        check_start(store, limits, user=USER, run_id="new", now=NOW)
    assert (limited.value.limit, limited.value.allowed, limited.value.have) == ("waiting", 3, 3)
    assert limited.value.runs == ("r0", "r1", "r2") and limited.value.retry_at is None
    for i in range(5):  # the refusal took no place in the minute
        check_start(store, StartLimits(per_minute=5), user=USER, run_id=f"n{i}", now=NOW)


def test_finished_runs_leave_lazily_and_make_room(store: SqliteRunStore) -> None:
    limits = StartLimits(per_minute=5, waiting=3)
    _open(store, [RunStatus.WAITING, RunStatus.WAITING, RunStatus.WAITING], limits=limits)
    with pytest.raises(StartLimited):
        check_start(store, limits, user=USER, run_id="new", now=NOW)
    run = store.load("r1", snapshot=False)
    assert run is not None
    store.save(run.evolve(status=RunStatus.COMPLETED, asks={}), expected_version=run.version)
    check_start(store, limits, user=USER, run_id="new", now=NOW)  # one finished: room again
    with pytest.raises(StartLimited) as limited:
        check_start(store, limits, user=USER, run_id="newer", now=NOW)
    assert limited.value.runs == ("r0", "r2", "new")


def test_a_run_recorded_nowhere_is_gone_only_after_a_while(store: SqliteRunStore) -> None:
    limits = StartLimits(waiting=2)
    check_start(store, limits, user=USER, run_id="never-made", now=NOW - GONE_AFTER + 10)  # its create failed
    check_start(store, limits, user=USER, run_id="on-its-way", now=NOW - 1)  # its create has not landed yet
    with pytest.raises(StartLimited) as limited:
        check_start(store, limits, user=USER, run_id="r-third", now=NOW - 0.5)
    assert limited.value.have == 2, "within the while: taken as a start still creating its run"
    check_start(store, limits, user=USER, run_id="r-third", now=NOW + 11)  # never-made: gone now
    with pytest.raises(StartLimited) as limited:
        check_start(store, limits, user=USER, run_id="r-fourth", now=NOW + 11)
    assert limited.value.runs == ("on-its-way", "r-third")


def test_a_run_already_started_is_not_counted_against_its_own_retry(store: SqliteRunStore) -> None:
    limits = StartLimits(per_minute=1, waiting=1)
    check_start(store, limits, user=USER, run_id="r0", now=NOW)
    store.create(_run("r0", RunStatus.WAITING, at=NOW))
    check_start(store, limits, user=USER, run_id="r0", now=NOW + 1)  # the retry meets RunExists later
    with pytest.raises(StartLimited):
        check_start(store, limits, user=USER, run_id="r1", now=NOW + 1)


def test_without_a_waiting_limit_the_open_runs_are_capped_without_a_read(store: SqliteRunStore) -> None:
    limits = StartLimits(per_minute=1000)
    for i in range(OPEN_CAP + 3):
        check_start(store, limits, user=USER, run_id=f"r{i:03d}", now=NOW + i / 1000)
    book = store.take_start(USER, run_id="peek", at=NOW + 1, per_minute=0, open_limit=1)
    assert 0 < len(book.open) <= OPEN_CAP and f"r{OPEN_CAP + 2:03d}" in book.open, "the newest kept"
    check_start(store, limits, user=USER, run_id=f"r{OPEN_CAP + 2:03d}", now=NOW + 2)  # still a retry


class Recording:
    """The real store, with the names of the calls made to it."""

    def __init__(self, store: SqliteRunStore) -> None:
        self.store, self.calls = store, list[str]()

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.store, name)


def test_a_start_is_one_store_call_and_a_clean_up_only_when_the_book_is_full(store: SqliteRunStore) -> None:
    limits = StartLimits(per_minute=1, waiting=2)
    recording = Recording(store)
    check_start(recording, limits, user="U0BOB", run_id="b0", now=NOW)  # type: ignore[arg-type]
    assert recording.calls == ["take_start"], "one write, nothing else"
    with pytest.raises(StartLimited):
        check_start(recording, limits, user="U0BOB", run_id="b1", now=NOW)  # type: ignore[arg-type]
    assert recording.calls == ["take_start"] * 2, "a full minute is refused without a read"
    _open(store, [RunStatus.WAITING, RunStatus.COMPLETED], limits=limits)
    recording.calls.clear()
    check_start(recording, limits, user=USER, run_id="r2", now=NOW + 60)  # type: ignore[arg-type]
    assert recording.calls == ["take_start", "run_statuses", "forget_starts", "take_start"]
    recording.calls.clear()
    with pytest.raises(StartLimited):
        check_start(recording, limits, user=USER, run_id="r3", now=NOW + 120)  # type: ignore[arg-type]
    assert recording.calls == ["take_start", "run_statuses"], "nothing finished: nothing to forget"


class NoStore:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was asked for {name}")


def test_no_limits_ask_the_store_nothing() -> None:
    check_start(NoStore(), StartLimits(), user=USER, run_id="r0", now=NOW)  # type: ignore[arg-type]
    assert not StartLimits().any and StartLimits(waiting=1).any


@pytest.mark.parametrize("limits", [{"per_minute": -1}, {"waiting": -1}, {"waiting": 101}])
def test_limits_are_checked(limits: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="start limits"):
        StartLimits(**limits)


async def test_a_limited_start_records_and_posts_nothing_and_is_logged(
    store: SqliteRunStore, publisher: RecordingPublisher, caplog: pytest.LogCaptureFixture
) -> None:
    engine = RunEngine(
        store=store,
        graphs=RegistrySource(),
        publisher=publisher,
        start_limits=StartLimits(per_minute=1),
        clock=lambda: NOW,  # both starts in one minute
    )
    first = await engine.start(graph="guarded-write", task="one", user=USER, channel="C1")
    assert first.status is RunStatus.WAITING
    events = list(publisher.events)
    with caplog.at_level(logging.INFO, logger="approval_bot.audit"), pytest.raises(StartLimited):
        await engine.start(graph="guarded-write", task="two", user=USER, channel="C1", run_id="r-two")
    assert store.load("r-two") is None and publisher.events == events
    assert [r.run_id for r in store.started_by(USER)] == [first.run_id]
    assert any('"refused_start"' in r.getMessage() and "r-two" in r.getMessage() for r in caplog.records)
