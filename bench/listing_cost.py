"""What a listing costs as the table grows: ``/graph runs`` with 10,000 runs against 100.

A listing goes through an index (DynamoDB's keys-only ``by_channel`` GSI, then one
BatchGetItem of the runs it names; SQLite's index on the channel), never a scan, so
its cost should not grow with the table. Both sides list the same channel's latest 15
runs; the large table holds 100 times more runs, in other channels and in the same one.
The ratio is the large table's median over the small one's, sampled interleaved, and
the DynamoDB requests of one listing are counted on both sides (they must be equal).

``python -m bench.listing_cost`` prints the table (about 15 s: filling 10,000 runs into
moto goes 25 at a time through boto3's batch writer).
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.resume_cost import moto_dynamodb
from bench.stats import Comparison, compare, table
from engine.records import Run, RunStatus
from engine.store import RunStore

CHANNEL = "C0BENCH"
LISTED = 15


@dataclass(frozen=True, kw_only=True)
class ListingReport:
    comparisons: list[Comparison]
    requests: dict[str, dict[str, int]]  # backend -> requests of one listing, small and large

    def as_dict(self) -> dict[str, Any]:
        return {"comparisons": [c.as_dict() for c in self.comparisons], "requests": self.requests}


def _run(n: int, *, channel: str) -> Run:
    now = time.time()
    return Run(
        run_id=f"bench{n:07d}",
        graph="deploy",
        task=f"task {n}",
        started_by="U0BENCH",
        channel=channel,
        status=RunStatus.COMPLETED,
        version=1,
        created_at=now - n,
        updated_at=now - n,
        output="done",
    )


def _channel(n: int) -> str:
    """A third of the runs in the listed channel (so it grows with the table too), the rest spread."""
    return CHANNEL if n % 3 == 0 else f"C0OTHER{n % 97}"


def _fill_sqlite(store: RunStore, count: int) -> None:
    for n in range(count):
        store.create(_run(n, channel=_channel(n)))


def _fill_dynamodb(table_name: str, count: int) -> None:
    import boto3

    from persistence import dynamo_items as items

    table = boto3.resource("dynamodb").Table(table_name)
    with table.batch_writer() as batch:  # boto3's own batching and retry of unprocessed items
        for n in range(count):
            item = items.plain(items.run_item(_run(n, channel=_channel(n)), expires_at=None))
            batch.put_item(Item=_decimals(item))


def _decimals(value: Any) -> Any:
    from decimal import Decimal

    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decimals(v) for v in value]
    return value


def _timed(listing: Callable[[], list[Run]]) -> float:
    start = time.perf_counter()
    found = listing()
    elapsed = time.perf_counter() - start
    assert len(found) == LISTED, len(found)
    return elapsed


def _interleaved(name: str, small: Callable[[], list[Run]], large: Callable[[], list[Run]], samples: int) -> Comparison:
    ours: list[float] = []
    baseline: list[float] = []
    for i in range(samples):
        if i % 2:
            ours.append(_timed(large))
            baseline.append(_timed(small))
        else:
            baseline.append(_timed(small))
            ours.append(_timed(large))
    return compare(name=name, ours=ours, baseline=baseline)


@contextlib.contextmanager
def _counting_requests(client: Any) -> Iterator[dict[str, int]]:
    """Counts the operations ``client`` (a botocore client) sends while the block runs."""
    counts: dict[str, int] = {}

    def count(model: Any, **_: Any) -> None:
        counts[model.name] = counts.get(model.name, 0) + 1

    client.meta.events.register("before-call.dynamodb", count)
    try:
        yield counts
    finally:
        client.meta.events.unregister("before-call.dynamodb", count)


def measure(*, small: int = 100, large: int = 10_000, samples: int = 20) -> ListingReport:
    from persistence.dynamodb import DynamoRunStore
    from persistence.sqlite import SqliteRunStore

    comparisons: list[Comparison] = []
    requests: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        stores = {size: SqliteRunStore(str(Path(folder) / f"{size}.sqlite3")) for size in (small, large)}
        for size, store in stores.items():
            _fill_sqlite(store, size)
        comparisons.append(
            _interleaved(
                f"sqlite: {large:,} runs vs {small:,}",
                lambda: stores[small].recent(channel=CHANNEL, limit=LISTED),
                lambda: stores[large].recent(channel=CHANNEL, limit=LISTED),
                samples,
            )
        )
        for store in stores.values():
            store.close()
    with moto_dynamodb() as small_table, _second_table() as large_table:
        _fill_dynamodb(small_table, small)
        _fill_dynamodb(large_table, large)
        dynamo = {small: DynamoRunStore(small_table), large: DynamoRunStore(large_table)}
        for size, store in dynamo.items():
            with _counting_requests(store._ddb) as counts:
                store.recent(channel=CHANNEL, limit=LISTED)
            requests[f"dynamodb {size:,} runs"] = dict(counts)
        comparisons.append(
            _interleaved(
                f"dynamodb (moto): {large:,} runs vs {small:,}",
                lambda: dynamo[small].recent(channel=CHANNEL, limit=LISTED),
                lambda: dynamo[large].recent(channel=CHANNEL, limit=LISTED),
                samples,
            )
        )
        # The emulator's own floor: the bare index query, no BatchGetItem. moto answers a
        # query by walking the whole table in Python, so its time grows with the table
        # where DynamoDB's does not; this row shows how much of the row above is moto's.
        comparisons.append(
            _interleaved(
                f"moto's bare index query: {large:,} vs {small:,}",
                lambda: _bare_query(dynamo[small]),
                lambda: _bare_query(dynamo[large]),
                samples,
            )
        )
    return ListingReport(comparisons=comparisons, requests=requests)


def _bare_query(store: Any) -> list[Run]:
    from persistence import aws

    got = store._ddb.query(
        TableName=store._table,
        IndexName=aws.CHANNEL_INDEX,
        KeyConditionExpression="#channel = :channel",
        ExpressionAttributeNames={"#channel": "channel"},
        ExpressionAttributeValues={":channel": {"S": CHANNEL}},
        ScanIndexForward=False,
        Limit=LISTED,
    )
    return [_run(0, channel=CHANNEL)] * len(got.get("Items", []))


@contextlib.contextmanager
def _second_table() -> Iterator[str]:
    import uuid

    from persistence import create_table

    name = f"bench-{uuid.uuid4().hex[:10]}"
    create_table(table=name)
    yield name


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.listing_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    if min(args.small, args.large) < 3 * LISTED:
        parser.error(f"--small and --large must be at least {3 * LISTED}: a third of the runs are listed")
    report = measure(small=args.small, large=args.large, samples=args.samples)
    print(table(report.comparisons, baseline_label=f"the same listing on a table of {args.small:,} runs"))
    for side, counts in report.requests.items():
        print(f"{side}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
