"""The DynamoDB store's approvals inbox and a person's runs.

Items (the runs' table; the run item is described in ``persistence/dynamodb.py``)::

    pk = "inbox#<principal>", sk = "<created_at, 20 chars, zero-padded>#<run_id>#<ask_key>"
        run_id, ask_key, expires_at (N, TTL)    one pending ask under one principal

Neither these nor the App Home item (``dynamo_home.py``) has ``sk = "run"``, ``channel``,
``started_by``, ``created_at`` or ``sweep_pk``: no index holds them, and nothing that reads
runs can take one for a run.

Why entries are separate items read back through the run: a decision must stay one
conditional UpdateItem on the run record, so nothing deletes an entry when its ask is
decided. A listing reads the runs its entries name (one BatchGetItem, strongly
consistent), keeps the asks still pending and deletes the entries it found stale; an
ask never becomes pending again, so judging it stale on a consistent read is final.
Entries expire by TTL too (the ask's expiry, or the store's retention, plus a day), so
ones nobody lists do not pile up.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from engine.records import Ask, Run
from engine.store import StoreUnavailable
from engine.store_rules import InboxEntry, inbox_ask, inbox_entries
from persistence import aws
from persistence import dynamo_items as items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger(__name__)

INBOX_PREFIX = "inbox#"
DAY = 86400.0
MAX_LISTED = 100  # BatchGetItem takes at most 100 keys: one request per round
_WRITE_BATCH = 25  # BatchWriteItem's item limit
_ATTEMPTS = 5  # batch rounds for items DynamoDB left unprocessed (throttled)
_ROUNDS = 3  # reads on past stale entries: each round's stale entries are then deleted


def entry_sk(entry: InboxEntry) -> str:
    """Sorts as the ask's age: fixed width, so string order is numeric order."""
    return f"{entry.created_at:020.6f}#{entry.run_id}#{entry.ask_key}"


def _entry_key(entry: InboxEntry) -> dict[str, Any]:
    return {"pk": {"S": INBOX_PREFIX + entry.principal}, "sk": {"S": entry_sk(entry)}}


def entry_items(run: Run, *, now: float, retention: float) -> list[dict[str, Any]]:
    """The inbox items of ``run``'s pending asks, one per principal (no key twice).

    Each expires a day after its ask does, or after the store's retention when the ask
    has no expiry (every ``index_asks`` renews that one).
    """
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in inbox_entries(run):
        expiry = run.asks[entry.ask_key].rules.expires_at
        ttl = (expiry if expiry is not None else now + retention) + DAY
        found[(entry.principal, entry_sk(entry))] = {
            **_entry_key(entry),
            "run_id": {"S": entry.run_id},
            "ask_key": {"S": entry.ask_key},
            "expires_at": {"N": str(int(ttl))},
        }
    return list(found.values())


class DynamoInbox:
    def __init__(self, ddb: DynamoDBClient, table: str, *, retention: float) -> None:
        self._ddb = ddb
        self._table = table
        self._retention = retention

    # -- runs by key -----------------------------------------------------------------

    def read_runs(self, keys: Sequence[dict[str, Any]], *, consistent: bool, what: str) -> list[Run]:
        """The run records ``keys`` name (missing ones left out), without their state."""
        runs: list[Run] = []
        for start in range(0, len(keys), MAX_LISTED):
            todo = list(keys[start : start + MAX_LISTED])
            for attempt in range(_ATTEMPTS):
                if not todo:
                    break
                if attempt:  # keys DynamoDB left unprocessed (throttled): back off, as its docs ask
                    time.sleep(0.05 * 2**attempt * random.uniform(0.5, 1.5))
                request: Any = {self._table: {"Keys": todo, "ConsistentRead": consistent, **items.run_projection()}}
                batch: Any = self._ddb.batch_get_item(RequestItems=request)
                runs += [items.run_from_item(item) for item in batch.get("Responses", {}).get(self._table, [])]
                todo = list(batch.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", []))
            if todo:
                raise StoreUnavailable(f"{what}: {len(todo)} runs left unread after {_ATTEMPTS} tries")
        return runs

    def started_by(self, user: str, *, limit: int) -> list[Run]:
        # One query of the keys-only starter index, then one BatchGetItem of those records.
        got = self._ddb.query(
            TableName=self._table,
            IndexName=aws.STARTER_INDEX,
            KeyConditionExpression="#by = :user",
            ExpressionAttributeNames={"#by": "started_by"},
            ExpressionAttributeValues={":user": {"S": user}},
            ScanIndexForward=False,
            Limit=max(1, min(limit, MAX_LISTED)),
        )
        keys = [{"pk": item["pk"], "sk": item["sk"]} for item in got.get("Items", [])]
        runs = self.read_runs(keys, consistent=False, what=f"runs of {user}")
        return sorted(runs, key=lambda r: r.created_at, reverse=True)

    # -- the inbox -------------------------------------------------------------------

    def index(self, run: Run) -> None:
        # Timeline: the save that created the asks lands, then these puts, then the cards
        # are posted. A crash before the puts leaves the cards owed, and the delivery that
        # posts them later indexes first; a put of an entry already there rewrites it
        # (same key), renewing its TTL.
        requests = [
            {"PutRequest": {"Item": item}} for item in entry_items(run, now=time.time(), retention=self._retention)
        ]
        self._write(requests, what=f"inbox of run {run.run_id}")

    def pending(self, principals: Sequence[str], *, limit: int) -> list[tuple[Run, Ask]]:
        if limit < 1:
            return []
        limit = min(limit, MAX_LISTED)
        # A merge of the principals' partitions, newest first. ``more`` holds where each
        # partition's next page starts; an entry is safe to judge once it is newer than
        # every partition's last fetched entry that has more (nothing unseen can precede
        # it). With no stale entry this is one round: a Query per principal, one BatchGetItem.
        more: dict[str, dict[str, Any] | None] = {p: None for p in dict.fromkeys(principals)}
        floors: dict[str, str] = {}
        asks: dict[str, list[InboxEntry]] = {}  # sort key -> the ask's entries (one per principal)
        runs: dict[str, Run] = {}
        read: set[str] = set()  # run ids read (a run gone is read and not in ``runs``)
        judged: set[str] = set()
        found: list[tuple[Run, Ask]] = []
        stale: list[tuple[str, str]] = []  # (principal, sort key) of entries found stale
        for _ in range(_ROUNDS):
            if not self._safe(asks, judged, floors, more):
                for principal, start in list(more.items()):
                    self._page(principal, start, limit, asks, floors, more)
            batch = self._safe(asks, judged, floors, more)[: limit - len(found)]
            if not batch:
                break
            unread = list(dict.fromkeys(asks[sk][0].run_id for sk in batch if asks[sk][0].run_id not in read))
            read.update(unread)
            # Strongly consistent: an entry judged stale is deleted, which must never happen
            # on a replica that has not seen the save that created its ask yet.
            keys = [items.key(run_id) for run_id in unread]
            runs.update((r.run_id, r) for r in self.read_runs(keys, consistent=True, what="inbox"))
            for sk in batch:
                judged.add(sk)
                live = [(e, a) for e in asks[sk] if (a := inbox_ask(runs.get(e.run_id), e)) is not None]
                stale += [(e.principal, sk) for e in asks[sk] if all(e is not kept for kept, _ in live)]
                if live:
                    found.append((runs[asks[sk][0].run_id], live[0][1]))
            if len(found) >= limit:
                break
        self._forget(stale)
        return found

    def _page(
        self,
        principal: str,
        start: dict[str, Any] | None,
        limit: int,
        asks: dict[str, list[InboxEntry]],
        floors: dict[str, str],
        more: dict[str, dict[str, Any] | None],
    ) -> None:
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": INBOX_PREFIX + principal}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if start is not None:
            query["ExclusiveStartKey"] = start
        got = self._ddb.query(**query)
        for item in got.get("Items", []):
            sk = item["sk"]["S"]
            at = float(sk.split("#", 1)[0])
            entry = InboxEntry(
                principal=principal, created_at=at, run_id=item["run_id"]["S"], ask_key=item["ask_key"]["S"]
            )
            asks.setdefault(sk, []).append(entry)
            floors[principal] = sk
        if "LastEvaluatedKey" in got:
            more[principal] = got["LastEvaluatedKey"]
        else:
            more.pop(principal, None)

    @staticmethod
    def _safe(
        asks: dict[str, list[InboxEntry]],
        judged: set[str],
        floors: dict[str, str],
        more: dict[str, dict[str, Any] | None],
    ) -> list[str]:
        """Sort keys of unjudged asks that no unfetched entry can precede, newest first."""
        if any(p not in floors for p in more):
            return []  # a partition not read yet
        boundary = max((floors[p] for p in more), default="")
        return sorted((sk for sk in asks if sk not in judged and sk >= boundary), reverse=True)

    def _forget(self, stale: list[tuple[str, str]]) -> None:
        """Delete entries a listing found stale: best effort, one try (TTL removes them anyway).

        By the sort key as read, not as recomputed from the time it holds: a float read
        back from text need not print the same way again.
        """
        requests: list[Any] = [
            {"DeleteRequest": {"Key": {"pk": {"S": INBOX_PREFIX + principal}, "sk": {"S": sk}}}}
            for principal, sk in dict.fromkeys(stale)
        ]
        for start in range(0, len(requests), _WRITE_BATCH):
            try:
                self._ddb.batch_write_item(RequestItems={self._table: requests[start : start + _WRITE_BATCH]})
            except (ClientError, BotoCoreError):
                log.warning("could not delete %d stale inbox entries", len(requests) - start, exc_info=True)
                return

    def _write(self, requests: list[Any], *, what: str) -> None:
        for start in range(0, len(requests), _WRITE_BATCH):
            todo = requests[start : start + _WRITE_BATCH]
            for attempt in range(_ATTEMPTS):
                if not todo:
                    break
                if attempt:
                    time.sleep(0.05 * 2**attempt * random.uniform(0.5, 1.5))
                got: Any = self._ddb.batch_write_item(RequestItems={self._table: todo})
                todo = list(got.get("UnprocessedItems", {}).get(self._table, []))
            if todo:
                raise StoreUnavailable(f"{what}: {len(todo)} writes left unprocessed after {_ATTEMPTS} tries")
