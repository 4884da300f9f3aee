"""boto3 clients for the DynamoDB store, and the one-off table set-up.

Endpoints come from boto3's own ``AWS_ENDPOINT_URL_DYNAMODB`` / ``AWS_ENDPOINT_URL_S3``
(tests point them at moto). The region comes from ``AWS_REGION`` (what Lambda sets and
what this project documents), falling back to boto3's usual chain. Retries use the
"standard" mode: it retries throttling and transient errors with backoff, which is why
the store's conditional writes recognise their own earlier attempt (see dynamodb.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

SWEEP_INDEX = "sweep"

_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=20,
    # The engine calls the store from a thread pool; let those threads share connections.
    max_pool_connections=32,
)


def _session() -> boto3.session.Session:
    # A session of our own: boto3's default session is not safe to share across threads.
    return boto3.session.Session(region_name=os.environ.get("AWS_REGION") or None)


def dynamodb_client() -> DynamoDBClient:
    return _session().client("dynamodb", config=_CONFIG)


def s3_client() -> S3Client:
    return _session().client("s3", config=_CONFIG)


def create_table(*, table: str, bucket: str | None = None) -> list[str]:
    """Create what the DynamoDB store needs, leaving whatever already exists alone."""
    ddb = dynamodb_client()
    lines: list[str] = []
    try:
        ddb.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "sweep_pk", "AttributeType": "S"},
                {"AttributeName": "sweep_at", "AttributeType": "N"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": SWEEP_INDEX,
                    "KeySchema": [
                        {"AttributeName": "sweep_pk", "KeyType": "HASH"},
                        {"AttributeName": "sweep_at", "KeyType": "RANGE"},
                    ],
                    # The sweeper only needs run ids; the engine re-reads each run.
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        )
        lines.append(f"created table {table}")
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise
        lines.append(f"table {table} exists")
    ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 2, "MaxAttempts": 60})

    ttl = ddb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
        lines.append(f"TTL on {ttl.get('AttributeName')} already enabled")
    else:
        ddb.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
        )
        lines.append("enabled TTL on expires_at")

    if bucket:
        lines.append(_create_bucket(bucket))
    return lines


def _create_bucket(bucket: str) -> str:
    s3 = s3_client()
    try:
        s3.head_bucket(Bucket=bucket)
        return f"bucket {bucket} exists"
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in ("404", "NoSuchBucket", "NotFound"):
            raise
    region = s3.meta.region_name
    if region and region != "us-east-1":
        s3.create_bucket(
            Bucket=bucket,
            CreateBucketConfiguration={"LocationConstraint": region},  # type: ignore[typeddict-item]
        )
    else:
        s3.create_bucket(Bucket=bucket)
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    return f"created bucket {bucket}"
