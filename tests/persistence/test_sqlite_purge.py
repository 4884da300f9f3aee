"""``SqliteRunStore.purge``: finished runs older than the retention go, everything else stays."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from persistence import RunStatus, SqliteRunStore
from persistence.sqlite import _IS_FINISHED, _UPDATED_AT
from tests.persistence.conftest import make_run

DAY = 86400.0
NOW = 1_800_000_000.0


def test_purge_deletes_only_finished_runs_older_than_the_retention(tmp_path: Path) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    try:
        ages = {"old-done": 31, "old-failed": 40, "old-rejected": 31, "old-cancelled": 31, "new-done": 29}
        statuses = {
            "old-done": RunStatus.COMPLETED,
            "old-failed": RunStatus.FAILED,
            "old-rejected": RunStatus.REJECTED,
            "old-cancelled": RunStatus.CANCELLED,
            "new-done": RunStatus.COMPLETED,
        }
        for run_id, age in ages.items():
            store.create(make_run(run_id, status=statuses[run_id], updated_at=NOW - age * DAY))
        for run_id in ("old-waiting", "old-running"):  # unfinished: never purged, however old
            status = RunStatus.WAITING if run_id == "old-waiting" else RunStatus.RUNNING
            store.create(make_run(run_id, status=status, updated_at=NOW - 400 * DAY))

        assert store.purge(now=NOW, older_than=30 * DAY) == 4
        left = {r for r in [*ages, "old-waiting", "old-running"] if store.load(r) is not None}
        assert left == {"new-done", "old-waiting", "old-running"}
        assert store.purge(now=NOW, older_than=30 * DAY) == 0
        assert store.purge(now=NOW + 2 * DAY, older_than=30 * DAY) == 1  # new-done's turn
    finally:
        store.close()


def test_purge_uses_an_index_also_in_a_file_made_before_it(tmp_path: Path) -> None:
    path = str(tmp_path / "old.sqlite3")
    with sqlite3.connect(path) as conn:  # the schema as it was before purge existed
        conn.execute(
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY, version INTEGER NOT NULL, doc TEXT NOT NULL,"
            " snapshot BLOB, sweep_at REAL)"
        )
    conn.close()
    store = SqliteRunStore(path)
    try:
        store.create(make_run("old", status=RunStatus.COMPLETED, updated_at=NOW - 60 * DAY))
        plan = (
            store._conn()
            .execute(f"EXPLAIN QUERY PLAN DELETE FROM runs WHERE {_IS_FINISHED} AND {_UPDATED_AT} < ?", (NOW,))
            .fetchall()
        )
        assert any("runs_finished" in str(row) for row in plan), plan
        assert store.purge(now=NOW, older_than=30 * DAY) == 1
    finally:
        store.close()


def test_a_channel_listing_uses_an_index_not_a_scan(tmp_path: Path) -> None:
    from persistence.sqlite import _CHANNEL, _CREATED_AT

    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    try:
        query = f"EXPLAIN QUERY PLAN SELECT doc FROM runs WHERE {_CHANNEL} = ? ORDER BY {_CREATED_AT} DESC LIMIT 5"
        plan = store._conn().execute(query, ("C1",)).fetchall()
        assert any("runs_by_channel" in str(row) for row in plan), plan
        assert not any("TEMP B-TREE" in str(row) for row in plan), "ordered by the index, not sorted"
    finally:
        store.close()
