"""Closing the SQLite store while a call runs on another thread.

A rehearsal or a server that shuts down closes the store while a worker thread (whose
asyncio task was cancelled away from it) may still be inside a call. sqlite3 crashes the
whole process when a connection is closed under a running statement, so ``close`` waits
for calls in flight, and the store reopens connections if used again.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from persistence import SqliteRunStore
from tests.persistence.conftest import make_run


def test_close_waits_for_a_call_in_flight_and_the_store_opens_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    run = make_run("r-close")
    store.create(run)

    inside, release = threading.Event(), threading.Event()
    real_conn = SqliteRunStore._conn

    def slow_conn(self: SqliteRunStore):  # type: ignore[no-untyped-def]
        conn = real_conn(self)
        if threading.current_thread().name == "caller":
            inside.set()
            release.wait(5)
        return conn

    monkeypatch.setattr(SqliteRunStore, "_conn", slow_conn)
    loaded: list[object] = []
    caller = threading.Thread(target=lambda: loaded.append(store.load(run.run_id)), name="caller")
    caller.start()
    assert inside.wait(5)

    closer = threading.Thread(target=store.close, name="closer")
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "close must wait for the call in flight"
    release.set()
    caller.join(5)
    closer.join(5)
    assert not closer.is_alive()
    assert loaded and getattr(loaded[0], "run_id", None) == run.run_id  # the call finished on an open connection

    again = store.load(run.run_id)  # used again after close: new connections
    assert again is not None and again.run_id == run.run_id
    store.close()
