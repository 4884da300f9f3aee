"""``RunStore.count_start``, the per-minute start counter, on every backend.

The exact per-minute limit (``engine.start_limits``) rests on it: at most ``limit`` run ids
counted per person and minute, whatever the number of processes counting at once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from engine.records import RunStatus
from engine.start_limits import DEFAULT_PER_MINUTE, DEFAULT_WAITING, StartLimits, check_start
from persistence.dynamodb import DynamoRunStore
from tests.persistence.conftest import Backend, make_run
from tests.support.aws import CountingMotoServer

MINUTE = 29_000_000  # Unix time // 60, some day in 2025


def test_counts_up_to_the_limit_per_person_and_minute(backend: Backend) -> None:
    store = backend.store()
    assert [store.count_start("U1", run_id=f"r{i}", minute=MINUTE, limit=3) for i in range(5)] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert store.count_start("U2", run_id="r9", minute=MINUTE, limit=3), "another person has a share of their own"
    assert store.count_start("U1", run_id="r5", minute=MINUTE + 1, limit=3), "the next minute starts afresh"
    assert store.count_start("U1", run_id="r6", minute=MINUTE, limit=4), "a raised limit makes room at once"


def test_a_run_id_counted_already_counts_once(backend: Backend) -> None:
    store = backend.store()
    assert store.count_start("U1", run_id="same", minute=MINUTE, limit=2)
    assert store.count_start("U1", run_id="same", minute=MINUTE, limit=2), "a retried start is still counted"
    assert store.count_start("U1", run_id="other", minute=MINUTE, limit=2), "and it took one place, not two"
    assert not store.count_start("U1", run_id="third", minute=MINUTE, limit=2)
    assert store.count_start("U1", run_id="same", minute=MINUTE, limit=2), "even once the minute is full"


def test_concurrent_starts_from_many_processes_let_exactly_the_limit_through(backend: Backend) -> None:
    stores = [backend.store() for _ in range(4)]  # each as a separate process would open it

    def start(i: int) -> bool:
        return stores[i % len(stores)].count_start("U1", run_id=f"r{i}", minute=MINUTE, limit=5)

    with ThreadPoolExecutor(max_workers=8) as pool:
        counted = list(pool.map(start, range(24)))
    assert counted.count(True) == 5, counted


def test_the_counter_is_not_a_run_in_any_listing(backend: Backend) -> None:
    store = backend.store()
    store.count_start("U1", run_id="r1", minute=MINUTE, limit=3)
    assert store.started_by("U1") == []
    assert store.stuck(now=1e12) == []
    if backend.dynamo:
        (item,) = [i for i in backend.items() if i["pk"]["S"].startswith("starts#")]
        assert set(item) == {"pk", "sk", "run_ids", "expires_at"}, "no attribute an index of the table reads"
        assert int(item["expires_at"]["N"]) > (MINUTE + 1) * 60, "expires by TTL, after its minute"


def test_what_the_default_limits_cost_a_start_on_dynamodb(moto_server: CountingMotoServer, dynamodb_table: str) -> None:
    """Requests and units the limits add to a start, for a person with a history of runs."""
    store = DynamoRunStore(dynamodb_table)
    for i in range(DEFAULT_WAITING + 5):  # a person with runs: the look at the latest reads records
        store.create(make_run(f"r{i:02d}", started_by="U1", created_at=1e9 + i, status=RunStatus.COMPLETED))
    limits = StartLimits(per_minute=DEFAULT_PER_MINUTE, waiting=DEFAULT_WAITING)
    moto_server.reset_counts()

    check_start(store, limits, user="U1", run_id="r-new", now=MINUTE * 60.0)

    counts, capacity = moto_server.counts(), moto_server.capacity()
    print(
        f"\nthe default start limits, one start: {counts}, {capacity['write_units']} write units, "
        f"{capacity['read_units']} read units"
    )
    assert counts == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 1, "dynamodb.UpdateItem": 1}, counts
    assert capacity["write_units"] == 1, "the counter is a small item"
    assert capacity["read_units"] <= 0.5 + DEFAULT_WAITING * 0.5, "the index's keys, then the latest runs (each < 4 KB)"
