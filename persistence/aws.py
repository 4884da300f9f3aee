"""boto3 clients for the DynamoDB store, and the one-off table set-up.

Endpoints come from boto3's own ``AWS_ENDPOINT_URL_DYNAMODB`` / ``AWS_ENDPOINT_URL_S3``
(tests point them at moto). The region comes from ``AWS_REGION`` (what Lambda sets and
what this project documents), falling back to boto3's usual chain. Retries use the
"standard" mode: it retries throttling and transient errors with backoff, which is why
the store's conditional writes recognise their own earlier attempt (see dynamodb.py).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import boto3
import botocore.exceptions
import botocore.utils
from botocore.config import Config
from botocore.exceptions import ClientError

from engine import metrics
from engine.store import StoreBroken, StoreError, StoreUnavailable

P = ParamSpec("P")
T = TypeVar("T")

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

SWEEP_INDEX = "sweep"
CHANNEL_INDEX = "by_channel"  # a channel's runs, newest first: /graph runs
_CHANNEL_GSI: Any = {
    "IndexName": CHANNEL_INDEX,
    "KeySchema": [
        {"AttributeName": "channel", "KeyType": "HASH"},
        {"AttributeName": "created_at", "KeyType": "RANGE"},
    ],
    # Keys only: neither key changes after the create (a run whose announcement failed
    # loses its channel, and with it its entry), so later writes of a run leave this index
    # alone; a listing reads the runs it names (without their state).
    "Projection": {"ProjectionType": "KEYS_ONLY"},
}
STARTER_INDEX = "by_starter"  # a person's runs, newest first: "my runs"
_STARTER_GSI: Any = {
    "IndexName": STARTER_INDEX,
    "KeySchema": [
        {"AttributeName": "started_by", "KeyType": "HASH"},
        {"AttributeName": "created_at", "KeyType": "RANGE"},
    ],
    # Keys only, like by_channel: neither key ever changes, so no later write of a run
    # touches this index. Only run items carry ``started_by`` (inbox and App Home items
    # do not), so nothing else lands in it.
    "Projection": {"ProjectionType": "KEYS_ONLY"},
}
# Indexes an older table may lack, in the order they are added, with the key attributes
# an UpdateTable must define for each.
_LATER_INDEXES: Any = (
    (_CHANNEL_GSI, [{"AttributeName": "channel", "AttributeType": "S"}]),
    (_STARTER_GSI, [{"AttributeName": "started_by", "AttributeType": "S"}]),
)

_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=20,
    # The engine calls the store from a thread pool; let those threads share connections.
    max_pool_connections=32,
)


class EndpointSettingError(ValueError):
    """An ``AWS_ENDPOINT_URL*`` variable that is not a URL.

    botocore reports it as a bare ``ValueError("Invalid endpoint: ...")``, indistinguishable
    by type from its other errors, and without the variable's name; this one carries both.
    """

    def __init__(self, *, variable: str, url: str) -> None:
        super().__init__(f"{variable}={url!r} is not a URL")
        self.variable = variable
        self.url = url


# The variables botocore takes a service's endpoint from, most specific first.
ENDPOINT_VARIABLES = {
    "dynamodb": ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"),
    "s3": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
}


def _check_endpoint(service: str) -> None:
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() == "true":
        return
    for variable in ENDPOINT_VARIABLES[service]:
        url = os.environ.get(variable)
        if url:
            if not (botocore.utils.is_valid_endpoint_url(url) or botocore.utils.is_valid_ipv6_endpoint_url(url)):
                raise EndpointSettingError(variable=variable, url=url)
            return


def _session() -> boto3.session.Session:
    # A session of our own: boto3's default session is not safe to share across threads.
    return boto3.session.Session(region_name=os.environ.get("AWS_REGION") or None)


def dynamodb_client() -> DynamoDBClient:
    """Raises ``EndpointSettingError`` and botocore's own setting errors (``NoRegionError``, …)."""
    _check_endpoint("dynamodb")
    return _session().client("dynamodb", config=_CONFIG)


def s3_client() -> S3Client:
    """Raises ``EndpointSettingError`` and botocore's own setting errors (``NoRegionError``, …)."""
    _check_endpoint("s3")
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
                {"AttributeName": "channel", "AttributeType": "S"},
                {"AttributeName": "created_at", "AttributeType": "N"},
                {"AttributeName": "started_by", "AttributeType": "S"},
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
                },
                _CHANNEL_GSI,
                _STARTER_GSI,
            ],
        )
        lines.append(f"created table {table}")
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise
        lines.append(f"table {table} exists")
    ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 2, "MaxAttempts": 60})
    lines += _add_missing_indexes(ddb, table)

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


def _add_missing_indexes(ddb: DynamoDBClient, table: str) -> list[str]:
    """Add the indexes a table made by an earlier release lacks, one at a time.

    DynamoDB builds an added index in the background and creates only one per table at a
    time (an UpdateTable adding a second while the first builds is refused). So each is
    added once the indexes before it are active; when one is still being built, the
    lines say to run this again later. The listing that needs an index answers once it is
    active.
    """
    lines: list[str] = []
    for gsi, attributes in _LATER_INDEXES:
        name = gsi["IndexName"]
        status = _index_status(ddb, table)
        if name in status:
            continue
        building = sorted(n for n, s in status.items() if s != "ACTIVE")
        if building:
            lines.append(f"index {name} not added yet: run this again once {', '.join(building)} is active")
            break
        ddb.update_table(
            TableName=table,
            AttributeDefinitions=[*attributes, {"AttributeName": "created_at", "AttributeType": "N"}],
            GlobalSecondaryIndexUpdates=[{"Create": gsi}],
        )
        lines.append(f"adding index {name} (DynamoDB builds it in the background)")
    return lines


def _index_status(ddb: DynamoDBClient, table: str) -> dict[str, str]:
    """Each global index of ``table`` and its status (ACTIVE once it can be queried)."""
    described = ddb.describe_table(TableName=table)["Table"]
    return {i["IndexName"]: i.get("IndexStatus", "ACTIVE") for i in described.get("GlobalSecondaryIndexes", [])}


STATE_PREFIX = "runs/"
STATE_EXPIRY_DAYS = 30  # the sweeper rewrites a waiting run's state a week before this


def _create_bucket(bucket: str) -> str:
    s3 = s3_client()
    try:
        s3.head_bucket(Bucket=bucket)
        _expire_state(s3, bucket)
        return f"bucket {bucket} exists; state objects expire after {STATE_EXPIRY_DAYS} days"
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
    _expire_state(s3, bucket)
    return f"created bucket {bucket}; state objects expire after {STATE_EXPIRY_DAYS} days"


def _expire_state(s3: S3Client, bucket: str) -> None:
    """A lifecycle rule for what a crash or a lost delete leaves behind.

    Live state never gets that old: a waiting run's state is rewritten (a new object)
    before it would expire, and a finished run's is deleted at once.
    """
    s3.put_bucket_lifecycle_configuration(
        Bucket=bucket,
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": "approval-bot-state-expiry",
                    "Filter": {"Prefix": STATE_PREFIX},
                    "Status": "Enabled",
                    "Expiration": {"Days": STATE_EXPIRY_DAYS},
                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                }
            ]
        },
    )


# Error codes that mean "try again later" (DynamoDB's and S3's); anything else a service
# answers is a refusal that retrying will not change.
TRANSIENT_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "RequestLimitExceeded",
        "InternalServerError",
        "InternalFailure",
        "InternalError",
        "ServiceUnavailable",
        "TransactionConflictException",
        "SlowDown",
        "RequestTimeout",
        "503",
        "500",
    }
)


def store_error(exc: Exception) -> StoreError:
    """botocore's errors as the store's family (``StoreUnavailable`` or ``StoreBroken``).

    By the time one reaches here botocore's standard retry mode has already retried it
    (up to 5 retries with backoff), so what is transient here outlasted those retries.
    """
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        text = f"{exc.operation_name}: {code or status}"
        if code in TRANSIENT_CODES or status >= 500:
            return StoreUnavailable(text)
        return StoreBroken(text)
    if isinstance(exc, (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError)):
        return StoreUnavailable(f"{type(exc).__name__}: {exc}")
    return StoreBroken(f"{type(exc).__name__}: {exc}")


def mapped(method: Callable[P, T]) -> Callable[P, T]:
    """Raise botocore's errors from ``method`` as the store's (see ``store_error``), and
    count each failure (``StoreErrors``), the store's own too: a batch DynamoDB throttles
    answers 200 with items left unprocessed, and the store gives up by itself."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except (ClientError, botocore.exceptions.BotoCoreError) as exc:
            raise _counted(store_error(exc)) from exc
        except (StoreUnavailable, StoreBroken) as error:
            _counted(error)
            raise

    return call


def _counted(error: StoreError) -> StoreError:
    """``error``, counted once however many mapped calls it passes through."""
    if not getattr(error, "_counted", False):
        metrics.add(metrics.STORE_ERRORS)
        error._counted = True  # type: ignore[attr-defined]
    return error
