"""The fault proxy breaks AWS the way resilience tests need, and otherwise stays out of the way."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.support.aws import REGION, CountingMotoServer
from tests.support.faults import FaultProxy


def _client(service: str, proxy: FaultProxy, *, attempts: int = 2) -> Any:
    """A client through the proxy with few, quick retries, so a test waits seconds, not minutes."""
    config = Config(
        retries={"mode": "standard", "total_max_attempts": attempts},
        connect_timeout=5,
        read_timeout=15,
        s3={"addressing_style": "path"},
    )
    return boto3.client(service, region_name=REGION, endpoint_url=proxy.url, config=config)  # type: ignore[call-overload]


def _key(sk: str = "s") -> dict[str, dict[str, str]]:
    return {"pk": {"S": "p"}, "sk": {"S": sk}}


@pytest.fixture
def ddb(fault_proxy: FaultProxy, moto_server: CountingMotoServer, table: str) -> Any:
    client = _client("dynamodb", fault_proxy)
    moto_server.reset_counts()
    return client


def test_requests_pass_through_untouched(ddb: Any, table: str, fault_proxy: FaultProxy) -> None:
    ddb.put_item(TableName=table, Item={**_key(), "v": {"N": "1"}})
    assert ddb.get_item(TableName=table, Key=_key())["Item"]["v"] == {"N": "1"}
    assert fault_proxy.events == []


def test_a_500_window_fails_writes_through_retries_then_lets_them_through(
    ddb: Any, table: str, fault_proxy: FaultProxy, moto_server: CountingMotoServer
) -> None:
    window = 2.0
    fault_proxy.fail(operations={"PutItem", "UpdateItem"}, for_seconds=window)
    started = time.monotonic()

    with pytest.raises(ClientError) as failed:
        ddb.put_item(TableName=table, Item=_key())
    assert failed.value.response["Error"]["Code"] == "InternalServerError"
    assert failed.value.response["ResponseMetadata"]["RetryAttempts"] == 1
    assert fault_proxy.count("fail", "PutItem") == 2  # the first attempt and botocore's retry
    assert "dynamodb.PutItem" not in moto_server.counts()  # never reached moto
    assert ddb.get_item(TableName=table, Key=_key()).get("Item") is None  # reads are not affected

    time.sleep(max(0.0, started + window - time.monotonic()) + 0.05)
    ddb.put_item(TableName=table, Item=_key())
    assert "Item" in ddb.get_item(TableName=table, Key=_key())
    assert fault_proxy.count("fail") == 2


def test_a_single_500_is_absorbed_by_botocores_retry(
    ddb: Any, table: str, fault_proxy: FaultProxy, moto_server: CountingMotoServer
) -> None:
    fault_proxy.fail(operations={"PutItem"}, times=1)

    response = ddb.put_item(TableName=table, Item=_key())

    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    assert fault_proxy.count("fail") == 1
    assert moto_server.counts()["dynamodb.PutItem"] == 1


def test_a_delayed_request_takes_at_least_the_delay(ddb: Any, table: str, fault_proxy: FaultProxy) -> None:
    fault_proxy.delay(operations={"GetItem"}, seconds=1.0, times=1)

    started = time.monotonic()
    ddb.get_item(TableName=table, Key=_key())
    assert time.monotonic() - started >= 1.0

    started = time.monotonic()
    ddb.get_item(TableName=table, Key=_key())
    assert time.monotonic() - started < 1.0  # times=1: only the first one
    assert fault_proxy.count("delay", "GetItem") == 1


def test_a_lost_response_makes_a_conditional_retry_meet_its_own_write(
    ddb: Any, table: str, fault_proxy: FaultProxy, moto_server: CountingMotoServer
) -> None:
    fault_proxy.lose_response(
        operations={"PutItem"}, times=1, when=lambda body: "ConditionExpression" in body
    )  # only conditional puts

    with pytest.raises(ClientError) as failed:
        ddb.put_item(
            TableName=table,
            Item={**_key(), "v": {"N": "1"}},
            ConditionExpression="attribute_not_exists(pk)",
        )

    assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert fault_proxy.count("lose_response", "PutItem") == 1
    assert moto_server.counts()["dynamodb.PutItem"] == 2  # the first attempt landed, the retry found it
    assert ddb.get_item(TableName=table, Key=_key())["Item"]["v"] == {"N": "1"}
    assert moto_server.capacity()["by_operation"]["dynamodb.PutItem"]["write_units"] == 2  # both are billed


def test_the_predicate_picks_which_requests_lose_their_response(
    ddb: Any, table: str, fault_proxy: FaultProxy, moto_server: CountingMotoServer
) -> None:
    fault_proxy.lose_response(operations={"UpdateItem"}, times=1, when=lambda body: body["Key"]["sk"]["S"] == "b")
    update = {"UpdateExpression": "ADD n :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}

    ddb.update_item(TableName=table, Key=_key("a"), **update)
    ddb.update_item(TableName=table, Key=_key("b"), **update)

    assert fault_proxy.count("lose_response") == 1
    # An unconditional ADD retried after a lost answer applies twice: what idempotency guards against.
    assert ddb.get_item(TableName=table, Key=_key("a"))["Item"]["n"] == {"N": "1"}
    assert ddb.get_item(TableName=table, Key=_key("b"))["Item"]["n"] == {"N": "2"}


def test_clear_switches_faults_off(ddb: Any, table: str, fault_proxy: FaultProxy) -> None:
    fault_proxy.fail(operations={"PutItem"})
    with pytest.raises(ClientError):
        ddb.put_item(TableName=table, Item=_key())

    fault_proxy.clear()
    ddb.put_item(TableName=table, Item=_key())


def test_s3_faults_match_by_method(fault_proxy: FaultProxy, s3_bucket: str, moto_server: CountingMotoServer) -> None:
    once = _client("s3", fault_proxy, attempts=1)
    s3 = _client("s3", fault_proxy)
    fault_proxy.fail(service="s3", methods={"PUT"}, times=1)

    with pytest.raises(ClientError) as failed:
        once.put_object(Bucket=s3_bucket, Key="k", Body=b"hello")
    assert failed.value.response["Error"]["Code"] == "InternalError"

    s3.put_object(Bucket=s3_bucket, Key="k", Body=b"hello")
    fault_proxy.lose_response(service="s3", methods={"GET"}, path=r"/k$", times=1)
    assert s3.get_object(Bucket=s3_bucket, Key="k")["Body"].read() == b"hello"  # after a retry
    assert s3.head_object(Bucket=s3_bucket, Key="k")["ContentLength"] == 5
    assert fault_proxy.count("fail") == 1 and fault_proxy.count("lose_response") == 1


def test_fault_env_sends_a_subprocess_through_the_proxy(
    fault_env: dict[str, str], aws_env: dict[str, str], fault_proxy: FaultProxy
) -> None:
    assert fault_env["AWS_ENDPOINT_URL_DYNAMODB"] == fault_env["AWS_ENDPOINT_URL_S3"] == fault_proxy.url
    others = {k: v for k, v in fault_env.items() if not k.startswith("AWS_ENDPOINT_URL_")}
    assert others == {k: v for k, v in aws_env.items() if not k.startswith("AWS_ENDPOINT_URL_")}
    assert fault_proxy.env(s3=False)["AWS_ENDPOINT_URL_S3"] == aws_env["AWS_ENDPOINT_URL_S3"]
