"""The DynamoDB store's App Home viewers: who opened the bot's Home tab, and when last.

One item in the runs' table::

    pk = "home", sk = "viewers"
        viewers (M)     user -> when they last opened App Home (N)

One small item rather than one per person: ``home_viewers`` is read whenever the bot
decides whose Home to refresh, and a single GetItem costs the same however many people
there are, up to the item's size (about 20 bytes a person, so some 15,000 people seen
in 30 days stay within DynamoDB's 400 KB). A visit is one UpdateItem of that item.
People gone for 30 days are dropped on a later write, so it does not grow without end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from engine.store import StoreUnavailable
from engine.store_rules import HOME_KEPT_SECONDS
from persistence import dynamo_items as items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

HOME_KEY: dict[str, Any] = {"pk": {"S": "home"}, "sk": {"S": "viewers"}}
_FORGET_AT_ONCE = 100  # viewers dropped per write (an expression's size is limited)


class DynamoHome:
    def __init__(self, ddb: DynamoDBClient, table: str) -> None:
        self._ddb = ddb
        self._table = table

    def saw_home(self, user: str, *, at: float) -> None:
        # Timeline: set viewers.<user> if the map exists and holds an older time. The very
        # first visit finds no map: it puts one, unless a concurrent first visit just did,
        # in which case the first step is tried again. A refusal that shows a newer time
        # stored is a late duplicate: nothing to do.
        for _ in range(3):
            try:
                got = self._ddb.update_item(
                    TableName=self._table,
                    Key=HOME_KEY,
                    UpdateExpression="SET #v.#u = :at",
                    ConditionExpression="attribute_exists(#v) AND (attribute_not_exists(#v.#u) OR #v.#u < :at)",
                    ExpressionAttributeNames={"#v": "viewers", "#u": user},
                    ExpressionAttributeValues={":at": items.wire(at)},
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as exc:
                if not _condition_failed(exc):
                    raise
                old: Any = exc.response.get("Item")  # type: ignore[typeddict-item]
                if old is not None and "viewers" in old:
                    return
                if self._first_visit(user, at=at):
                    return
                continue
            viewers = items.plain({"v": got["Attributes"]["viewers"]})["v"]
            self._drop_old(viewers, cutoff=at - HOME_KEPT_SECONDS)
            return
        raise StoreUnavailable(f"App Home visit of {user}: the record kept changing")

    def _first_visit(self, user: str, *, at: float) -> bool:
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=HOME_KEY,
                UpdateExpression="SET #v = :viewers",
                ConditionExpression="attribute_not_exists(#v)",
                ExpressionAttributeNames={"#v": "viewers"},
                ExpressionAttributeValues={":viewers": items.wire({user: at})},
            )
        except ClientError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    def _drop_old(self, viewers: dict[str, float], *, cutoff: float) -> None:
        """Forget people who have not opened Home since ``cutoff``, unless one just did."""
        old = sorted(u for u, when in viewers.items() if when < cutoff)[:_FORGET_AT_ONCE]
        if not old:
            return
        names = {f"#o{n}": user for n, user in enumerate(old)}
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=HOME_KEY,
                UpdateExpression="REMOVE " + ", ".join(f"#v.{name}" for name in names),
                ConditionExpression=" AND ".join(f"#v.{name} < :cutoff" for name in names),
                ExpressionAttributeNames={"#v": "viewers", **names},
                ExpressionAttributeValues={":cutoff": items.wire(cutoff)},
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise  # a refused condition: one came back meanwhile; the next visit drops the rest

    def home_viewers(self, *, since: float) -> dict[str, float]:
        got = self._ddb.get_item(
            TableName=self._table,
            Key=HOME_KEY,
            ProjectionExpression="#v",
            ExpressionAttributeNames={"#v": "viewers"},
            ConsistentRead=False,  # a refresh heuristic: a visit a second old may be missed
        )
        stored = got.get("Item", {}).get("viewers")
        viewers: dict[str, Any] = items.plain({"v": stored})["v"] if stored is not None else {}
        return {user: float(when) for user, when in viewers.items() if float(when) >= since}


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
