"""The start limits (``engine.start_limits``) on the real SQLite store, and through ``RunEngine.start``."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from engine import RunEngine
from engine.ports import StartLimited
from engine.records import Run, RunStatus
from engine.start_limits import StartLimits, check_start
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


def test_a_person_whose_latest_runs_are_all_unfinished_is_refused_and_told_which(store: SqliteRunStore) -> None:
    statuses = [RunStatus.WAITING, RunStatus.COMPLETED, RunStatus.RUNNING, RunStatus.WAITING, RunStatus.RESUMING]
    for i, status in enumerate(statuses):
        store.create(_run(f"r{i}", status, at=NOW - 100 + i))
    store.create(_run("other", RunStatus.WAITING, at=NOW, user="U0BOB"))
    limits = StartLimits(per_minute=5, waiting=3)
    with pytest.raises(StartLimited) as limited:
        check_start(store, limits, user=USER, run_id="new", now=NOW)
    assert (limited.value.limit, limited.value.allowed, limited.value.have) == ("waiting", 3, 3)
    assert limited.value.runs == ("r2", "r3", "r4") and limited.value.retry_at is None
    check_start(store, StartLimits(waiting=4), user=USER, run_id="new", now=NOW)  # one of the latest 4 finished
    for i in range(5):  # the refusal took no place in the minute
        check_start(store, StartLimits(per_minute=5), user=USER, run_id=f"n{i}", now=NOW)


def test_a_run_already_started_is_not_counted_against_its_own_retry(store: SqliteRunStore) -> None:
    store.create(_run("r0", RunStatus.WAITING, at=NOW))
    check_start(store, StartLimits(waiting=1), user=USER, run_id="r0", now=NOW)  # the retry meets RunExists later
    with pytest.raises(StartLimited):
        check_start(store, StartLimits(waiting=1), user=USER, run_id="r1", now=NOW)


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
