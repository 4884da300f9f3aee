"""Each person's start book (``RunStore.take_start``, ``forget_starts``, ``run_statuses``) on every backend.

The exact start limits (``engine.start_limits``) rest on it: at most ``per_minute`` starts
counted per person and minute and at most ``open_limit`` open runs, whatever the number of
processes starting at once, and a start retried after a lost answer counted once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config

from engine.records import RunStatus
from engine.start_limits import DEFAULT_PER_MINUTE, DEFAULT_WAITING, StartBook, StartLimits, check_start
from engine.store import RunStore
from persistence.dynamo_starts import MINUTE_KEYS
from persistence.dynamodb import DynamoRunStore
from tests.persistence.conftest import Backend, make_run
from tests.support.aws import REGION, CountingMotoServer
from tests.support.faults import FaultProxy

MINUTE = 29_000_000  # Unix time // 60, some day in 2025
AT = MINUTE * 60.0 + 5
ROOMY = 100


def take(
    store: RunStore, run_id: str, *, at: float = AT, per_minute: int = 0, open_limit: int = ROOMY, user: str = "U1"
) -> StartBook:
    return store.take_start(user, run_id=run_id, at=at, per_minute=per_minute, open_limit=open_limit)


def test_counts_up_to_the_limit_per_person_and_minute(backend: Backend) -> None:
    store = backend.store()
    assert [take(store, f"r{i}", at=AT + i, per_minute=3).taken for i in range(5)] == [True, True, True, False, False]
    refused = take(store, "r9", per_minute=3)
    assert (refused.this_minute, sorted(refused.open)) == (3, ["r0", "r1", "r2"]), "the book as it stood"
    assert refused.open["r1"] == pytest.approx(AT + 1), "each open run with its start time"
    assert take(store, "r9", per_minute=3, user="U2").taken, "another person has a share of their own"
    assert take(store, "r5", at=AT + 60, per_minute=3).taken, "the next minute starts afresh"
    assert take(store, "r6", per_minute=4).taken, "a raised limit makes room at once"
    assert take(store, "r7", per_minute=0).taken, "no per-minute limit: no condition"


def test_open_runs_up_to_the_limit_until_forgotten(backend: Backend) -> None:
    store = backend.store()
    store.forget_starts("U1", run_ids=["nobody"])  # a person without a book: nothing to forget, nothing made
    assert [take(store, f"r{i}", at=AT + 60 * i, open_limit=2).taken for i in range(3)] == [True, True, False]
    refused = take(store, "r3", at=AT + 200, open_limit=2)
    assert (refused.taken, sorted(refused.open), refused.this_minute) == (False, ["r0", "r1"], 0)
    store.forget_starts("U1", run_ids=["r0", "never-open"])
    assert take(store, "r3", at=AT + 200, open_limit=2).taken
    assert sorted(take(store, "r4", open_limit=2).open) == ["r1", "r3"]


def test_a_start_already_open_counts_once(backend: Backend) -> None:
    store = backend.store()
    assert take(store, "same", per_minute=2, open_limit=2).taken
    assert take(store, "same", per_minute=2, open_limit=2).taken, "a retried start is still taken"
    assert take(store, "other", per_minute=2, open_limit=5).taken, "and it took one place, not two"
    refused = take(store, "third", per_minute=2, open_limit=5)
    assert (refused.taken, refused.this_minute) == (False, 2)
    assert take(store, "same", per_minute=2, open_limit=2).taken, "even once the minute and the book are full"


@pytest.mark.parametrize(("per_minute", "open_limit", "expected"), [(5, ROOMY, 5), (0, 3, 3), (4, 4, 4)])
def test_concurrent_starts_from_many_processes_let_exactly_the_limit_through(
    backend: Backend, per_minute: int, open_limit: int, expected: int
) -> None:
    stores = [backend.store() for _ in range(4)]  # each as a separate process would open it; no book yet

    def start(i: int) -> bool:
        return take(stores[i % len(stores)], f"r{i}", per_minute=per_minute, open_limit=open_limit).taken

    with ThreadPoolExecutor(max_workers=8) as pool:
        counted = list(pool.map(start, range(24)))
    assert counted.count(True) == expected, counted
    assert len(take(stores[0], "late", per_minute=per_minute, open_limit=open_limit).open) == min(expected, open_limit)


def test_run_statuses_reads_the_recorded_ones(backend: Backend) -> None:
    store = backend.store()
    store.create(make_run("r-wait"))
    store.create(make_run("r-done", status=RunStatus.COMPLETED, asks={}))
    assert store.run_statuses(["r-wait", "r-done", "r-gone"]) == {
        "r-wait": RunStatus.WAITING,
        "r-done": RunStatus.COMPLETED,
    }
    assert store.run_statuses([]) == {}


def test_old_minutes_leave_the_book(backend: Backend) -> None:
    """A person starting now and then, hours apart: the book keeps a few minutes, and counts right."""
    store = backend.store()
    for i in range(3 * MINUTE_KEYS):
        assert take(store, f"r{i}", at=AT + 3600 * i, per_minute=1).taken, i
        assert not take(store, f"x{i}", at=AT + 3600 * i + 1, per_minute=1).taken, "one a minute"
    if backend.dynamo:
        (item,) = [i for i in backend.items() if i["pk"]["S"] == "starter#U1"]
        assert len(item["minutes"]["M"]) <= MINUTE_KEYS, item["minutes"]


def test_the_book_is_not_a_run_in_any_listing_and_expires(backend: Backend) -> None:
    store = backend.store()
    take(store, "r1", per_minute=3, open_limit=3)
    assert store.started_by("U1") == [] and store.recent(channel="C1") == []
    assert store.stuck(now=1e12) == []
    if backend.dynamo:
        (item,) = [i for i in backend.items() if i["pk"]["S"].startswith("starter#")]
        assert item["pk"]["S"] == "starter#U1" and item["sk"]["S"] == "limits"
        assert set(item) == {"pk", "sk", "open", "minutes", "expires_at"}, "no attribute an index of the table reads"
        assert int(item["expires_at"]["N"]) == pytest.approx(AT + 30 * 86400, abs=1), "a retention after the start"


@pytest.fixture
def proxied(fault_proxy: FaultProxy, dynamodb_table: str) -> DynamoRunStore:
    """A DynamoDB store whose requests go through the fault proxy; botocore retries once."""
    config = Config(connect_timeout=2, read_timeout=10, retries={"total_max_attempts": 2, "mode": "standard"})
    client = boto3.client("dynamodb", region_name=REGION, endpoint_url=fault_proxy.url, config=config)
    return DynamoRunStore(dynamodb_table, client=client)


def _starting(run_id: str) -> Any:
    return lambda body: run_id in str(body)


@pytest.mark.parametrize("operation", ["PutItem", "UpdateItem"])
def test_a_start_whose_answer_was_lost_counts_once(
    proxied: DynamoRunStore, fault_proxy: FaultProxy, operation: str
) -> None:
    """The write lands, its answer is lost, botocore sends it again: taken once. PutItem is a
    person's first start (their book is created with it), UpdateItem any later one."""
    if operation == "UpdateItem":
        assert take(proxied, "first", per_minute=2, open_limit=3).taken
    fault_proxy.lose_response(operations={operation}, when=_starting("lost"))

    assert take(proxied, "lost", per_minute=2, open_limit=3).taken

    assert fault_proxy.count("lose_response", operation) == 1, fault_proxy.events
    fault_proxy.clear()
    counted = 2 if operation == "UpdateItem" else 1
    assert take(proxied, "next", per_minute=counted + 1, open_limit=5).taken, "the lost one took one place"
    refused = take(proxied, "refused", per_minute=counted + 1, open_limit=5)
    assert (refused.taken, refused.this_minute) == (False, counted + 1), refused
    assert "lost" in refused.open


def test_what_the_default_limits_cost_a_start_on_dynamodb(moto_server: CountingMotoServer, dynamodb_table: str) -> None:
    """Requests and units the limits add to a start: one small UpdateItem for a person with a
    book; the lazy clean-up only when their open runs are full."""
    store = DynamoRunStore(dynamodb_table)
    limits = StartLimits(per_minute=DEFAULT_PER_MINUTE, waiting=DEFAULT_WAITING)
    for i in range(DEFAULT_WAITING):  # a person whose open runs are full, one of them finished since
        run_id = f"r{i:02d}-{'x' * 12}"
        status = RunStatus.COMPLETED if i == 0 else RunStatus.WAITING
        store.create(make_run(run_id, started_by="U1", created_at=AT + i, status=status))
        check_start(store, limits, user="U1", run_id=run_id, now=AT + 60 * i)
    moto_server.reset_counts()
    check_start(store, limits, user="U2", run_id="first-of-u2xxxx", now=AT)
    first = moto_server.counts(), moto_server.capacity()
    moto_server.reset_counts()
    check_start(store, limits, user="U2", run_id="second-of-u2xxx", now=AT + 1)
    common = moto_server.counts(), moto_server.capacity()
    moto_server.reset_counts()
    check_start(store, limits, user="U1", run_id="after-one-ended", now=AT + 60 * DEFAULT_WAITING)
    cleaned = moto_server.counts(), moto_server.capacity()

    for what, (counts, capacity) in {"first ever": first, "common": common, "after a full book": cleaned}.items():
        units = f"{capacity['write_units']} write units, {capacity['read_units']} read units"
        print(f"\nthe default start limits, {what}: {counts}, {units}")
    assert common[0] == {"dynamodb.UpdateItem": 1}, common
    assert common[1]["write_units"] == 1 and common[1]["index_write_units"] == 0, "one small item, in no index"
    assert first[0] == {"dynamodb.UpdateItem": 1, "dynamodb.PutItem": 1}, "a refused update, then the book made"
    assert cleaned[0] == {"dynamodb.UpdateItem": 3, "dynamodb.BatchGetItem": 1}, cleaned
    assert cleaned[1]["write_units"] <= 3 and cleaned[1]["read_units"] <= DEFAULT_WAITING, cleaned
