"""What an approval cycle costs on DynamoDB, counted at moto's HTTP front door."""

from __future__ import annotations

import os

from engine.records import MessageRef
from engine.store import Delivery, Lease
from persistence import RunStatus
from persistence.dynamodb import DynamoRunStore
from tests.persistence.conftest import IN_C1, decision, make_run
from tests.support.aws import CountingMotoServer


def test_approval_cycle_requests(moto_server: CountingMotoServer, dynamodb_table: str) -> None:
    """The store's side of start → pause → approve → end, in the order the engine makes it."""
    store = DynamoRunStore(dynamodb_table)
    run = make_run("r-count", status=RunStatus.RUNNING, version=0, snapshot=None)
    moto_server.reset_counts()

    store.create(run)
    paused = store.save(run.evolve(status=RunStatus.WAITING, snapshot=b'{"nodes": []}' * 50), expected_version=0)
    with_cards = store.record_delivery(paused, Delivery(cards={"a1": MessageRef(channel="C1", ts="1.1")}))
    decided = store.decide(
        "r-count", "a1", decision("U1"), now=paused.updated_at + 1, claim=Lease(owner="p1", until=1e10), member_of=IN_C1
    )
    assert decided.lease_owner == "p1" and decided.status is RunStatus.RESUMING, "the decision claimed the run"
    assert decided.snapshot == paused.snapshot, "a small state comes back with the decision: no extra read"
    assert with_cards.asks["a1"].card == decided.asks["a1"].card
    done = store.save(
        decided.evolve(status=RunStatus.COMPLETED, snapshot=None, state_ref=None), expected_version=decided.version
    )
    store.record_delivery(done, Delivery(final=MessageRef(channel="C1", ts="1.2")))

    counts = moto_server.counts()
    print(f"\napproval cycle on DynamoDB: {sum(counts.values())} requests {counts}")
    assert counts == {
        "dynamodb.PutItem": 1,  # create
        "dynamodb.UpdateItem": 5,  # save, record the card, decide and claim, save, record the end
    }


def test_large_snapshot_costs_batches_not_items(moto_server: CountingMotoServer, dynamodb_table: str) -> None:
    store = DynamoRunStore(dynamodb_table)
    run = make_run("r-big", snapshot=os.urandom(3 * 1024 * 1024))  # 11 chunks
    store.create(run)
    moto_server.reset_counts()

    store.save(run.evolve(snapshot=os.urandom(3 * 1024 * 1024)), expected_version=1)
    saved = moto_server.counts()
    moto_server.reset_counts()
    assert store.load("r-big") is not None
    loaded = moto_server.counts()

    print(f"\n3 MB snapshot: save {saved}, load {loaded}")
    # New chunks in one batch, then the record; the previous chunks are left to their TTL.
    assert saved == {"dynamodb.BatchWriteItem": 1, "dynamodb.UpdateItem": 1}
    assert loaded["dynamodb.GetItem"] == 1 and set(loaded) == {"dynamodb.GetItem", "dynamodb.Query"}
