"""Found by review (issue 19): renew(now=) when lease_until is absent (DynamoDB) and at the boundary, both stores."""

from __future__ import annotations

import pytest

from engine.records import RunStatus
from persistence import dynamo_items as items
from tests.persistence.conftest import Backend, make_run


@pytest.mark.parametrize("backend", ["dynamodb"], indirect=True)
def test_renew_without_lease_until(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-renew-1", status=RunStatus.RUNNING, lease_owner="me/1", lease_until=1000.0)
    store.create(run)
    store._ddb.update_item(TableName=backend.table, Key=items.key(run.run_id), UpdateExpression="REMOVE lease_until")  # type: ignore[attr-defined]
    assert store.renew(run.run_id, owner="me/1", lease_until=2000.0, now=900.0) is False
    assert store.renew(run.run_id, owner="me/1", lease_until=2000.0) is True


@pytest.mark.parametrize("backend", ["sqlite", "dynamodb"], indirect=True)
def test_renew_boundary(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-renew-2", status=RunStatus.RUNNING, lease_owner="me/1", lease_until=1000.0)
    store.create(run)
    assert store.renew(run.run_id, owner="me/1", lease_until=1500.0, now=1000.0) is True
    assert store.renew(run.run_id, owner="me/1", lease_until=2000.0, now=1500.0001) is False
