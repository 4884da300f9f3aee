"""Run state apart from the run record: chunk items in the table, or one S3 object.

The store decides when and owns the ordering of writes (see ``save`` in dynamodb.py);
this module only writes, reads and deletes the pieces a ``state_ref`` names. Every
piece's key carries a random nonce, so two writers never share a key, and a reader
checks size and checksum before trusting what it assembled: a mismatch means a
concurrent save replaced the pieces (``SnapshotMoved``, the caller reads the item again).

Chunk items carry a TTL and are never deleted by hand: DynamoDB bills a delete by the
size of what it deletes, while expiry is free. S3 deletes are free, so superseded
objects go at once (and a bucket lifecycle rule catches what a crash left behind).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from engine.store import StoreBroken, StoreUnavailable
from persistence import dynamo_items as items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

log = logging.getLogger(__name__)

CHUNK_SIZE = 300 * 1024  # bytes of encoded snapshot per chunk item, well under 400 KB
_BATCH = 25  # BatchWriteItem's item limit; 25 chunks also stay under its 16 MB request limit


class SnapshotMoved(Exception):
    """The pieces a read item points at are gone or incomplete: a save replaced them."""


class Offloader:
    def __init__(self, ddb: DynamoDBClient, table: str, s3: S3Client | None, bucket: str | None) -> None:
        self._ddb = ddb
        self._table = table
        self._s3 = s3 if bucket else None
        self._bucket = bucket or ""

    def put(self, run_id: str, blob: bytes, *, expires_at: float) -> dict[str, Any]:
        """Write ``blob`` under fresh keys; returns the ``state_ref`` pointing at them."""
        nonce = secrets.token_hex(6)
        ref: dict[str, Any] = {"size": len(blob), "check": hashlib.sha256(blob).hexdigest()}
        if self._s3 is not None:
            ref.update(kind="s3", key=f"runs/{run_id}/state-{nonce}")
            self._s3.put_object(Bucket=self._bucket, Key=ref["key"], Body=blob)
            return ref
        prefix = f"state#{nonce}#"
        chunks = [blob[i : i + CHUNK_SIZE] for i in range(0, len(blob), CHUNK_SIZE)]
        ref.update(kind="chunks", key=prefix, count=len(chunks))
        extra = {"expires_at": {"N": str(int(expires_at))}}
        self._batch(
            [
                {"PutRequest": {"Item": {**items.key(run_id, f"{prefix}{n:04d}"), "data": {"B": c}, **extra}}}
                for n, c in enumerate(chunks)
            ]
        )
        return ref

    def drop(self, run_id: str, ref: dict[str, Any], *, chunks_too: bool = False) -> None:
        """Delete pieces nobody points at any more: S3 objects always, chunks only when asked.

        Superseded chunks are left to expire (free); the chunks of a save that lost its
        condition are deleted, since they were never pointed at and would otherwise sit
        there for the whole TTL. A failure only leaves garbage that TTL or the bucket's
        lifecycle rule removes.
        """
        try:
            if ref.get("kind") == "s3" and self._s3 is not None:
                self._s3.delete_object(Bucket=self._bucket, Key=ref["key"])
            elif ref.get("kind") == "chunks" and chunks_too:
                keys = [items.key(run_id, f"{ref['key']}{n:04d}") for n in range(int(ref["count"]))]
                self._batch([{"DeleteRequest": {"Key": k}} for k in keys])
        except Exception:
            log.warning("could not delete snapshot %s of run %s", ref.get("key"), run_id, exc_info=True)

    def fetch(self, run_id: str, ref: dict[str, Any]) -> bytes:
        blob = self._fetch_s3(ref) if ref["kind"] == "s3" else self._fetch_chunks(run_id, ref)
        if len(blob) != ref["size"] or hashlib.sha256(blob).hexdigest() != ref["check"]:
            raise SnapshotMoved
        return blob

    def _fetch_s3(self, ref: dict[str, Any]) -> bytes:
        if self._s3 is None:
            raise StoreBroken(f"state {ref['key']} is in S3 but this store has no bucket configured")
        try:
            return self._s3.get_object(Bucket=self._bucket, Key=ref["key"])["Body"].read()
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
                raise SnapshotMoved from None
            raise

    def _fetch_chunks(self, run_id: str, ref: dict[str, Any]) -> bytes:
        parts: list[bytes] = []
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": items.pk(run_id)}, ":prefix": {"S": ref["key"]}},
            "ConsistentRead": True,
        }
        while True:  # a Query page stops at 1 MB: three or so chunks per page
            got = self._ddb.query(**query)
            parts.extend(bytes(i["data"]["B"]) for i in got.get("Items", []))
            if "LastEvaluatedKey" not in got:
                break
            query["ExclusiveStartKey"] = got["LastEvaluatedKey"]
        if len(parts) != ref["count"]:
            raise SnapshotMoved
        return b"".join(parts)

    def _batch(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), _BATCH):
            pending: list[Any] = requests[start : start + _BATCH]
            for attempt in range(8):
                got = self._ddb.batch_write_item(RequestItems={self._table: pending})
                pending = list(got.get("UnprocessedItems", {}).get(self._table, []))
                if not pending:
                    break
                time.sleep(min(0.05 * 2**attempt, 2.0))
            else:
                raise StoreUnavailable(f"DynamoDB kept {len(pending)} state writes unprocessed")
