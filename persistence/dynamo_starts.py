"""The DynamoDB store's start counters: how many runs a person started in a clock minute.

One small item per person and minute, in the runs' table::

    pk = "starts#<user>", sk = "minute#<Unix time // 60>"
        run_ids (SS)    the runs counted in that minute
        expires_at (N)  TTL: an hour after the minute (DynamoDB deletes it free of charge)

A start is one conditional UpdateItem that adds its run id to the set while the set
holds fewer than the limit (or already holds that id): DynamoDB applies the condition
and the add as one step, so processes starting runs for the same person at the same
moment let exactly the limit through. Adding to a set is idempotent, so a start
delivered twice counts once. The item carries neither ``channel`` nor ``started_by``
nor ``sweep_pk``, so no index of the table sees it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEPT_SECONDS = 3600  # how long a past minute's counter stays before its TTL


def count_start(ddb: DynamoDBClient, table: str, user: str, *, run_id: str, minute: int, limit: int) -> bool:
    """``RunStore.count_start`` for DynamoDB: one UpdateItem, whether counted or not."""
    try:
        ddb.update_item(
            TableName=table,
            Key={"pk": {"S": f"starts#{user}"}, "sk": {"S": f"minute#{minute}"}},
            UpdateExpression="ADD #ids :id SET #exp = :exp",
            ConditionExpression="attribute_not_exists(#ids) OR size(#ids) < :limit OR contains(#ids, :run)",
            ExpressionAttributeNames={"#ids": "run_ids", "#exp": "expires_at"},
            ExpressionAttributeValues={
                ":id": {"SS": [run_id]},
                ":run": {"S": run_id},
                ":limit": {"N": str(limit)},
                ":exp": {"N": str((minute + 1) * 60 + KEPT_SECONDS)},
            },
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True
