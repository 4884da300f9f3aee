"""What an approver's inbox costs as the table grows: 10,000 runs against 100.

The inbox (``RunStore.pending_for``) finds the asks waiting for a person through an
index of their own (DynamoDB: one partition per principal, then one BatchGetItem of the
runs; SQLite: a covering index on (principal, created_at)), never a scan, so its cost
should not grow with the table. Each listing asks, as the bot does, for the newest 50
asks under three principals: the person, a group they are in, and ``ANYONE``.

Every run waits on an ask (``a1``) for someone else, or for the busy approver (a third
of the runs) or their group (another third); the 90 newest runs also wait on a second ask
(``a2``) for the steady approver, their group or anyone. So the steady approver's inbox
is the same in both tables while the table around it grows a hundredfold (the case that
matters: what waits for a person does not grow with the table), and the busy approver's
grows with it (a stress case). "My runs" (``RunStore.started_by``, DynamoDB's
``by_starter`` index) lists the newest 20 of the steady approver's runs, a third of all.

Each ratio is the large table's median over the small one's, sampled interleaved. The
DynamoDB requests of one listing, and the items they read (what a read is billed by),
are counted on both sides: the requests must be equal, and the items read at most a
page of 50 entries per principal plus the 50 runs, whatever the table holds.

A last row times moto's bare Query of the steady approver's partition: moto answers any
Query by walking the whole table in Python, so that row is the emulator's own growth,
which DynamoDB does not have. The DynamoDB rows are then also given net of it: the large
side's median less that growth once per Query the listing sends.

``python -m bench.inbox_cost`` prints the table (about two minutes: filling 10,000 runs and
their inbox entries into moto goes 25 items at a time through boto3's batch writer).
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

from bench.listing_cost import _decimals, _second_table
from bench.resume_cost import moto_dynamodb
from bench.stats import Comparison, compare, table
from engine.policy import AskRules
from engine.records import Ask, AskStatus, MessageRef, Run, RunStatus
from engine.store import RunStore
from engine.store_rules import ANYONE

STEADY = ("U0STEADY", "S0STEADYTEAM", ANYONE)  # principals as the bot asks: person, group, anyone
BUSY = ("U0BUSY", "S0BUSYTEAM", ANYONE)
STEADY_RUNS = 90  # the newest runs, each with an ask for the steady approver's principals
LISTED = 50  # what the bot's inbox asks for (twice the 25 it shows, for the policy's own filter)
MINE = 20  # "my runs": the listing's default


@dataclass(frozen=True, kw_only=True)
class InboxReport:
    comparisons: list[Comparison]
    requests: dict[str, dict[str, int]]  # "dynamodb <size> runs, <listing>" -> requests and items read

    def net_of_moto(self) -> dict[str, float]:
        """Each DynamoDB row's ratio with moto's own growth (its table walk, once per Query
        the listing sends) taken off the large side's median."""
        rows = {c.name: c for c in self.comparisons}
        bare = next(c for c in self.comparisons if c.name.startswith("moto's bare"))
        walk = bare.ours.median - bare.baseline.median
        net: dict[str, float] = {}
        for name, row in rows.items():
            if not name.startswith("dynamodb"):
                continue
            listing = name.removeprefix("dynamodb (moto) ").split(":", 1)[0]
            queries = next(v.get("Query", 0) for k, v in self.requests.items() if k.endswith(f", {listing}"))
            net[name] = (row.ours.median - queries * walk) / row.baseline.median
        return net

    def as_dict(self) -> dict[str, Any]:
        return {
            "comparisons": [c.as_dict() for c in self.comparisons],
            "requests": self.requests,
            "net_of_moto": {name: round(r, 3) for name, r in self.net_of_moto().items()},
        }


def _ask(key: str, approvers: tuple[str, ...] | None, *, at: float, n: int) -> Ask:
    return Ask(
        key=key,
        interrupt_id=f"v1:before_tools:{key}",
        name="approve-deploy",
        reason={"tool": "deploy", "n": n},
        node_id="deployer",
        status=AskStatus.PENDING,
        created_at=at,
        card=MessageRef(channel="C0BENCH", ts=f"{1700000000 + n}.000100"),
        shown="live",
        rules=AskRules(approvers=approvers, expires_at=at + 3 * 86400),
    )


def _run(n: int, *, now: float) -> Run:
    at = now - n
    busy = (BUSY[0],) if n % 3 == 0 else (BUSY[1],) if n % 3 == 1 else (f"U0OTHER{n % 97}",)
    asks = {"a1": _ask("a1", busy, at=at, n=n)}
    if n < STEADY_RUNS:
        steady = (STEADY[0],) if n % 3 == 0 else (STEADY[1],) if n % 3 == 1 else None  # None: anyone
        asks["a2"] = _ask("a2", steady, at=at, n=n)
    return Run(
        run_id=f"bench{n:07d}",
        graph="deploy",
        task=f"task {n}",
        started_by=STEADY[0] if n % 3 == 1 else f"U0OTHER{n % 97}",
        channel="C0BENCH",
        status=RunStatus.WAITING,
        version=2,
        created_at=at,
        updated_at=at,
        thread=MessageRef(channel="C0BENCH", ts=f"{1700000000 + n}.000001"),
        asks=asks,
    )


def _fill_sqlite(store: Any, count: int, *, now: float) -> None:
    """One transaction, straight into the tables (what ``create`` writes, minus a commit each)."""
    from persistence import sqlite_inbox
    from persistence.sqlite import _doc

    with store._write() as conn:
        for n in range(count):
            run = _run(n, now=now)
            conn.execute(
                "INSERT INTO runs (run_id, version, doc, snapshot, sweep_at) VALUES (?, ?, ?, NULL, ?)",
                (run.run_id, run.version, _doc(run), run.sweep_at),
            )
            sqlite_inbox.reindex(conn, run)


def _fill_dynamodb(table_name: str, count: int, *, now: float) -> None:
    """The run items and their inbox entries, as ``create`` and ``index_asks`` write them."""
    import boto3

    from persistence import dynamo_items as items
    from persistence.dynamo_inbox import entry_items

    table = boto3.resource("dynamodb").Table(table_name)
    with table.batch_writer() as batch:  # boto3's own batching and retry of unprocessed items
        for n in range(count):
            run = _run(n, now=now)
            for item in (items.run_item(run, expires_at=None), *entry_items(run, now=now, retention=30 * 86400.0)):
                batch.put_item(Item=_decimals(items.plain(item)))


def _listings(store: RunStore) -> dict[str, Callable[[], int]]:
    """Each listing of the bench on ``store``; each returns how many it found."""
    return {
        "inbox": lambda: len(store.pending_for(STEADY, limit=LISTED)),
        "inbox, busy": lambda: len(store.pending_for(BUSY, limit=LISTED)),
        "my runs": lambda: len(store.started_by(STEADY[0], limit=MINE)),
    }


def _rows(backend: str, stores: dict[int, RunStore], small: int, large: int, samples: int) -> list[Comparison]:
    small_calls, large_calls = _listings(stores[small]), _listings(stores[large])
    rows = []
    for name in small_calls:
        # The same answer in both tables (checked once, before the clock runs).
        assert small_calls[name]() == large_calls[name](), (backend, name)
        rows.append(
            _interleaved(f"{backend} {name}: {large:,} vs {small:,}", small_calls[name], large_calls[name], samples)
        )
    return rows


def measure(*, small: int = 100, large: int = 10_000, samples: int = 20) -> InboxReport:
    from persistence.dynamodb import DynamoRunStore
    from persistence.sqlite import SqliteRunStore

    now = time.time()
    comparisons: list[Comparison] = []
    requests: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        lite = {size: SqliteRunStore(str(Path(folder) / f"{size}.sqlite3")) for size in (small, large)}
        for size, store in lite.items():
            _fill_sqlite(store, size, now=now)
        comparisons += _rows("sqlite", dict(lite), small, large, samples)
        for store in lite.values():
            store.close()
    with moto_dynamodb() as small_table, _second_table() as large_table:
        _fill_dynamodb(small_table, small, now=now)
        _fill_dynamodb(large_table, large, now=now)
        dynamo = {small: DynamoRunStore(small_table), large: DynamoRunStore(large_table)}
        for size, ddb in dynamo.items():
            for name, listing in _listings(ddb).items():
                with _counting(ddb._ddb) as counts:
                    listing()
                read = counts.pop("items read", 0)
                requests[f"dynamodb {size:,} runs, {name}"] = {**counts, "items read": read}
        comparisons += _rows("dynamodb (moto)", dict(dynamo), small, large, samples)
        comparisons.append(
            _interleaved(
                f"moto's bare inbox Query: {large:,} vs {small:,}",
                lambda: _bare_query(dynamo[small]),
                lambda: _bare_query(dynamo[large]),
                samples,
            )
        )
    return InboxReport(comparisons=comparisons, requests=requests)


@contextlib.contextmanager
def _counting(client: Any) -> Iterator[dict[str, int]]:
    """Requests ``client`` sends while the block runs, by operation, and the items they read
    (what DynamoDB bills a read by)."""
    counts: dict[str, int] = {}

    def sent(model: Any, **_: Any) -> None:
        counts[model.name] = counts.get(model.name, 0) + 1

    def answered(model: Any, parsed: dict[str, Any], **_: Any) -> None:
        read = parsed.get("Count", 0) + sum(len(found) for found in parsed.get("Responses", {}).values())
        counts["items read"] = counts.get("items read", 0) + read

    client.meta.events.register("before-call.dynamodb", sent)
    client.meta.events.register("after-call.dynamodb", answered)
    try:
        yield counts
    finally:
        client.meta.events.unregister("before-call.dynamodb", sent)
        client.meta.events.unregister("after-call.dynamodb", answered)


def _bare_query(store: Any) -> int:
    from persistence.dynamo_inbox import INBOX_PREFIX

    got = store._ddb.query(
        TableName=store._table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": INBOX_PREFIX + STEADY[0]}},
        ScanIndexForward=False,
        Limit=LISTED,
    )
    return len(got.get("Items", []))


def _interleaved(name: str, small: Callable[[], int], large: Callable[[], int], samples: int) -> Comparison:
    """Large against small, alternating which goes first, after one warm-up call of each."""
    small()
    large()
    ours: list[float] = []
    baseline: list[float] = []
    for i in range(samples):
        for call, into in ((large, ours), (small, baseline)) if i % 2 else ((small, baseline), (large, ours)):
            start = time.perf_counter()
            call()
            into.append(time.perf_counter() - start)
    return compare(name=name, ours=ours, baseline=baseline)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inbox_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    if min(args.small, args.large) < STEADY_RUNS:
        parser.error(f"--small and --large must be at least {STEADY_RUNS}: the steady inbox fills a listing")
    report = measure(small=args.small, large=args.large, samples=args.samples)
    print(table(report.comparisons, baseline_label=f"the same listing on a table of {args.small:,} runs"))
    for name, ratio in report.net_of_moto().items():
        print(f"{name}, net of moto's table walk: ratio {ratio:.2f}")
    for side, counts in report.requests.items():
        print(f"{side}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
