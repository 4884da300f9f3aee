"""Every backend error reaches the engine as one family: StoreUnavailable or StoreBroken."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import botocore.exceptions
import pytest
from botocore.exceptions import ClientError

from engine.store import StoreBroken, StoreError, StoreUnavailable
from persistence import sqlite as sqlite_store
from persistence.aws import store_error
from tests.persistence.conftest import make_run


def _client_error(code: str, status: int) -> ClientError:
    response = {"Error": {"Code": code, "Message": "x"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "UpdateItem")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "family"),
    [
        (_client_error("ProvisionedThroughputExceededException", 400), StoreUnavailable),
        (_client_error("ThrottlingException", 400), StoreUnavailable),
        (_client_error("InternalServerError", 500), StoreUnavailable),
        (_client_error("SomethingNew", 503), StoreUnavailable),
        (_client_error("ValidationException", 400), StoreBroken),
        (_client_error("AccessDeniedException", 400), StoreBroken),
        (_client_error("ResourceNotFoundException", 400), StoreBroken),
        (botocore.exceptions.ReadTimeoutError(endpoint_url="http://x"), StoreUnavailable),
        (botocore.exceptions.EndpointConnectionError(endpoint_url="http://x"), StoreUnavailable),
        (botocore.exceptions.ConnectionClosedError(endpoint_url="http://x"), StoreUnavailable),
        (botocore.exceptions.NoCredentialsError(), StoreBroken),
    ],
)
def test_botocore_errors_map_to_the_store_family(error: Exception, family: type[StoreError]) -> None:
    mapped = store_error(error)
    assert type(mapped) is family


def test_a_locked_sqlite_file_is_unavailable_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real lock held by another connection: the store raises StoreUnavailable, and
    works again once the lock is gone."""
    monkeypatch.setattr(sqlite_store, "_BUSY_TIMEOUT_S", 0.2)
    path = str(tmp_path / "runs.sqlite3")
    store = sqlite_store.SqliteRunStore(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    failures: list[BaseException] = []

    def create() -> None:  # a thread of its own: a fresh connection with the short timeout
        try:
            store.create(make_run("r-locked"))
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=create)
    thread.start()
    thread.join()
    assert len(failures) == 1 and isinstance(failures[0], StoreUnavailable), failures
    holder.execute("ROLLBACK")
    store.create(make_run("r-locked"))
    assert store.load("r-locked") is not None


def test_a_corrupt_sqlite_file_is_broken(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        sqlite_store.SqliteRunStore(str(path)).load("anything")


def test_a_listing_whose_runs_stay_unprocessed_backs_off_then_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """BatchGetItem answers 200 with keys left unprocessed when throttled: botocore does not
    retry those, so the store does, with a backoff, a few times, then says so."""
    from persistence import dynamo_inbox
    from persistence.dynamodb import DynamoRunStore

    key = {"pk": {"S": "run#r1"}, "sk": {"S": "run"}}

    class Throttled:
        calls = 0

        def query(self, **kwargs: object) -> dict[str, object]:
            return {"Items": [key]}

        def batch_get_item(self, **kwargs: object) -> dict[str, object]:
            Throttled.calls += 1
            return {"Responses": {}, "UnprocessedKeys": {"t": {"Keys": [key]}}}

    sleeps: list[float] = []
    monkeypatch.setattr(dynamo_inbox.time, "sleep", sleeps.append)
    store = DynamoRunStore("t", client=Throttled())  # type: ignore[arg-type]
    with pytest.raises(StoreUnavailable):
        store.recent(channel="C1")
    assert Throttled.calls == dynamo_inbox._ATTEMPTS and len(sleeps) == dynamo_inbox._ATTEMPTS - 1
    assert all(s > 0 for s in sleeps), "every retry waited"


def test_a_store_error_the_store_raises_itself_is_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``StoreErrors`` counts a store call that fails, whatever raised it: DynamoDB throttles a
    batch by leaving items unprocessed (no botocore error), and the store then gives up
    itself. Counted once, though it passes through nested mapped calls."""
    from engine import metrics
    from persistence import dynamo_inbox
    from persistence.dynamodb import DynamoRunStore
    from tests.support.meters import RecordingMeter

    key = {"pk": {"S": "run#r1"}, "sk": {"S": "run"}}

    class Throttled:
        def query(self, **kwargs: object) -> dict[str, object]:
            return {"Items": [key]}

        def batch_get_item(self, **kwargs: object) -> dict[str, object]:
            return {"Responses": {}, "UnprocessedKeys": {"t": {"Keys": [key]}}}

        def __getattr__(self, operation: str) -> object:
            def refused(**kwargs: object) -> None:
                raise _client_error("ProvisionedThroughputExceededException", 400)

            return refused

    monkeypatch.setattr(dynamo_inbox.time, "sleep", lambda seconds: None)
    meter = RecordingMeter()
    previous = metrics.install(meter)
    try:
        store = DynamoRunStore("t", client=Throttled())  # type: ignore[arg-type]
        with pytest.raises(StoreUnavailable):
            store.recent(channel="C1")
        with pytest.raises(StoreError):
            store.save(make_run("r1"), expected_version=0)  # a ClientError, through nested calls
    finally:
        metrics.install(previous)
    assert meter.of("StoreErrors") == [1.0, 1.0]
