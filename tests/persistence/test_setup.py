"""Table creation, store selection, and keeping boto3 off the Slack ack path."""

from __future__ import annotations

import subprocess
import sys
import uuid

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
    sweep, channel = described["GlobalSecondaryIndexes"]
    assert sweep["IndexName"] == "sweep" and channel["IndexName"] == "by_channel"
    assert [k["AttributeName"] for k in sweep["KeySchema"]] == ["sweep_pk", "sweep_at"]
    assert [k["AttributeName"] for k in channel["KeySchema"]] == ["channel", "created_at"]


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
    assert "adding index by_channel (DynamoDB builds it in the background)" in create_table(table=table)
    described = boto3.client("dynamodb").describe_table(TableName=table)["Table"]
    assert [i["IndexName"] for i in described["GlobalSecondaryIndexes"]] == ["sweep", "by_channel"]
    assert not any("adding" in line for line in create_table(table=table)), "once"


def test_open_store_picks_the_backend(moto_server: CountingMotoServer, dynamodb_table: str, tmp_path: str) -> None:
    from persistence.dynamodb import DynamoRunStore

    assert isinstance(open_store(table=None, sqlite_path=f"{tmp_path}/r.db"), SqliteRunStore)
    assert isinstance(open_store(table=dynamodb_table, sqlite_path="unused"), DynamoRunStore)


def test_importing_persistence_does_not_import_boto3() -> None:
    code = "import sys, persistence; print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
