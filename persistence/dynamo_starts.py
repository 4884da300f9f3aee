"""The DynamoDB store's start limits: one small item per person, their book.

In the runs' table::

    pk = "starter#<user>", sk = "limits"
        minutes (M)     clock minute (Unix time // 60) -> starts counted in it; recent ones only
        open (M)        run id -> when it started: the person's runs not known to be finished
        expires_at (N)  TTL: a retention period after the last start (an idle person costs nothing)

A start is one conditional UpdateItem (``take``): the run joins ``open`` and is counted in
its minute, iff the minute has room, ``open`` has room and the run is not open already.
DynamoDB applies the condition and the write as one step, so processes starting runs for
the same person at the same moment let exactly the limits through. A refused start writes
nothing: the item as it stood comes back with the refusal (``ALL_OLD``), so the engine
learns the count and the open runs without a read. Minutes before the last are removed in
the same write (those of the ten minutes before; older ones, left by a pause, when the map
holds ``MINUTE_KEYS``: the write that finds it so removes the ones it saw, one more request).

An idle person's item expires by TTL, free; a run left open longer than the retention
without its starter starting another is forgotten with it (asks expire well before).

The item carries neither ``channel`` nor ``started_by`` nor ``sweep_pk``, so no index of
the table sees it; the engine's rule is ``engine.start_limits``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from engine.records import RunStatus
from engine.start_limits import StartBook
from engine.store import StoreUnavailable
from persistence import dynamo_items as items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SK = "limits"
WINDOW = 10  # minutes before the last that every start's write removes
MINUTE_KEYS = 8  # minute keys the map may hold before a write must name the stale ones
_ATTEMPTS = 3
_NAMES = {"#o": "open", "#mn": "minutes", "#exp": "expires_at"}


def _key(user: str) -> dict[str, Any]:
    return {"pk": {"S": f"starter#{user}"}, "sk": {"S": SK}}


def _n(value: float) -> dict[str, str]:
    return {"N": str(round(value, 3))}


class DynamoStarts:
    def __init__(self, ddb: DynamoDBClient, table: str, *, retention: float) -> None:
        self._ddb = ddb
        self._table = table
        self._retention = retention

    def take(self, user: str, *, run_id: str, at: float, per_minute: int, open_limit: int) -> StartBook:
        """``RunStore.take_start``: one UpdateItem when the person has a book."""
        minute = int(at // 60)
        stale: list[int] = []  # older minute keys the last refusal showed
        for _ in range(_ATTEMPTS):
            try:
                self._update(user, run_id=run_id, at=at, per_minute=per_minute, room=open_limit, stale=stale)
                return StartBook(taken=True)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code == "ValidationException" and "document path" in str(exc):
                    old: dict[str, Any] | None = {}  # a map is missing (should DynamoDB check paths first)
                elif code == "ConditionalCheckFailedException":
                    old = cast("dict[str, Any] | None", exc.response.get("Item"))  # type: ignore[typeddict-item]
                else:
                    raise
            if old is None:  # the person's first start (or the first since their book expired)
                if self._create(user, run_id=run_id, at=at, minute=minute):
                    return StartBook(taken=True)
                continue  # another start created it first: the update now finds its maps
            if "open" not in old or "minutes" not in old:
                self._repair(user, at=at)
                continue
            opened = {r: float(v["N"]) for r, v in old["open"]["M"].items()}
            if run_id in opened:
                return StartBook(taken=True)  # this very start, retried after a lost answer: counted once
            minutes = {int(m): int(v["N"]) for m, v in old["minutes"]["M"].items()}
            counted = minutes.get(minute, 0)
            if (per_minute and counted >= per_minute) or len(opened) >= open_limit:
                return StartBook(taken=False, this_minute=counted, open=opened)
            stale = [m for m in minutes if m < minute - 1]  # refused for the map's size only
        raise StoreUnavailable(f"start of {run_id}: the book of {user} changed under {_ATTEMPTS} attempts")

    def _update(self, user: str, *, run_id: str, at: float, per_minute: int, room: int, stale: list[int]) -> None:
        # Timeline: condition checked against the item as stored -> run added to open, minute
        # counted, stale minutes removed, TTL pushed on, as one step. A concurrent start sees
        # this one's place or takes it first; a retry after a lost answer fails on
        # attribute_not_exists(open.<run>) and finds its run open (taken, counted once). The
        # attribute_exists guards come first: a missing item or map fails the condition
        # (ALL_OLD tells which) instead of the nested SET.
        minute = int(at // 60)
        gone = sorted({minute - k for k in range(2, WINDOW + 2)} | set(stale))
        names = {**_NAMES, "#r": run_id, "#m": str(minute)} | {f"#g{i}": str(m) for i, m in enumerate(gone)}
        values: dict[str, Any] = {
            ":at": _n(at),
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
            ":room": {"N": str(room)},
            ":keys": {"N": str(MINUTE_KEYS + len(stale))},  # the stale ones go in this very write
            ":exp": {"N": str(int(at + self._retention))},
        }
        condition = (
            "attribute_exists(#o) AND attribute_exists(#mn) AND attribute_not_exists(#o.#r)"
            " AND size(#o) < :room AND size(#mn) < :keys"
        )
        if per_minute:
            condition += " AND (attribute_not_exists(#mn.#m) OR #mn.#m < :limit)"
            values[":limit"] = {"N": str(per_minute)}
        removed = ", ".join(f"#mn.#g{i}" for i in range(len(gone)))
        self._ddb.update_item(
            TableName=self._table,
            Key=_key(user),
            UpdateExpression=(
                f"SET #o.#r = :at, #mn.#m = if_not_exists(#mn.#m, :zero) + :one, #exp = :exp REMOVE {removed}"
            ),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    def _create(self, user: str, *, run_id: str, at: float, minute: int) -> bool:
        """The book, with this start in it (any limit lets a first start through); whether ours."""
        # Timeline: put iff no book -> the book holds this run, counted once. Another process's
        # first start got there first: condition fails, the caller's update takes its place.
        # A retry after a lost answer fails the same way and finds its own run open.
        item = {
            **_key(user),
            "open": {"M": {run_id: _n(at)}},
            "minutes": {"M": {str(minute): {"N": "1"}}},
            "expires_at": {"N": str(int(at + self._retention))},
        }
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            old: Any = exc.response.get("Item") or {}  # type: ignore[typeddict-item]
            return run_id in old.get("open", {}).get("M", {})
        return True

    def _repair(self, user: str, *, at: float) -> None:
        """Give a book without its maps empty ones (never written so; a safety net)."""
        self._ddb.update_item(
            TableName=self._table,
            Key=_key(user),
            UpdateExpression="SET #o = if_not_exists(#o, :empty), #mn = if_not_exists(#mn, :empty), #exp = :exp",
            ExpressionAttributeNames=_NAMES,
            ExpressionAttributeValues={":empty": {"M": {}}, ":exp": {"N": str(int(at + self._retention))}},
        )

    def forget(self, user: str, *, run_ids: Sequence[str]) -> None:
        """``RunStore.forget_starts``: one UpdateItem removing the runs from ``open``."""
        if not run_ids:
            return
        # Timeline: iff the book still has its open map -> the runs leave it. Runs forgotten
        # are finished (or gone) for good, so a concurrent start or clean-up cannot be undone
        # by it; removing a run already gone is a no-op, which makes a retry harmless.
        names = {"#o": "open"} | {f"#r{i}": r for i, r in enumerate(run_ids)}
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=_key(user),
                UpdateExpression="REMOVE " + ", ".join(f"#o.#r{i}" for i in range(len(run_ids))),
                ConditionExpression="attribute_exists(#o)",
                ExpressionAttributeNames=names,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise  # the book expired meanwhile: nothing left to forget

    def statuses(self, run_ids: Sequence[str]) -> dict[str, RunStatus]:
        """``RunStore.run_statuses``: one BatchGetItem of the records' status only, strongly read."""
        found: dict[str, RunStatus] = {}
        todo = [items.key(r) for r in dict.fromkeys(run_ids)]
        for attempt in range(_ATTEMPTS):
            if not todo:
                return found
            if attempt:  # keys DynamoDB left unprocessed (throttled): back off, as its docs ask
                time.sleep(0.05 * 2**attempt * random.uniform(0.5, 1.5))
            request: Any = {
                self._table: {
                    "Keys": todo,
                    "ConsistentRead": True,
                    "ProjectionExpression": "#pk, #status",
                    "ExpressionAttributeNames": {"#pk": "pk", "#status": "status"},
                }
            }
            got: Any = self._ddb.batch_get_item(RequestItems=request)
            for item in got.get("Responses", {}).get(self._table, []):
                found[item["pk"]["S"].removeprefix("run#")] = RunStatus(item["status"]["S"])
            todo = list(got.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", []))
        if todo:
            raise StoreUnavailable(f"statuses of runs: {len(todo)} left unread after {_ATTEMPTS} tries")
        return found
