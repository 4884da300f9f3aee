"""Large and binary node conversations pause and resume across processes, on both stores.

A node's whole conversation is in the snapshot while it waits for a human, so a tool that
returned megabytes (a log, a dump) makes the snapshot that big. The text here is base64
of random bytes: it does not compress, so the DynamoDB store has to split it over items
that each stay below DynamoDB's 400 KB item limit. Bytes (an image a tool returned) are
not JSON and must still come back as bytes in another process.

Each ``engine()`` call stands for another process: a new engine over the same store.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

import tests.support.graphs as test_graphs
import tests.support.source_graphs as source_graphs
from engine import RunEngine
from engine.records import Decision, Run, RunStatus, Verdict
from engine.store import RunStore
from graph_defs import load_graph_modules
from persistence.dynamodb import DynamoRunStore
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource
from tests.support.aws import REGION

DYNAMODB_ITEM_LIMIT = 400 * 1024
LARGE_SNAPSHOT_BYTES = 10 * 1024 * 1024

EngineFactory = Callable[[], RunEngine]


@pytest.fixture(autouse=True)
def source_graphs_loaded() -> Iterator[None]:
    load_graph_modules(["tests.support.source_graphs"])
    source_graphs.BLOB_DIGESTS.clear()
    yield
    source_graphs.BLOB_DIGESTS.clear()


@pytest.fixture(params=["sqlite", "dynamodb"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, RunStore]:
    if request.param == "sqlite":
        return "sqlite", SqliteRunStore(str(tmp_path / "runs.sqlite3"))
    request.getfixturevalue("aws_env")
    table: str = request.getfixturevalue("dynamodb_table")
    return table, DynamoRunStore(table)


def engines(store: RunStore) -> EngineFactory:
    publisher = RecordingPublisher()

    def make() -> RunEngine:
        return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=900.0)

    return make


def item_size(attributes: dict[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values (a slight overestimate for numbers and maps)."""
    return sum(len(name.encode()) + _value_size(value) for name, value in attributes.items())


def _value_size(value: dict[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "B":
        return len(inner)
    if kind in ("S", "N"):
        return len(str(inner).encode())
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + item_size(inner) + len(inner)
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in inner)
    if kind in ("SS", "NS"):
        return sum(len(str(v).encode()) for v in inner)
    if kind == "BS":
        return sum(len(v) for v in inner)
    raise AssertionError(f"unexpected DynamoDB type {kind}")


def largest_item(table: str) -> int:
    client = boto3.client("dynamodb", region_name=REGION)
    sizes = [
        item_size(item) for page in client.get_paginator("scan").paginate(TableName=table) for item in page["Items"]
    ]
    assert sizes, "the table is empty"
    return max(sizes)


async def pause(engine: EngineFactory, *, graph: str) -> Run:
    paused = await engine().start(graph=graph, task="go", user="U0", channel="C1")
    assert paused.status is RunStatus.WAITING, paused.error
    return paused


async def approve_elsewhere(engine: EngineFactory, paused: Run) -> Run:
    """Decide in a second process and resume in a third."""
    (ask,) = paused.pending_asks()
    decided = await engine().decide(
        run_id=paused.run_id, ask_key=ask.key, decision=Decision(verdict=Verdict.APPROVE, user="U1", at=time.time())
    )
    assert decided.accepted
    finished = await engine().resume(paused.run_id)
    assert finished is not None
    return finished


async def test_a_1_6_mb_incompressible_conversation_resumes_elsewhere(backend: tuple[str, RunStore]) -> None:
    table, store = backend
    engine = engines(store)
    paused = await pause(engine, graph="big-context")
    state = store.fetch_state(paused)
    assert state is not None and len(state) > 1_600_000
    if table != "sqlite":
        assert largest_item(table) < DYNAMODB_ITEM_LIMIT  # while the big state is stored

    final = await approve_elsewhere(engine, paused)

    assert final.status is RunStatus.COMPLETED, final.error
    (digest,) = source_graphs.BLOB_DIGESTS  # the blob tool ran once, before the pause
    assert final.output == f"blob sha256 {digest}; wrote big"
    assert test_graphs.markers() == ["big"]


async def test_a_snapshot_over_10_mb_round_trips(
    backend: tuple[str, RunStore], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table, store = backend
    monkeypatch.setenv(source_graphs.BLOB_BYTES_VARIABLE, str(8 * 1024 * 1024))  # base64: 11.2 MB of text
    engine = engines(store)
    started = time.perf_counter()
    paused = await pause(engine, graph="big-context")
    state = store.fetch_state(paused)
    assert state is not None and len(state) >= LARGE_SNAPSHOT_BYTES
    biggest = largest_item(table) if table != "sqlite" else 0  # while the big state is stored
    final = await approve_elsewhere(engine, paused)
    elapsed = time.perf_counter() - started

    assert final.status is RunStatus.COMPLETED, final.error
    (digest,) = source_graphs.BLOB_DIGESTS
    assert final.output == f"blob sha256 {digest}; wrote big"
    if table != "sqlite":
        assert biggest < DYNAMODB_ITEM_LIMIT
    with capsys.disabled():
        print(
            f"\n[{'sqlite' if table == 'sqlite' else 'dynamodb'}] snapshot of {len(state):,} bytes "
            f"paused and resumed across engines in {elapsed:.1f}s"
            + (f"; largest DynamoDB item {biggest:,} bytes" if biggest else "")
        )


async def test_image_bytes_in_a_tool_result_survive_another_process(backend: tuple[str, RunStore]) -> None:
    _, store = backend
    engine = engines(store)
    final = await approve_elsewhere(engine, await pause(engine, graph="image-context"))

    assert final.status is RunStatus.COMPLETED, final.error
    (digest,) = source_graphs.BLOB_DIGESTS
    assert final.output == f"image sha256 {digest}; wrote chart"
    assert digest != hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("bucket", [False, True], ids=["chunks", "s3"])
async def test_a_run_waiting_for_weeks_gets_its_state_rewritten_before_it_expires(
    request: pytest.FixtureRequest, bucket: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offloaded state carries a TTL (chunks) or a lifecycle rule (S3): a run still waiting
    a week before that gets its state written anew by the sweeper, cards untouched."""
    monkeypatch.setenv(source_graphs.BLOB_BYTES_VARIABLE, str(400_000))
    request.getfixturevalue("aws_env")
    table: str = request.getfixturevalue("dynamodb_table")
    name = request.getfixturevalue("s3_bucket") if bucket else None
    store = DynamoRunStore(table, bucket=name)
    publisher = RecordingPublisher()
    wait = 365 * 86400.0  # an ask that may wait for months: only the state's TTL is due
    paused = await RunEngine(
        store=store, graphs=RegistrySource(), publisher=publisher, default_expires_after=wait
    ).start(graph="big-context", task="go", user="U0", channel="C1")
    ref = paused.state_ref
    assert ref is not None and ref["kind"] == ("s3" if bucket else "chunks") and paused.sweep_at is not None
    state = store.fetch_state(paused)

    later = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, default_expires_after=wait)
    later._clock = lambda: paused.sweep_at + 1  # type: ignore[method-assign, operator]
    (swept,) = await later.sweep()

    assert swept.status is RunStatus.WAITING and swept.state_ref is not None
    assert swept.state_ref["key"] != ref["key"] and swept.state_ref["expires_at"] > ref["expires_at"]
    assert store.fetch_state(swept) == state, "the same state, under new keys with a new expiry"
    assert swept.asks == paused.asks and len(publisher.of("card")) == 1, "cards untouched"
    assert swept.sweep_at is not None and swept.sweep_at > paused.sweep_at  # type: ignore[operator]
    assert source_graphs.BLOB_DIGESTS and len(source_graphs.BLOB_DIGESTS) == 1, "no pass ran again"
