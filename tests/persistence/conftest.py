"""One fixture, ``backend``, that runs a test against every RunStore implementation."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from persistence import Ask, AskStatus, Decision, MessageRef, Run, RunStatus, RunStore, SqliteRunStore, Verdict


def item_size(item: dict[str, Any]) -> int:
    """DynamoDB's item size by the published rules (numbers at their 21-byte maximum)."""

    def value(v: dict[str, Any]) -> int:
        kind, inner = next(iter(v.items()))
        if kind == "S":
            return len(inner.encode())
        if kind == "B":
            return len(inner)
        if kind == "N":
            return 21
        if kind == "M":
            return 3 + sum(len(k.encode()) + value(x) + 1 for k, x in inner.items())
        if kind == "L":
            return 3 + sum(value(x) + 1 for x in inner)
        return 1

    return sum(len(k.encode()) + value(v) for k, v in item.items())


@dataclass
class Backend:
    name: str
    make: Callable[[], RunStore]
    table: str | None = None
    bucket: str | None = None
    _made: list[RunStore] = field(default_factory=list)

    def store(self) -> RunStore:
        """A new store instance, as a new process would open it."""
        store = self.make()
        self._made.append(store)
        return store

    @property
    def dynamo(self) -> bool:
        return self.table is not None

    def items(self) -> list[dict[str, Any]]:
        assert self.table is not None
        client = boto3.client("dynamodb")
        found: list[dict[str, Any]] = []
        for page in client.get_paginator("scan").paginate(TableName=self.table, ConsistentRead=True):
            found.extend(page["Items"])
        return found

    def offloaded(self) -> set[str]:
        """Every stored piece of snapshot outside a run item: chunk keys and S3 keys."""
        if not self.dynamo:
            return set()
        found = {
            f"{i['pk']['S']}/{i['sk']['S']}"
            for i in self.items()
            if i["pk"]["S"].startswith("run#") and i["sk"]["S"] != "run"  # not inbox or App Home items
        }
        if self.bucket:
            listing = boto3.client("s3").list_objects_v2(Bucket=self.bucket)
            found |= {o["Key"] for o in listing.get("Contents", [])}
        return found

    def close(self) -> None:
        for store in self._made:
            if isinstance(store, SqliteRunStore):
                store.close()


@pytest.fixture(params=["sqlite", "dynamodb", "dynamodb+s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Backend]:
    if request.param == "sqlite":
        path = str(tmp_path / "runs.db")
        made = Backend("sqlite", lambda: SqliteRunStore(path))
    else:
        from persistence.dynamodb import DynamoRunStore

        table: str = request.getfixturevalue("dynamodb_table")
        bucket: str | None = request.getfixturevalue("s3_bucket") if request.param.endswith("s3") else None
        made = Backend(request.param, lambda: DynamoRunStore(table, bucket=bucket), table, bucket)
    yield made
    made.close()


IN_C1 = frozenset({"C1"})  # what a decider of a make_run ask is shown to be in: its channel


def make_run(run_id: str, **changes: Any) -> Run:
    now = time.time()
    asks = {
        "a1": Ask(
            key="a1",
            interrupt_id="v1:before_tools:abc",
            name="approve-deploy",
            reason={"tool": "deploy", "cost": 0.1, "ratio": 1.0, "big": 2**70, "note": "déjà vu ✓ 🚀", "n": None},
            node_id="deployer",
            status=AskStatus.PENDING,
            created_at=now,
            card=MessageRef(channel="C1", ts="1700000000.000100"),
        ),
        "a2": Ask(
            key="a2",
            interrupt_id="strands:human-in-the-loop",
            name="confirm",
            reason=["list", 1, 2.5, {"nested": [True, False]}],
            node_id=None,
            status=AskStatus.PENDING,
            created_at=now + 0.25,
            verdicts=(Verdict.APPROVE, Verdict.REJECT),
        ),
    }
    run = Run(
        run_id=run_id,
        graph="deploy",
        task="ship it — «now»",
        started_by="U0",
        channel="C1",
        status=RunStatus.WAITING,
        version=1,
        created_at=now,
        updated_at=now,
        thread=MessageRef(channel="C1", ts="1700000000.000001"),
        asks=asks,
        snapshot=b'{"state": "small", "text": "\xc3\xa9"}',
    )
    return run.evolve(**changes)


def decision(user: str, **changes: Any) -> Decision:
    base = Decision(verdict=Verdict.APPROVE, user=user, at=time.time())
    return Decision(**{**base.__dict__, **changes})
