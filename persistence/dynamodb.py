"""The production store: one DynamoDB table, optionally an S3 bucket for large snapshots.

Item layout (one table, ``pk``/``sk`` strings)::

    pk = "run#<run_id>", sk = "run"             the run item
        run_id, graph, task, started_by, status, version (N), created_at (N),
        updated_at (N), thread (M), lease_owner, lease_until (N), output,
        error                                   Run fields; None fields are absent
        asks (M)       ask key -> {key, verdicts (L of S), interrupt_id, name,
                       reason (S: JSON text), node_id, status, created_at (N),
                       decision (M), card (M), tool (S: JSON text)}
        snap (B)       the encoded snapshot (persistence/snapshots.py) when it fits, or
        snap_ref (M)   {kind: "chunks" | "s3", key, version, count, size, sha256}
        sweep_pk = "sweep", sweep_at (N)        only while Run.sweep_at is set (sparse GSI)
        expires_at (N) TTL, set once a run is terminal
    pk = "run#<run_id>", sk = "snap#<version>#<nonce>#<nnnn>"   snapshot chunk: data (B)
    S3: runs/<run_id>/snapshot-<version>-<nonce>                snapshot object

GSI ``sweep``: hash ``sweep_pk``, range ``sweep_at``, keys only. One partition holds
every run that may need sweeping; that is a few hundred items at most, read by one
sweeper, so the hot key does not matter.

Asks are a map inside the run item so that a decision is a single conditional
UpdateItem on ``asks.<key>.status`` (and ``asks.<key>.verdicts``, which must offer the
verdict) that also bumps ``version`` (see records.py). An approval cycle costs five
requests: create, save, decide, claim, save.

Offloaded snapshot keys carry a random nonce besides the version: two writers that read
the same version (one of them about to lose its conditional put) would otherwise write
the same chunk keys, and the loser's clean-up would delete the winner's snapshot.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from persistence import aws, snapshots
from persistence import dynamo_items as items
from persistence.base import (
    AskNotFound,
    AskNotPending,
    RunExists,
    RunNotFound,
    StoreError,
    VerdictNotOffered,
    VersionConflict,
)
from persistence.dynamo_offload import Offloader, SnapshotMoved
from persistence.records import DEFAULT_VERDICTS, AskStatus, Decision, Run, RunStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

INLINE_LIMIT = 300 * 1024  # whole run item; the rest of the 400 KB leaves room for decisions
_READ_ATTEMPTS = 3


class _ConditionFailed(Exception):
    pass


class DynamoRunStore:
    def __init__(
        self,
        table: str,
        *,
        bucket: str | None = None,
        client: DynamoDBClient | None = None,
        s3_client: S3Client | None = None,
        retention_days: float | None = 30.0,
    ) -> None:
        self._table = table
        self._ddb = client or aws.dynamodb_client()
        s3 = s3_client or (aws.s3_client() if bucket else None)
        self._offload = Offloader(self._ddb, table, s3, bucket)
        self._retention = retention_days * 86400 if retention_days else None

    # -- RunStore ------------------------------------------------------------------

    def create(self, run: Run) -> None:
        try:
            self._put(run, condition="attribute_not_exists(pk)", names={}, values={})
        except _ConditionFailed:
            raise RunExists(run.run_id) from None

    def load(self, run_id: str, *, snapshot: bool = True) -> Run | None:
        if not snapshot:
            return self._load_without_snapshot(run_id)
        for _ in range(_READ_ATTEMPTS):
            got = self._ddb.get_item(TableName=self._table, Key=items.key(run_id), ConsistentRead=True)
            if "Item" not in got:
                return None
            try:
                return items.run_from_item(got["Item"], self._snapshot(got["Item"]))
            except SnapshotMoved:
                continue
        raise StoreError(f"run {run_id}: snapshot kept changing while being read")

    def decide(self, run_id: str, ask_key: str, decision: Decision, *, now: float) -> Run:
        # sweep_at = now even if the run is leased (one UpdateItem cannot branch on status):
        # a sweeper that looks early sees the live lease and leaves the run alone.
        # The condition checks both "pending" and "offered", so a refusal costs no more
        # than an acceptance; which one failed is read off the ALL_OLD item afterwards.
        try:
            got = self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run_id),
                UpdateExpression="SET asks.#k.#st = :decided, asks.#k.decision = :d,"
                " #version = #version + :one, updated_at = :now,"
                " sweep_pk = :sweep, sweep_at = :now",
                ConditionExpression=f"asks.#k.#st = :pending AND {_offers(decision)}",
                ExpressionAttributeNames={
                    "#k": ask_key,
                    "#st": "status",
                    "#version": "version",
                    "#verdicts": "verdicts",
                },
                ExpressionAttributeValues={
                    ":decided": {"S": AskStatus.DECIDED.value},
                    ":pending": {"S": AskStatus.PENDING.value},
                    ":verdict": {"S": decision.verdict.value},
                    **({":none": {"N": "0"}} if decision.verdict in DEFAULT_VERDICTS else {}),
                    ":d": items.decision_value(decision),
                    ":one": {"N": "1"},
                    ":now": items.wire(now),
                    ":sweep": {"S": items.SWEEP_PK},
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                self._explain_invalid_path(exc, run_id, ask_key)
                raise
            old = _stored_item(exc)
            if old is None:
                raise RunNotFound(run_id) from None
            run = items.run_from_item(old, None)
            ask = run.asks.get(ask_key)
            if ask is None:
                raise AskNotFound(f"{run_id}/{ask_key}") from None
            if ask.status is AskStatus.DECIDED and ask.decision == decision:
                return self._with_snapshot(old)  # our own write, retried after a lost response
            if ask.status is not AskStatus.PENDING:
                raise AskNotPending(run, ask_key) from None
            if decision.verdict not in ask.verdicts:
                raise VerdictNotOffered(run, ask_key, decision.verdict) from None
            # Pending and offered as parsed, yet the condition failed: _offers and
            # Ask.from_dict disagree about this item. Refuse rather than guess.
            raise StoreError(f"ask {ask_key} of run {run_id}: decision refused for no known reason") from None
        return self._with_snapshot(got["Attributes"])

    def claim(
        self,
        run_id: str,
        *,
        expected_version: int,
        status: RunStatus,
        owner: str,
        lease_until: float,
        now: float,
    ) -> int:
        if not status.leased:
            raise ValueError(f"claim takes a lease: status must be running or resuming, not {status}")
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run_id),
                UpdateExpression="SET #st = :status, lease_owner = :owner, lease_until = :until,"
                " updated_at = :now, #version = #version + :one, sweep_pk = :sweep, sweep_at = :until",
                ConditionExpression="#version = :expected",
                ExpressionAttributeNames={"#st": "status", "#version": "version"},
                ExpressionAttributeValues={
                    ":status": {"S": status.value},
                    ":owner": {"S": owner},
                    ":until": items.wire(lease_until),
                    ":now": items.wire(now),
                    ":one": {"N": "1"},
                    ":expected": items.wire(expected_version),
                    ":sweep": {"S": items.SWEEP_PK},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            old = _stored_item(exc)
            mine = old is not None and _claimed(
                items.run_from_item(old, None), expected_version + 1, owner, lease_until
            )
            if not mine:  # else: our own write, retried after a lost response
                raise VersionConflict(f"{run_id}: expected version {expected_version}") from None
        return expected_version + 1

    def renew(self, run_id: str, *, owner: str, lease_until: float) -> bool:
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run_id),
                UpdateExpression="SET lease_until = :until, sweep_pk = :sweep, sweep_at = :until",
                ConditionExpression="lease_owner = :owner AND #st IN (:running, :resuming)",
                ExpressionAttributeNames={"#st": "status"},
                ExpressionAttributeValues={
                    ":until": items.wire(lease_until),
                    ":owner": {"S": owner},
                    ":sweep": {"S": items.SWEEP_PK},
                    ":running": {"S": RunStatus.RUNNING.value},
                    ":resuming": {"S": RunStatus.RESUMING.value},
                },
            )
        except ClientError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    def save(self, run: Run, *, expected_version: int) -> Run:
        stored = run.evolve(version=expected_version + 1)
        try:
            self._put(
                stored,
                condition="#version = :expected",
                names={"#version": "version"},
                values={":expected": items.wire(expected_version)},
            )
        except _ConditionFailed:
            raise VersionConflict(f"{run.run_id}: expected version {expected_version}") from None
        return stored

    def stuck(self, *, now: float, limit: int = 25) -> list[str]:
        # The GSI is eventually consistent: a sweeper may see a run late or already
        # handled; the engine re-reads and claims conditionally, so either is harmless.
        got = self._ddb.query(
            TableName=self._table,
            IndexName=aws.SWEEP_INDEX,
            KeyConditionExpression="sweep_pk = :sweep AND sweep_at <= :now",
            ExpressionAttributeValues={":sweep": {"S": items.SWEEP_PK}, ":now": items.wire(now)},
            ScanIndexForward=True,
            Limit=limit,
        )
        return [item["pk"]["S"].removeprefix("run#") for item in got.get("Items", [])]

    def _explain_invalid_path(self, exc: ClientError, run_id: str, ask_key: str) -> None:
        """Should DynamoDB check the update's path before its condition, name what is missing."""
        if "document path" not in str(exc):
            return
        stored = self.load(run_id, snapshot=False)
        if stored is None:
            raise RunNotFound(run_id) from exc
        if ask_key not in stored.asks:
            raise AskNotFound(f"{run_id}/{ask_key}") from exc

    # -- writes --------------------------------------------------------------------

    def _put(self, run: Run, *, condition: str, names: dict[str, str], values: dict[str, Any]) -> None:
        expires_at = run.updated_at + self._retention if run.status.terminal and self._retention else None
        item = items.run_item(run, expires_at=expires_at)
        # Names this write: if botocore retries a put whose response was lost and the item
        # changed in between (a click), the stored write_id still says the put landed.
        item["write_id"] = {"S": secrets.token_hex(8)}
        blob = snapshots.encode(run.snapshot) if run.snapshot is not None else None
        new_ref: dict[str, Any] | None = None
        if blob is not None and items.item_size(item) + len("snap") + len(blob) <= INLINE_LIMIT:
            item["snap"] = {"B": blob}
        elif blob is not None:
            # Timeline of a large save:
            #   1. write the snapshot under a key nobody else uses (version + nonce);
            #   2. conditional put of the run item pointing at it;
            #   3a. put succeeded: delete the snapshot the old item pointed at (best effort);
            #   3b. condition failed: delete what step 1 wrote; the stored run is untouched.
            # Readers only follow the pointer of a committed item, so none sees a
            # half-written snapshot. A crash between 1 and 2 leaves an orphan (chunk
            # items expire with TTL on terminal runs), never a run pointing at garbage.
            # Any other error after step 1 leaves it alone: the put may have happened.
            new_ref = self._offload.put(run.run_id, run.version, blob, expires_at=expires_at)
            item["snap_ref"] = items.wire(new_ref)
        if items.item_size(item) > items.ITEM_LIMIT - 4 * 1024:
            if new_ref:
                self._offload.drop(run.run_id, new_ref)
            raise StoreError(f"run {run.run_id}: record too large for DynamoDB even without its snapshot")
        try:
            request: dict[str, Any] = {"ConditionExpression": condition}
            if names:
                request["ExpressionAttributeNames"] = names
            if values:
                request["ExpressionAttributeValues"] = values
            got = self._ddb.put_item(
                TableName=self._table,
                Item=item,
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **request,
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            current = _stored_item(exc)
            if current is not None and current.get("write_id") == item["write_id"]:
                return  # our own put, retried after a lost response: it is stored (keep its snapshot)
            if new_ref:
                self._offload.drop(run.run_id, new_ref)
            raise _ConditionFailed from None
        old_ref = _ref(got.get("Attributes") or {})
        if old_ref and old_ref != new_ref:
            self._offload.drop(run.run_id, old_ref)

    # -- reads ---------------------------------------------------------------------

    def _load_without_snapshot(self, run_id: str) -> Run | None:
        """One consistent GetItem that leaves ``snap`` and ``snap_ref`` on the server.

        The projection names the Run fields rather than skipping the snapshot
        attributes (DynamoDB can only include): read capacity is charged for the whole
        item either way, but an inline snapshot (up to ~300 KB) is then neither sent
        nor base64-decoded by botocore on Slack's ack path. An offloaded snapshot is
        never followed: there is no pointer to follow, so no chunk Query, no S3 GET and
        no retry for a snapshot that moved.
        """
        got = self._ddb.get_item(
            TableName=self._table, Key=items.key(run_id), ConsistentRead=True, **items.run_projection()
        )
        return items.run_from_item(got["Item"], None) if "Item" in got else None

    def _with_snapshot(self, item: dict[str, Any]) -> Run:
        try:
            return items.run_from_item(item, self._snapshot(item))
        except SnapshotMoved:
            # A save replaced the snapshot since this item was read: the newer run is as good.
            run = self.load(items.plain({"id": item["run_id"]})["id"])
            if run is None:
                raise RunNotFound(str(item["run_id"])) from None
            return run

    def _snapshot(self, item: dict[str, Any]) -> bytes | None:
        if "snap" in item:
            return snapshots.decode(bytes(item["snap"]["B"]))
        ref = _ref(item)
        if ref is None:
            return None
        return snapshots.decode(self._offload.fetch(items.plain({"id": item["run_id"]})["id"], ref))


def _offers(decision: Decision) -> str:
    """The condition that the ask offers ``decision.verdict``, read as Ask.from_dict reads it.

    ``contains`` on the stored list; a record without a list (or with an empty one)
    offers DEFAULT_VERDICTS, so for those verdicts a missing or empty list passes too.
    """
    listed = "contains(asks.#k.#verdicts, :verdict)"
    if decision.verdict not in DEFAULT_VERDICTS:
        return listed
    return f"({listed} OR attribute_not_exists(asks.#k.#verdicts) OR size(asks.#k.#verdicts) = :none)"


def _ref(item: dict[str, Any]) -> dict[str, Any] | None:
    if "snap_ref" not in item:
        return None
    ref: dict[str, Any] = items.plain({"r": item["snap_ref"]})["r"]
    return ref


def _claimed(run: Run, version: int, owner: str, lease_until: float) -> bool:
    return run.version == version and run.lease_owner == owner and run.lease_until == lease_until


def _stored_item(exc: ClientError) -> dict[str, Any] | None:
    """The item as stored when a condition failed (``ReturnValuesOnConditionCheckFailure``)."""
    item = exc.response.get("Item")  # type: ignore[typeddict-item]
    return cast("dict[str, Any] | None", item)


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
