"""Table creation, store selection, and keeping boto3 off the Slack ack path."""

from __future__ import annotations

import subprocess
import sys
import uuid
from typing import Any

import boto3

from persistence import SqliteRunStore, create_table, open_store
from tests.support.aws import CountingMotoServer


def test_create_table_is_idempotent(moto_server: CountingMotoServer) -> None:
    table, bucket = f"runs-{uuid.uuid4().hex[:8]}", f"snapshots-{uuid.uuid4().hex[:8]}"
    first = create_table(table=table, bucket=bucket)
    second = create_table(table=table, bucket=bucket)
    print("\n" + "\n".join(first + second))

    expiry = "state objects expire after 30 days"
    assert first == [f"created table {table}", "enabled TTL on expires_at", f"created bucket {bucket}; {expiry}"]
    assert second == [f"table {table} exists", "TTL on expires_at already enabled", f"bucket {bucket} exists; {expiry}"]
    (rule,) = boto3.client("s3").get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert rule["Filter"] == {"Prefix": "runs/"} and rule["Expiration"] == {"Days": 30} and rule["Status"] == "Enabled"
    described = boto3.client("dynamodb").describe_table(TableName=table)["Table"]
    assert described["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    sweep, channel, starter = described["GlobalSecondaryIndexes"]
    assert sweep["IndexName"] == "sweep" and channel["IndexName"] == "by_channel"
    assert starter["IndexName"] == "by_starter"
    assert [k["AttributeName"] for k in sweep["KeySchema"]] == ["sweep_pk", "sweep_at"]
    assert [k["AttributeName"] for k in channel["KeySchema"]] == ["channel", "created_at"]
    assert [k["AttributeName"] for k in starter["KeySchema"]] == ["started_by", "created_at"]
    assert all(i["Projection"] == {"ProjectionType": "KEYS_ONLY"} for i in (sweep, channel, starter))


def test_create_table_adds_the_channel_index_to_a_table_from_an_earlier_release(
    moto_server: CountingMotoServer,
) -> None:
    table = f"runs-{uuid.uuid4().hex[:8]}"
    boto3.client("dynamodb").create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": t}
            for n, t in (("pk", "S"), ("sk", "S"), ("sweep_pk", "S"), ("sweep_at", "N"))
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "sweep",
                "KeySchema": [
                    {"AttributeName": "sweep_pk", "KeyType": "HASH"},
                    {"AttributeName": "sweep_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )
    # moto builds an index at once, so both are added in one go; DynamoDB takes one at a time
    # (see the next test).
    lines = create_table(table=table)
    assert "adding index by_channel (DynamoDB builds it in the background)" in lines
    assert "adding index by_starter (DynamoDB builds it in the background)" in lines
    described = boto3.client("dynamodb").describe_table(TableName=table)["Table"]
    assert [i["IndexName"] for i in described["GlobalSecondaryIndexes"]] == ["sweep", "by_channel", "by_starter"]
    assert not any("adding" in line for line in create_table(table=table)), "once"


def test_an_older_table_gets_the_starter_index_and_lists_through_it(moto_server: CountingMotoServer) -> None:
    """A table of the release before ``by_starter`` (sweep and by_channel) gains it, and
    ``started_by`` answers from it."""
    from persistence import aws
    from persistence.dynamodb import DynamoRunStore
    from tests.persistence.conftest import make_run

    table = f"runs-{uuid.uuid4().hex[:8]}"
    client = boto3.client("dynamodb")
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": t}
            for n, t in (("pk", "S"), ("sk", "S"), ("sweep_pk", "S"), ("sweep_at", "N"), ("channel", "S"))
        ]
        + [{"AttributeName": "created_at", "AttributeType": "N"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "sweep",
                "KeySchema": [
                    {"AttributeName": "sweep_pk", "KeyType": "HASH"},
                    {"AttributeName": "sweep_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
            aws._CHANNEL_GSI,
        ],
    )
    store = DynamoRunStore(table)
    store.create(make_run("r-before", started_by="U0ME"))  # written before the index existed
    lines = create_table(table=table)
    assert [line for line in lines if "index" in line] == [
        "adding index by_starter (DynamoDB builds it in the background)"
    ]
    assert [r.run_id for r in store.started_by("U0ME")] == ["r-before"], "DynamoDB backfills an added index"


class _OneIndexAtATime:
    """DynamoDB as it answers an older table's upgrade: an index added stays CREATING."""

    def __init__(self, indexes: dict[str, str]) -> None:
        self.indexes = indexes
        self.added: list[str] = []

    def describe_table(self, **_: object) -> dict[str, object]:
        listed = [{"IndexName": n, "IndexStatus": s} for n, s in self.indexes.items()]
        return {"Table": {"GlobalSecondaryIndexes": listed}}

    def update_table(self, **kwargs: Any) -> None:
        (update,) = kwargs["GlobalSecondaryIndexUpdates"]
        name = update["Create"]["IndexName"]
        assert not [n for n, s in self.indexes.items() if s != "ACTIVE"], "DynamoDB refuses a second one"
        keys = {k["AttributeName"] for k in update["Create"]["KeySchema"]}
        assert keys <= {a["AttributeName"] for a in kwargs["AttributeDefinitions"]}
        self.indexes[name] = "CREATING"
        self.added.append(name)


def test_indexes_are_added_one_at_a_time_and_the_lines_say_to_run_again() -> None:
    from persistence.aws import _add_missing_indexes

    ddb = _OneIndexAtATime({"sweep": "ACTIVE"})
    first = _add_missing_indexes(ddb, "t")  # type: ignore[arg-type]
    assert ddb.added == ["by_channel"]
    assert first == [
        "adding index by_channel (DynamoDB builds it in the background)",
        "index by_starter not added yet: run this again once by_channel is active",
    ]
    assert _add_missing_indexes(ddb, "t")[-1].startswith("index by_starter not added yet")  # type: ignore[arg-type]
    ddb.indexes["by_channel"] = "ACTIVE"
    assert _add_missing_indexes(ddb, "t") == ["adding index by_starter (DynamoDB builds it in the background)"]  # type: ignore[arg-type]
    ddb.indexes["by_starter"] = "ACTIVE"
    assert _add_missing_indexes(ddb, "t") == []  # type: ignore[arg-type]


def test_open_store_picks_the_backend(moto_server: CountingMotoServer, dynamodb_table: str, tmp_path: str) -> None:
    from persistence.dynamodb import DynamoRunStore

    assert isinstance(open_store(table=None, sqlite_path=f"{tmp_path}/r.db"), SqliteRunStore)
    assert isinstance(open_store(table=dynamodb_table, sqlite_path="unused"), DynamoRunStore)


def test_importing_persistence_does_not_import_boto3() -> None:
    code = "import sys, persistence; print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
