"""What an approval cycle costs on DynamoDB, counted at moto's HTTP front door."""

from __future__ import annotations

import os

from persistence import RunStatus
from persistence.dynamodb import DynamoRunStore
from tests.persistence.conftest import decision, make_run
from tests.support.aws import CountingMotoServer


def test_approval_cycle_is_five_requests(moto_server: CountingMotoServer, dynamodb_table: str) -> None:
    store = DynamoRunStore(dynamodb_table)
    run = make_run("r-count", status=RunStatus.RUNNING, version=0, snapshot=None)
    moto_server.reset_counts()

    store.create(run)
    saved = store.save(run.evolve(status=RunStatus.WAITING, snapshot=b'{"nodes": []}' * 50), expected_version=0)
    decided = store.decide("r-count", "a1", decision("U1"), now=saved.updated_at + 1)
    version = store.claim(
        "r-count",
        expected_version=decided.version,
        status=RunStatus.RESUMING,
        owner="p1",
        lease_until=saved.updated_at + 60,
        now=saved.updated_at + 2,
    )
    store.save(decided.evolve(status=RunStatus.COMPLETED, version=version), expected_version=version)

    counts = moto_server.counts()
    print(f"\napproval cycle on DynamoDB: {sum(counts.values())} requests {counts}")
    assert counts == {
        "dynamodb.PutItem": 3,  # create, save, save
        "dynamodb.UpdateItem": 2,  # decide, claim
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
    # New chunks in one batch, the run item, the previous chunks deleted in one batch.
    assert saved == {"dynamodb.BatchWriteItem": 2, "dynamodb.PutItem": 1}
    assert loaded["dynamodb.GetItem"] == 1 and set(loaded) == {"dynamodb.GetItem", "dynamodb.Query"}
