"""What a resume through our engine costs, against Strands resuming the same graph in memory.

Ours is the cross-process path a click takes: load the run from the store, claim it,
build the graph anew from its factory, restore the snapshot, resume with the decision,
snapshot again and save (``RunEngine.resume``). The baseline is Strands' own resume of
the same graph on the live object that was interrupted (``await graph.invoke_async(
responses)``), which needs none of that because nothing left memory. The ratio is the
price of being able to resume anywhere: on another replica, after a restart, days later.

``invoke_async`` rather than ``graph(responses)``: the sync call adds a thread and an
event loop of its own, which would inflate the baseline and flatter our ratio.

The graph's first pass (up to the ask) and the decision itself are set up outside the
timed part on both sides; only the resume is timed. Samples alternate which side goes
first, so drift on a noisy machine hits both alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.graphs import CHATTY, SMALL
from bench.stats import Comparison, compare
from bot.services import GraphCatalog
from engine import RunEngine
from engine.records import Ask, Decision, MessageRef, Run, RunStatus, Verdict
from engine.store import RunStore
from persistence import snapshots

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer
    from strands.types.interrupt import InterruptResponseContent

    from tests.support.aws import CountingMotoServer

TASK = "ship the release"
USER = "U0BENCH"
APPROVER = "U0APPROVER"
CHANNEL = "C0BENCH"
BASELINE = "Strands resuming the same live graph in memory (invoke_async), interleaved"


class NullPublisher:
    """Posts nothing: Slack round trips are not part of what this benchmark compares."""

    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        return MessageRef(channel=channel, ts="1.0")

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        return MessageRef(channel=CHANNEL, ts=f"2.{ask.key}")

    async def update_card(self, *, run: Run, ask: Ask) -> None:
        return None

    async def post_final(self, *, run: Run) -> MessageRef:
        return MessageRef(channel=CHANNEL, ts="3.0")

    async def post_notice(self, *, run: Run, ask: Ask, index: int) -> MessageRef:
        return MessageRef(channel=CHANNEL, ts=f"4.{ask.key}.{index}")

    async def find_posted(self, *, run: Run, what: str) -> MessageRef | None:
        return None

    async def retract(self, *, ref: MessageRef) -> None:
        return None


@dataclass(frozen=True, kw_only=True)
class SnapshotSize:
    """The paused graph's state as ``serialize_state`` makes it, and as the store keeps it."""

    graph: str
    raw_bytes: int
    stored_bytes: int

    def as_dict(self) -> dict[str, int | str]:
        return {"graph": self.graph, "raw_bytes": self.raw_bytes, "stored_bytes": self.stored_bytes}


@dataclass(frozen=True, kw_only=True)
class ResumeReport:
    backend: str
    comparisons: list[Comparison]
    sizes: list[SnapshotSize]


def _response() -> dict[str, Any]:
    # What engine.sources.response_for sends for an approval: both sides get the same value.
    return {"decision": Verdict.APPROVE.value, "text": None, "user": APPROVER}


async def _ours_once(*, engine: RunEngine, store: RunStore, graph: str) -> tuple[float, Run]:
    paused = await engine.start(graph=graph, task=TASK, user=USER, channel=CHANNEL)
    if paused.status is not RunStatus.WAITING or len(paused.pending_asks()) != 1:
        raise RuntimeError(f"{graph}: expected one pending ask, got {paused.status} {list(paused.asks)}")
    if paused.snapshot is None:  # the engine may hand back the run without its state: read what was saved
        stored = await asyncio.to_thread(store.load, paused.run_id)
        paused = paused.evolve(snapshot=stored.snapshot if stored is not None else None)
    decision = Decision(verdict=Verdict.APPROVE, user=APPROVER, at=time.time())
    # The approver shown to be in the run's channel, as a click's card shows them.
    decide = functools.partial(store.decide, now=time.time(), member_of=frozenset({CHANNEL}))
    await asyncio.to_thread(decide, paused.run_id, paused.pending_asks()[0].key, decision)
    gc.collect()
    started = time.perf_counter()
    done = await engine.resume(paused.run_id)
    elapsed = time.perf_counter() - started
    if done is None or done.status is not RunStatus.COMPLETED:
        raise RuntimeError(f"{graph}: our resume did not complete: {done and done.status} {done and done.error}")
    return elapsed, paused


async def _strands_once(*, catalog: GraphCatalog, graph: str) -> float:
    from strands.multiagent.base import Status

    live = catalog.build(graph)
    first = await live.invoke_async(TASK)
    if first.status != Status.INTERRUPTED or len(first.interrupts) != 1:
        raise RuntimeError(f"{graph}: expected one interrupt, got {first.status}")
    responses: list[InterruptResponseContent] = [
        {"interruptResponse": {"interruptId": i.id, "response": _response()}} for i in first.interrupts
    ]
    gc.collect()
    started = time.perf_counter()
    result = await live.invoke_async(responses)
    elapsed = time.perf_counter() - started
    if result.status != Status.COMPLETED:
        raise RuntimeError(f"{graph}: Strands' resume did not complete: {result.status}")
    return elapsed


async def measure_resume(
    *,
    store: RunStore,
    backend: str,
    samples: int,
    warmup: int = 2,
    graphs: Sequence[str] = (SMALL, CHATTY),
    modules: Sequence[str] = ("bench.graphs",),
) -> ResumeReport:
    """Interleaved resumes of each graph (from the graph ``modules``), ours and Strands', on one store."""
    catalog = GraphCatalog(extra_modules=list(modules))
    await asyncio.to_thread(catalog.load)
    engine = RunEngine(store=store, graphs=catalog, publisher=NullPublisher(), owner=f"bench-{backend}")
    comparisons: list[Comparison] = []
    sizes: list[SnapshotSize] = []
    for graph in graphs:
        ours: list[float] = []
        theirs: list[float] = []
        paused: Run | None = None
        for i in range(warmup + samples):
            if i % 2 == 0:
                ours_time, paused = await _ours_once(engine=engine, store=store, graph=graph)
                strands_time = await _strands_once(catalog=catalog, graph=graph)
            else:
                strands_time = await _strands_once(catalog=catalog, graph=graph)
                ours_time, paused = await _ours_once(engine=engine, store=store, graph=graph)
            if i >= warmup:
                ours.append(ours_time)
                theirs.append(strands_time)
        comparisons.append(compare(name=f"resume {graph} ({backend})", ours=ours, baseline=theirs))
        if paused is not None and paused.snapshot is not None:
            raw = paused.snapshot
            sizes.append(SnapshotSize(graph=graph, raw_bytes=len(raw), stored_bytes=len(snapshots.encode(raw))))
    return ResumeReport(backend=backend, comparisons=comparisons, sizes=sizes)


async def measure_sqlite(
    *,
    samples: int,
    warmup: int = 2,
    graphs: Sequence[str] = (SMALL, CHATTY),
    modules: Sequence[str] = ("bench.graphs",),
) -> ResumeReport:
    from persistence.sqlite import SqliteRunStore

    with tempfile.TemporaryDirectory(prefix="bench-resume-") as workdir:
        store = SqliteRunStore(os.path.join(workdir, "runs.sqlite3"))
        try:
            return await measure_resume(
                store=store, backend="sqlite", samples=samples, warmup=warmup, graphs=graphs, modules=modules
            )
        finally:
            store.close()


_AWS_OVERRIDES = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
)


@contextlib.contextmanager
def aws_at(url: str) -> Iterator[dict[str, str]]:
    """Point boto3 in this process at moto's server ``url``, with fake credentials; yields that environment.

    No profile or metadata service either, so nothing here can reach a real AWS account;
    the environment is put back as it was when the block ends.
    """
    from tests.support.aws import _env

    env = _env(url)
    saved = {name: os.environ.get(name) for name in (*env, *_AWS_OVERRIDES)}
    for name in _AWS_OVERRIDES:
        os.environ.pop(name, None)
    os.environ.update(env)
    try:
        yield env
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def counting_moto() -> Iterator[CountingMotoServer]:
    """moto's counting server (``tests/support/aws.py``: requests by operation, capacity units), with
    this process's boto3 pointed at it for the block's length."""
    from tests.support.aws import CountingMotoServer

    server = CountingMotoServer()
    with _serving(server):
        yield server


@contextlib.contextmanager
def _serving(server: ThreadedMotoServer) -> Iterator[ThreadedMotoServer]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server.start()
    try:
        host, port = server.get_host_and_port()
        with aws_at(f"http://{host}:{port}"):
            yield server
    finally:
        server.stop()


@contextlib.contextmanager
def moto_dynamodb() -> Iterator[str]:
    """moto's plain server on 127.0.0.1 with a fresh table; yields the table name.

    Plain, not the counting one: its metering handles DynamoDB requests one at a time and
    reads items around each write, which would be timed here as if it were DynamoDB's.
    """
    from moto.server import ThreadedMotoServer

    from persistence import create_table

    with _serving(ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)):
        table = f"bench-{uuid.uuid4().hex[:10]}"
        create_table(table=table)
        yield table


async def measure_dynamodb(
    *,
    samples: int,
    warmup: int = 2,
    graphs: Sequence[str] = (SMALL, CHATTY),
    modules: Sequence[str] = ("bench.graphs",),
) -> ResumeReport:
    from persistence.dynamodb import DynamoRunStore

    with moto_dynamodb() as table:
        store = DynamoRunStore(table)
        return await measure_resume(
            store=store, backend="dynamodb", samples=samples, warmup=warmup, graphs=graphs, modules=modules
        )
