"""Each backend's own side of the inbox: SQLite's migration and indexes, DynamoDB's batches
and its error handling (the shared contract is ``test_inbox_contract.py``)."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.policy import AskRules
from engine.records import AskStatus, RunStatus
from engine.store import StoreBroken, StoreUnavailable
from persistence import SqliteRunStore
from tests.persistence.conftest import IN_C1, decision, make_run
from tests.support.aws import CountingMotoServer

# -- SQLite ------------------------------------------------------------------------------


def test_a_file_made_before_the_inbox_is_indexed_on_open(tmp_path: Path) -> None:
    path = str(tmp_path / "old.sqlite3")
    waiting = make_run("r-waiting", snapshot=None)  # two asks pending, open to anyone
    done = make_run("r-done", status=RunStatus.COMPLETED, snapshot=None)
    with sqlite3.connect(path) as conn:  # the schema as it was before the inbox
        conn.execute(
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY, version INTEGER NOT NULL, doc TEXT NOT NULL,"
            " snapshot BLOB, sweep_at REAL)"
        )
        for run in (waiting, done):
            conn.execute(
                "INSERT INTO runs (run_id, version, doc) VALUES (?, ?, ?)",
                (run.run_id, run.version, json.dumps(run.to_dict())),
            )
    conn.close()
    store = SqliteRunStore(path)
    try:
        listed = [(r.run_id, a.key) for r, a in store.pending_for(["anyone"])]
        assert listed == [("r-waiting", "a2"), ("r-waiting", "a1")], "finished runs are not read"
        assert [r.run_id for r in store.started_by("U0")] == ["r-done", "r-waiting"], "the new index too"
        store.close()
        store = SqliteRunStore(path)
        assert len(store.pending_for(["anyone"])) == 2, "filled once, not again"
    finally:
        store.close()


def test_sqlite_inbox_rows_follow_every_write_that_changes_an_ask(tmp_path: Path) -> None:
    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    try:
        run = make_run("r-rows")
        rules = AskRules(approvers=("U0A",))
        run = run.evolve(asks={k: replace(a, rules=rules) for k, a in run.asks.items()})
        store.create(run)  # no index_asks: the create itself keeps the rows exact

        def rows() -> list[tuple[str, str]]:
            return store._conn().execute("SELECT principal, ask_key FROM inbox ORDER BY ask_key").fetchall()

        assert rows() == [("U0A", "a1"), ("U0A", "a2")]
        store.decide("r-rows", "a1", decision("U0A"), now=time.time(), member_of=IN_C1)
        assert rows() == [("U0A", "a2")]
        stored = store.load("r-rows")
        assert stored is not None
        store.save(stored.evolve(status=RunStatus.COMPLETED, asks={}), expected_version=stored.version)
        assert rows() == []
    finally:
        store.close()


def test_sqlite_listings_use_their_indexes(tmp_path: Path) -> None:
    from persistence.sqlite import _CREATED_AT, _STARTED_BY

    store = SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    try:
        conn = store._conn()
        query = f"EXPLAIN QUERY PLAN SELECT doc FROM runs WHERE {_STARTED_BY} = ? ORDER BY {_CREATED_AT} DESC LIMIT 5"
        plan = conn.execute(query, ("U0",)).fetchall()
        assert any("runs_by_starter" in str(row) for row in plan), plan
        assert not any("TEMP B-TREE" in str(row) for row in plan), "ordered by the index, not sorted"
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT created_at, run_id, ask_key FROM inbox WHERE principal = ?"
            " ORDER BY created_at DESC, run_id DESC, ask_key DESC LIMIT 10",
            ("U0A",),
        ).fetchall()
        assert any("COVERING INDEX inbox_by_principal" in str(row) for row in plan), plan
        assert not any("TEMP B-TREE" in str(row) for row in plan), "ordered by the index, not sorted"
    finally:
        store.close()


# -- DynamoDB ------------------------------------------------------------------------------


class _Stub:
    """A DynamoDB client that answers only what a test needs."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(**kwargs: Any) -> Any:
            self.calls.append(name)
            answer = self.answers[name]
            return answer(**kwargs) if callable(answer) else answer

        return call


def test_entries_left_unprocessed_back_off_then_give_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from persistence import dynamo_inbox
    from persistence.dynamodb import DynamoRunStore

    def throttled(**kwargs: Any) -> dict[str, Any]:
        return {"UnprocessedItems": kwargs["RequestItems"]}

    sleeps: list[float] = []
    monkeypatch.setattr(dynamo_inbox.time, "sleep", sleeps.append)
    stub = _Stub(batch_write_item=throttled)
    store = DynamoRunStore("t", client=stub)  # type: ignore[arg-type]
    with pytest.raises(StoreUnavailable):
        store.index_asks(make_run("r1"))
    assert stub.calls == ["batch_write_item"] * dynamo_inbox._ATTEMPTS and len(sleeps) == dynamo_inbox._ATTEMPTS - 1


def test_a_stale_entry_that_cannot_be_deleted_never_fails_the_listing() -> None:
    from persistence.dynamodb import DynamoRunStore

    entry = {
        "pk": {"S": "inbox#U0A"},
        "sk": {"S": "00001800000000.000000#r-gone#a1"},
        "run_id": {"S": "r-gone"},
        "ask_key": {"S": "a1"},
    }

    def refused(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "BatchWriteItem")

    stub = _Stub(query={"Items": [entry]}, batch_get_item={"Responses": {"t": []}}, batch_write_item=refused)
    store = DynamoRunStore("t", client=stub)  # type: ignore[arg-type]
    assert store.pending_for(["U0A"]) == []
    assert stub.calls == ["query", "batch_get_item", "batch_write_item"]


def test_dynamodb_inbox_errors_are_store_errors(moto_server: CountingMotoServer) -> None:
    from persistence.dynamodb import DynamoRunStore

    store = DynamoRunStore("no-such-table")
    for call in (
        lambda: store.index_asks(make_run("r1")),
        lambda: store.pending_for(["U0A"]),
        lambda: store.started_by("U0A"),
        lambda: store.saw_home("U0A", at=1.0),
        lambda: store.home_viewers(since=0),
    ):
        with pytest.raises(StoreBroken):
            call()


def test_entries_expire_with_their_ask_or_after_the_retention(
    moto_server: CountingMotoServer, dynamodb_table: str
) -> None:
    import boto3

    from persistence.dynamodb import DynamoRunStore

    store = DynamoRunStore(dynamodb_table, retention_days=10)
    run = make_run("r-ttl")
    expiring = replace(run.asks["a1"], rules=AskRules(expires_at=2_000_000_000.0))
    run = run.evolve(asks={**run.asks, "a1": expiring})
    assert all(a.status is AskStatus.PENDING for a in run.asks.values())
    store.create(run)
    before = time.time()
    store.index_asks(run)
    scanned = boto3.client("dynamodb").scan(TableName=dynamodb_table)["Items"]
    ttl = {
        i["sk"]["S"].rsplit("#", 1)[1]: int(i["expires_at"]["N"]) for i in scanned if i["pk"]["S"].startswith("inbox#")
    }
    assert ttl["a1"] == 2_000_000_000 + 86400
    assert before + 11 * 86400 - 2 <= ttl["a2"] <= time.time() + 11 * 86400
