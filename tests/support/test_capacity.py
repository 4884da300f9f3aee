"""The capacity meter charges what DynamoDB would bill, not what moto reports.

Each test talks to moto's server through boto3 clients tagged with an app id, as the bot
process is, and reads the bill from ``moto_server.capacity(app_id=...)``.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.support.aws import REGION, CountingMotoServer
from tests.support.capacity import item_size, read_units, write_units

APP_ID = "capacity-under-test"


def _client(service: str) -> Any:
    config = Config(user_agent_appid=APP_ID)  # type: ignore[call-arg]  # the stubs predate the option
    return boto3.client(service, region_name=REGION, config=config)  # type: ignore[call-overload]


def _item(pk: str, sk: str, size: int, **extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An item of exactly ``size`` bytes as DynamoDB counts them, padded in a ``data`` string."""
    item: dict[str, dict[str, Any]] = {"pk": {"S": pk}, "sk": {"S": sk}, **extra, "data": {"S": ""}}
    item["data"] = {"S": "x" * (size - item_size(item))}
    assert item_size(item) == size
    return item


@pytest.fixture
def ddb(moto_server: CountingMotoServer, table: str) -> Any:
    client = _client("dynamodb")
    moto_server.reset_counts()  # the table's creation is not part of any test's bill
    return client


def _bill(moto_server: CountingMotoServer) -> dict[str, Any]:
    return moto_server.capacity(app_id=APP_ID)


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "héllo"}, 6),  # UTF-8 bytes
        ({"N": "123.45"}, 4),  # 5 significant digits: 3 bytes, plus 1
        ({"N": "-0.00100"}, 3),  # 1 significant digit, plus 1, plus 1 for the sign
        ({"N": "0"}, 1),
        ({"N": "1E+10"}, 2),
        ({"B": b"abc"}, 3),
        ({"B": "YWJj"}, 3),  # base64 on the wire, counted decoded
        ({"BOOL": True}, 1),
        ({"NULL": True}, 1),
        ({"SS": ["a", "bc"]}, 3),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + (1 + 2) + (1 + 2)),
        ({"M": {"k": {"S": "v"}}}, 3 + (1 + 1 + 1)),
    ],
)
def test_attribute_sizes_follow_dynamodbs_rules(value: dict[str, Any], size: int) -> None:
    assert item_size({"a": value}) == 1 + size


def test_unit_arithmetic() -> None:
    assert write_units(0) == 1 and write_units(1024) == 1 and write_units(1025) == 2
    assert write_units(3584, 100) == 4 and write_units(100, 3584) == 4
    assert read_units(0, consistent=True) == 1 and read_units(4097, consistent=True) == 2
    assert read_units(10 * 1024, consistent=False) == 1.5


def test_writes_are_charged_per_started_kilobyte_of_the_larger_state(
    moto_server: CountingMotoServer, ddb: Any, table: str
) -> None:
    ddb.put_item(TableName=table, Item=_item("p", "s", 3584))  # 3.5 KB
    assert _bill(moto_server)["write_units"] == 4

    moto_server.reset_counts()
    ddb.update_item(
        TableName=table,
        Key={"pk": {"S": "p"}, "sk": {"S": "s"}},
        UpdateExpression="SET n = :n",
        ExpressionAttributeValues={":n": {"N": "1"}},
    )
    assert _bill(moto_server)["write_units"] == 4  # changing one number pays for the whole item

    moto_server.reset_counts()
    ddb.delete_item(TableName=table, Key={"pk": {"S": "p"}, "sk": {"S": "s"}})
    bill = _bill(moto_server)
    assert bill["write_units"] == 4  # priced on the item as it was
    assert bill["by_operation"] == {"dynamodb.DeleteItem": {"requests": 1, "write_units": 4, "read_units": 0.0}}
    assert bill["unmetered"] == 0


def test_a_write_whose_condition_fails_is_charged_too(moto_server: CountingMotoServer, ddb: Any, table: str) -> None:
    ddb.put_item(TableName=table, Item=_item("p", "s", 3584))
    moto_server.reset_counts()

    with pytest.raises(ClientError) as failed:
        ddb.put_item(TableName=table, Item=_item("p", "s", 100), ConditionExpression="attribute_not_exists(pk)")
    assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert _bill(moto_server)["write_units"] == 4  # the size of the item that stood in the way

    moto_server.reset_counts()
    with pytest.raises(ClientError):
        ddb.update_item(
            TableName=table,
            Key={"pk": {"S": "nobody"}, "sk": {"S": "s"}},
            UpdateExpression="SET n = :n",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":n": {"N": "1"}},
        )
    assert _bill(moto_server)["write_units"] == 1  # nothing there: the minimum


def test_a_refused_request_is_not_charged(moto_server: CountingMotoServer, ddb: Any) -> None:
    with pytest.raises(ClientError):
        ddb.put_item(TableName="no-such-table", Item=_item("p", "s", 100))
    assert _bill(moto_server)["write_units"] == 0


def test_get_item_reads_are_charged_per_started_4kb(moto_server: CountingMotoServer, ddb: Any, table: str) -> None:
    ddb.put_item(TableName=table, Item=_item("p", "s", 10 * 1024))
    key = {"pk": {"S": "p"}, "sk": {"S": "s"}}
    moto_server.reset_counts()

    ddb.get_item(TableName=table, Key=key, ConsistentRead=True)
    assert _bill(moto_server)["read_units"] == 3

    moto_server.reset_counts()
    ddb.get_item(TableName=table, Key=key)  # eventually consistent: half
    assert _bill(moto_server)["read_units"] == 1.5

    moto_server.reset_counts()
    ddb.get_item(TableName=table, Key=key, ProjectionExpression="pk", ConsistentRead=True)
    assert _bill(moto_server)["read_units"] == 3  # a projection saves bandwidth, not capacity

    moto_server.reset_counts()
    ddb.get_item(TableName=table, Key={"pk": {"S": "nobody"}, "sk": {"S": "s"}}, ConsistentRead=True)
    assert _bill(moto_server)["read_units"] == 1  # a miss still costs the minimum


def test_batch_writes_are_charged_per_item(moto_server: CountingMotoServer, ddb: Any, table: str) -> None:
    items = [_item("p", "a", 1024), _item("p", "b", 2500), _item("p", "c", 100)]  # 1 + 3 + 1
    ddb.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": item}} for item in items]})
    assert _bill(moto_server)["write_units"] == 5

    moto_server.reset_counts()
    keys = [{"pk": item["pk"], "sk": item["sk"]} for item in items]
    ddb.batch_write_item(RequestItems={table: [{"DeleteRequest": {"Key": key}} for key in keys]})
    assert _bill(moto_server)["write_units"] == 5


def test_transactional_writes_cost_double(moto_server: CountingMotoServer, ddb: Any, table: str) -> None:
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": _item("p", "a", 1500)}},  # 2, doubled
            {"Put": {"TableName": table, "Item": _item("p", "b", 200)}},  # 1, doubled
        ]
    )
    assert _bill(moto_server)["write_units"] == 6


def test_a_query_is_charged_on_the_total_it_read(moto_server: CountingMotoServer, ddb: Any, table: str) -> None:
    for sk in ("a", "b", "c"):
        ddb.put_item(TableName=table, Item=_item("p", sk, 2048))  # 6 KB in all
    ddb.put_item(TableName=table, Item=_item("other", "a", 50_000))
    query = {
        "TableName": table,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": "p"}},
    }
    moto_server.reset_counts()

    ddb.query(**query, ConsistentRead=True)
    assert _bill(moto_server)["read_units"] == 2

    moto_server.reset_counts()
    ddb.query(**query)
    assert _bill(moto_server)["read_units"] == 1

    moto_server.reset_counts()
    filtered = ddb.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        FilterExpression="attribute_exists(nothing_has_this)",
        ExpressionAttributeValues={":p": {"S": "p"}},
        ConsistentRead=True,
    )
    assert filtered["Items"] == []
    assert _bill(moto_server)["read_units"] == 2  # filtered out after being read, and paid for

    moto_server.reset_counts()
    ddb.query(**query, Limit=1, ConsistentRead=True)
    assert _bill(moto_server)["read_units"] == 1


def test_only_the_tagged_clients_requests_are_on_its_bill(
    moto_server: CountingMotoServer, ddb: Any, table: str
) -> None:
    untagged = boto3.client("dynamodb", region_name=REGION)
    untagged.put_item(TableName=table, Item=_item("p", "u", 5000))
    ddb.put_item(TableName=table, Item=_item("p", "t", 100))

    assert _bill(moto_server)["write_units"] == 1
    assert moto_server.capacity()["write_units"] == 1 + 5


def test_s3_requests_are_counted_by_method(moto_server: CountingMotoServer, s3_bucket: str) -> None:
    s3 = _client("s3")
    moto_server.reset_counts()

    s3.put_object(Bucket=s3_bucket, Key="k", Body=b"x" * 10)
    s3.get_object(Bucket=s3_bucket, Key="k")["Body"].read()
    s3.delete_object(Bucket=s3_bucket, Key="k")

    assert _bill(moto_server)["s3_requests"] == {"DELETE": 1, "GET": 1, "PUT": 1}


def test_global_secondary_indexes_are_charged_as_dynamodb_bills_them(moto_server: CountingMotoServer, ddb: Any) -> None:
    """Entering, leaving or moving in an index costs index writes; other writes cost it nothing
    (a keys-only index) or one write (an index that projects the changed attribute)."""
    name = "support-gsi"
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "g", "h")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "keys",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
            {
                "IndexName": "all",
                "KeySchema": [{"AttributeName": "h", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
    )
    key = {"pk": {"S": "p"}, "sk": {"S": "s"}}

    def units_of(expression: str, **values: str) -> int:
        moto_server.reset_counts()
        ddb.update_item(
            TableName=name,
            Key=key,
            UpdateExpression=expression,
            **({"ExpressionAttributeValues": {k: {"S": v} for k, v in values.items()}} if values else {}),
        )
        return int(_bill(moto_server)["write_units"])

    try:
        moto_server.reset_counts()
        ddb.put_item(TableName=name, Item=_item("p", "s", 100))
        assert _bill(moto_server)["write_units"] == 1, "in no index: the table's write only"
        assert units_of("SET g = :g", **{":g": "a"}) == 1 + 1, "enters the keys-only index"
        assert units_of("SET n = :n", **{":n": "x"}) == 1, "a keys-only index does not see other attributes"
        assert units_of("SET g = :g", **{":g": "b"}) == 1 + 2, "its index key moves: a delete and a put"
        assert units_of("REMOVE g") == 1 + 1, "leaves the index"
        assert units_of("SET h = :h", **{":h": "c"}) == 1 + 1, "enters the index that projects everything"
        assert units_of("SET n = :n", **{":n": "y"}) == 1 + 1, "that index's entry changes with any attribute"
        assert _bill(moto_server)["unmetered"] == 0
    finally:
        ddb.delete_table(TableName=name)
