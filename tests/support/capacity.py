"""Read and write capacity units, metered the way DynamoDB bills them.

Request counts say how chatty the store is; capacity units say what it costs, and the two
can disagree: one PutItem of a 300 KB item is 300 write units, a conditional write that
fails is still charged, and rewriting a big item to change one attribute pays for the
whole item. This module prices each DynamoDB request that reaches moto's server.

moto runs in the test process, so the meter reads the item before and after a write
straight from moto's in-process backend (``dynamodb_backends[account][region]``) instead
of trusting moto's own ``ConsumedCapacity`` (which does not follow the billing rules). The
counting middleware in ``tests/support/aws.py`` handles DynamoDB requests one at a time,
so nothing changes an item between the "before" and "after" looks.

Billing rules (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/provisioned-capacity-mode.html):

* writes (PutItem, UpdateItem, DeleteItem, each item of a BatchWriteItem): ``ceil(max(size
  before, size after) / 1 KB)``, at least 1 per item; TransactWriteItems costs twice that
  per item (ConditionCheck included); a write whose condition fails (or a cancelled
  transaction) is charged for the item as it stood;
* global secondary indexes, written with the table (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations):
  an item that enters an index costs a write of its index entry (the index's and the
  table's keys plus the projected attributes), one that leaves it a write, one whose index
  key changes two (a delete and a put), one whose projected attributes change one; an item
  in no index before or after costs the index nothing; a failed conditional write writes
  no index;
* reads: GetItem (and each key of BatchGetItem) ``ceil(size / 4 KB)``, at least 1 even when
  the item is missing; Query ``ceil(total size of the items read / 4 KB)``, at least 1;
  eventually consistent reads cost half; TransactGetItems costs twice a strong read.

Scan is not metered (nothing in the project scans). Requests that fail validation or never
reach moto (a fault proxy's 500) are not charged, as DynamoDB does not charge them either.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
READ_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "TransactGetItems", "Query"})
_CHARGED_FAILURES = ("ConditionalCheckFailedException", "TransactionCanceledException")

DynamoItem = Mapping[str, Mapping[str, Any]]
"""An item in DynamoDB JSON: ``{"pk": {"S": "a"}, "n": {"N": "1"}}``; binary as bytes or base64 text."""


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _binary_len(value: bytes | bytearray | str) -> int:
    """Raw byte length: moto keeps wire values as base64 text and decodes nested ones to bytes."""
    if isinstance(value, bytes | bytearray):
        return len(value)
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return _utf8_len(value)


def _number_size(text: str) -> int:
    """About one byte per two significant digits plus one; leading and trailing zeros are free."""
    mantissa = text.strip().lower().split("e", 1)[0]
    negative = mantissa.startswith("-")
    digits = mantissa.lstrip("+-").replace(".", "").strip("0")
    return (len(digits) + 1) // 2 + 1 + (1 if negative else 0)


def attribute_value_size(value: Mapping[str, Any]) -> int:
    """Bytes one DynamoDB-JSON attribute value takes, without its attribute name."""
    ((kind, payload),) = value.items()
    if kind == "S":
        return _utf8_len(payload)
    if kind == "N":
        return _number_size(str(payload))
    if kind == "B":
        return _binary_len(payload)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(_utf8_len(s) for s in payload)
    if kind == "NS":
        return sum(_number_size(str(n)) for n in payload)
    if kind == "BS":
        return sum(_binary_len(b) for b in payload)
    if kind == "L":
        return 3 + sum(1 + attribute_value_size(v) for v in payload)
    if kind == "M":
        return 3 + sum(1 + _utf8_len(k) + attribute_value_size(v) for k, v in payload.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def item_size(item: DynamoItem | None) -> int:
    """Bytes an item counts for in billing: attribute names plus values (0 for no item)."""
    if not item:
        return 0
    return sum(_utf8_len(name) + attribute_value_size(value) for name, value in item.items())


def write_units(size_before: int, size_after: int = 0) -> int:
    """Write units for one item: the larger of its two states, in started kilobytes, at least 1."""
    return max(1, math.ceil(max(size_before, size_after) / WRITE_UNIT_BYTES))


def read_units(size: int, *, consistent: bool) -> float:
    """Read units for ``size`` bytes read in one go: started 4 KB, at least 1; half if eventually consistent."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


@dataclass
class _Target:
    """One item a write touches, and what it looked like before."""

    table: str
    key: dict[str, Any]
    before: dict[str, Any] | None
    multiplier: int

    @property
    def size_before(self) -> int:
        return item_size(self.before)


@dataclass(frozen=True)
class IndexShape:
    """What a global secondary index keeps of an item: its key attributes and projection."""

    keys: tuple[str, ...]
    table_keys: tuple[str, ...]
    projection: str  # ALL, KEYS_ONLY or INCLUDE
    included: tuple[str, ...] = ()

    def entry(self, item: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The index entry ``item`` makes, or None when it lacks a key attribute (not indexed)."""
        if not item or any(k not in item for k in self.keys):
            return None
        if self.projection == "ALL":
            return dict(item)
        kept = set(self.keys) | set(self.table_keys) | set(self.included if self.projection == "INCLUDE" else ())
        return {name: value for name, value in item.items() if name in kept}

    def write_units(self, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> int:
        """Units one item's write costs this index."""
        old, new = self.entry(before), self.entry(after)
        if old is None and new is None:
            return 0
        if old is None or new is None:
            return write_units(item_size(old or new))
        if any(old[k] != new[k] for k in self.keys):
            return write_units(item_size(old)) + write_units(item_size(new))  # delete, then put
        return write_units(item_size(old), item_size(new)) if old != new else 0


@dataclass
class PendingRequest:
    """What the meter noted before a DynamoDB request went to moto; priced by ``CapacityMeter.after``."""

    app_id: str
    operation: str
    region: str
    body: dict[str, Any]
    targets: list[_Target] = field(default_factory=list)
    unpriceable: bool = False


@dataclass
class _Usage:
    requests: int = 0
    write_units: int = 0
    index_write_units: int = 0
    read_units: float = 0.0


class CapacityMeter:
    """Prices DynamoDB requests from moto's in-process backend; thread-safe to read.

    Call ``before`` just before a request is handed to moto and ``after`` with moto's
    answer, with nothing else touching DynamoDB in between (the counting middleware holds
    its DynamoDB lock across both).
    """

    def __init__(self, account_id: str = DEFAULT_ACCOUNT_ID) -> None:
        self._account_id = account_id
        self._lock = threading.Lock()
        self._usage: dict[tuple[str, str], _Usage] = {}
        self._unmetered = 0

    # -- metering ----------------------------------------------------------------------------

    def before(self, *, operation: str, app_id: str, region: str, body: bytes) -> PendingRequest | None:
        """Note the items a write is about to change; ``None`` for requests that are not priced."""
        if operation not in WRITE_OPERATIONS and operation not in READ_OPERATIONS:
            return None
        try:
            parsed = json.loads(body or b"{}")
        except ValueError:
            return None
        if not isinstance(parsed, dict):
            return None
        pending = PendingRequest(app_id=app_id, operation=operation, region=region, body=parsed)
        if operation in WRITE_OPERATIONS:
            try:
                pending.targets = self._write_targets(pending)
            except Exception:  # malformed request or unknown table: moto should refuse it (see ``after``)
                pending.unpriceable = True
        return pending

    def after(self, pending: PendingRequest | None, *, status: int, response_body: bytes) -> None:
        """Price a request from moto's answer and what the backend now holds.

        Never raises: a metering bug must not turn into a failed request. A request moto
        accepted but the meter could not price is counted in ``unmetered`` instead, so that
        a bill that is silently too low shows.
        """
        if pending is None:
            return
        if not pending.unpriceable:
            try:
                if pending.operation in WRITE_OPERATIONS:
                    priced = self._price_write(pending, status, response_body)
                    if priced is not None:
                        self._add(pending, write=priced[0], index_write=priced[1])
                elif status == 200:
                    self._add(pending, read=self._price_read(pending, response_body))
                return
            except Exception:
                pass
        if status == 200:
            with self._lock:
                self._unmetered += 1

    def capacity(self, *, app_id: str | None = None) -> dict[str, Any]:
        """``{"write_units", "index_write_units", "read_units", "by_operation": {...}, "unmetered"}``.

        ``write_units`` includes the global secondary indexes' writes; ``index_write_units``
        is that part alone.

        For one app id or (``None``) all; ``unmetered`` counts requests moto accepted that
        the meter could not price (all app ids; it should stay 0).
        """
        by_operation: dict[str, dict[str, float | int]] = {}
        with self._lock:
            unmetered = self._unmetered
            for (owner, operation), usage in self._usage.items():
                if app_id is not None and owner != app_id:
                    continue
                entry = by_operation.setdefault(
                    f"dynamodb.{operation}", {"requests": 0, "write_units": 0, "read_units": 0.0}
                )
                entry["requests"] += usage.requests
                entry["write_units"] += usage.write_units
                entry["read_units"] += usage.read_units
                if usage.index_write_units:
                    entry["index_write_units"] = entry.get("index_write_units", 0) + usage.index_write_units
        return {
            "write_units": int(sum(e["write_units"] for e in by_operation.values())),
            "index_write_units": int(sum(e.get("index_write_units", 0) for e in by_operation.values())),
            "read_units": float(sum(e["read_units"] for e in by_operation.values())),
            "by_operation": dict(sorted(by_operation.items())),
            "unmetered": unmetered,
        }

    def reset(self) -> None:
        with self._lock:
            self._usage.clear()
            self._unmetered = 0

    def _add(self, pending: PendingRequest, *, write: int = 0, index_write: int = 0, read: float = 0.0) -> None:
        with self._lock:
            usage = self._usage.setdefault((pending.app_id, pending.operation), _Usage())
            usage.requests += 1
            usage.write_units += write
            usage.index_write_units += index_write
            usage.read_units += read

    # -- moto's backend ----------------------------------------------------------------------

    def _backend(self, region: str) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        return dynamodb_backends[self._account_id][region]

    def _stored(self, region: str, table_name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item at ``key`` as DynamoDB JSON, or None."""
        backend = self._backend(region)
        table = backend.get_table(table_name)
        hash_key, range_key = backend.get_keys_value(table, dict(key))
        item = table.get_item(hash_key, range_key)
        return None if item is None else _as_json(item)

    def _key_of(self, region: str, table_name: str, item: Mapping[str, Any]) -> dict[str, Any]:
        table = self._backend(region).get_table(table_name)
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        return {name: item[name] for name in names}

    def _write_targets(self, pending: PendingRequest) -> list[_Target]:
        body, region = pending.body, pending.region
        specs: list[tuple[str, dict[str, Any], int]] = []  # table, key, multiplier
        if pending.operation == "PutItem":
            specs.append((body["TableName"], self._key_of(region, body["TableName"], body["Item"]), 1))
        elif pending.operation in ("UpdateItem", "DeleteItem"):
            specs.append((body["TableName"], body["Key"], 1))
        elif pending.operation == "BatchWriteItem":
            for table_name, requests in body["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        key = self._key_of(region, table_name, request["PutRequest"]["Item"])
                    else:
                        key = request["DeleteRequest"]["Key"]
                    specs.append((table_name, key, 1))
        else:  # TransactWriteItems: every item, condition checks included, at twice the price
            for entry in body["TransactItems"]:
                ((kind, spec),) = entry.items()
                key = self._key_of(region, spec["TableName"], spec["Item"]) if kind == "Put" else spec["Key"]
                specs.append((spec["TableName"], key, 2))
        return [_Target(table, key, self._stored(region, table, key), multiplier) for table, key, multiplier in specs]

    def _indexes(self, region: str, table_name: str) -> list[IndexShape]:
        table = self._backend(region).get_table(table_name)
        table_keys = tuple([table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else []))
        return [
            IndexShape(
                keys=tuple(index.schema_key_attrs),
                table_keys=table_keys,
                projection=str((index.projection or {}).get("ProjectionType", "ALL")),
                included=tuple((index.projection or {}).get("NonKeyAttributes", [])),
            )
            for index in table.global_indexes
        ]

    def _price_write(self, pending: PendingRequest, status: int, response_body: bytes) -> tuple[int, int] | None:
        """(write units in all, of which the indexes'), or None when nothing is charged."""
        if status == 200:
            unprocessed = _unprocessed_writes(pending, response_body)
            total = indexes = 0
            for target in pending.targets:
                if (target.table, _canonical(target.key)) in unprocessed:
                    continue
                after = self._stored(pending.region, target.table, target.key)
                index = sum(i.write_units(target.before, after) for i in self._indexes(pending.region, target.table))
                total += target.multiplier * (write_units(target.size_before, item_size(after)) + index)
                indexes += target.multiplier * index
            return total, indexes
        if _error_type(response_body).endswith(_CHARGED_FAILURES):
            return sum(t.multiplier * write_units(t.size_before) for t in pending.targets), 0
        return None

    def _price_read(self, pending: PendingRequest, response_body: bytes) -> float:
        body, region = pending.body, pending.region
        consistent = bool(body.get("ConsistentRead", False))
        if pending.operation == "GetItem":
            return read_units(item_size(self._stored(region, body["TableName"], body["Key"])), consistent=consistent)
        if pending.operation == "BatchGetItem":
            unprocessed = json.loads(response_body or b"{}").get("UnprocessedKeys", {})
            total = 0.0
            for table_name, spec in body["RequestItems"].items():
                skipped = {_canonical(k) for k in unprocessed.get(table_name, {}).get("Keys", [])}
                for key in spec["Keys"]:
                    if _canonical(key) not in skipped:
                        size = item_size(self._stored(region, table_name, key))
                        total += read_units(size, consistent=bool(spec.get("ConsistentRead", False)))
            return total
        if pending.operation == "TransactGetItems":
            return sum(
                2 * read_units(item_size(self._stored(region, g["Get"]["TableName"], g["Get"]["Key"])), consistent=True)
                for g in body["TransactItems"]
            )
        return read_units(self._query_read_size(pending, response_body), consistent=consistent)

    def _query_read_size(self, pending: PendingRequest, response_body: bytes) -> int:
        """Bytes a Query read: the items its key condition selected, before any filter or projection.

        Re-runs the key condition on moto's backend without the filter and projection (a
        Query is billed for what it read, not for what it returned); falls back to the
        returned items if the request uses the legacy ``KeyConditions`` form.
        """
        body = pending.body
        expression = body.get("KeyConditionExpression")
        if not expression:
            returned = json.loads(response_body or b"{}").get("Items", [])
            return sum(item_size(item) for item in returned)
        from moto.dynamodb.parsing.key_condition_expression import parse_expression

        backend = self._backend(pending.region)
        names = body.get("ExpressionAttributeNames", {})
        values = body.get("ExpressionAttributeValues", {})
        index_name = body.get("IndexName")
        hash_conditions, range_conditions, _ = parse_expression(
            key_condition_expression=expression,
            expression_attribute_values=values,
            expression_attribute_names=names,
            schema=backend.get_schema(table_name=body["TableName"], index_name=index_name),
        )
        range_comparison, range_values = (
            (range_conditions[-1][1], range_conditions[-1][2]) if range_conditions else (None, [])
        )
        items, _, _ = backend.query(
            body["TableName"],
            hash_conditions[0][1] if hash_conditions else None,
            range_comparison,
            range_values,
            body.get("Limit"),
            body.get("ExclusiveStartKey"),
            body.get("ScanIndexForward", True),
            None,
            index_name=index_name,
            consistent_read=bool(body.get("ConsistentRead", False)),
            expr_names=names,
            expr_values=values,
            filter_expression=None,
            hash_key_conditions=hash_conditions,
            range_key_conditions=range_conditions,
        )
        return sum(item_size(_as_json(item)) for item in items)


def _as_json(item: Any) -> dict[str, Any]:
    """A moto ``Item`` in DynamoDB JSON (binary values as bytes)."""
    return {name: value.to_regular_json() for name, value in item.attrs.items()}


def _canonical(key: Mapping[str, Any]) -> str:
    return json.dumps(key, sort_keys=True, default=str)


def _error_type(response_body: bytes) -> str:
    try:
        parsed = json.loads(response_body or b"{}")
    except ValueError:
        return ""
    return str(parsed.get("__type", "")) if isinstance(parsed, dict) else ""


def _unprocessed_writes(pending: PendingRequest, response_body: bytes) -> set[tuple[str, str]]:
    """Items of a BatchWriteItem that DynamoDB handed back unprocessed: not written, not charged."""
    if pending.operation != "BatchWriteItem":
        return set()
    try:
        unprocessed: Mapping[str, Sequence[Mapping[str, Any]]] = json.loads(response_body).get("UnprocessedItems", {})
    except (ValueError, AttributeError):
        return set()
    skipped: set[tuple[str, str]] = set()
    for table_name, requests in unprocessed.items():
        for request in requests:
            if "DeleteRequest" in request:
                skipped.add((table_name, _canonical(request["DeleteRequest"]["Key"])))
            else:
                item = request["PutRequest"]["Item"]
                skipped.update(
                    (table_name, _canonical(t.key))
                    for t in pending.targets
                    if t.table == table_name and all(item.get(k) == v for k, v in t.key.items())
                )
    return skipped
