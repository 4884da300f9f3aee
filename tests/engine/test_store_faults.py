"""Store errors around a pass that ran a side effect, through the real engine and the real stores.

A pass that ran an approved tool can only be recorded by its save. The engine retries a
save that failed transiently for as long as its lease surely holds, and when the pass's
result can never be saved it ends the run as failed (a smaller write, every open card
closed) rather than leave it for a sweeper to run again. These tests break the save at
the store (SQLite's own error raised inside the real store, DynamoDB answering 500 or
too slowly through ``tests.support.faults``) and check that the tool runs exactly once
whatever happens, and that nobody runs it again afterwards.

Also here: a claim whose response is lost while a click lands on another ask of the run;
the engine must recognise its own claim at once, and must not lose that click.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.records import AskStatus, Closed, Decision, Run, RunStatus, Verdict
from engine.store import RunStore
from persistence.dynamodb import DynamoRunStore
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource
from tests.support.aws import REGION
from tests.support.faults import FaultProxy

# Short enough that the save's retries run out within seconds: the engine retries while
# more than the next pause is left before LEASE_MARGIN (5 s) of the lease, renewed every
# third of it. Long enough that the first failure still leaves time to fall back.
SHORT_LEASE = 9.0


def approve(user: str = "U1") -> Decision:
    return Decision(verdict=Verdict.APPROVE, user=user, at=time.time())


def engine(store: RunStore, publisher: RecordingPublisher, *, lease: float = 900.0, ahead: float = 0) -> RunEngine:
    """A new engine, as another process would be; ``ahead`` moves its clock forward."""
    made = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=lease)
    if ahead:
        made._clock = lambda: time.time() + ahead
    return made


async def approved_and_resumed(eng: RunEngine, run: Run) -> Run:
    """A click on the run's one card: decide and claim in one write, then resume here."""
    (ask,) = run.pending_asks()
    result = await eng.decide(run_id=run.run_id, ask_key=ask.key, decision=approve(), claim=True)
    assert result.accepted and result.claimed, "the click claimed the run it decided"
    final = await eng.follow_up(result)
    assert final is not None
    return final


async def assert_completed_once(store: RunStore, publisher: RecordingPublisher, final: Run) -> None:
    assert final.status is RunStatus.COMPLETED, f"the run ended {final.status.value}: {final.error}"
    stored = store.load(final.run_id, snapshot=False)
    assert stored is not None and stored.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:x"], "the approved tool ran exactly once"
    assert publisher.of("finished") == [("finished", final.run_id, "completed")], "the end was posted at once"
    assert not stored.owes_slack and stored.sweep_at is None, "nothing left for a sweeper"
    assert await engine(store, publisher, ahead=3600).sweep() == []
    assert test_graphs.markers() == ["writer:x"], "no later sweep ran the tool again"


async def assert_failed_once(store: RunStore, publisher: RecordingPublisher, final: Run, ask_key: str) -> None:
    """The pass's result could not be saved: the run ended failed, its card closed, nothing re-ran."""
    assert final.status is RunStatus.FAILED, f"the run ended {final.status.value}"
    assert final.error is not None and "could not be saved" in final.error
    stored = store.load(final.run_id, snapshot=False)
    assert stored is not None and stored.status is RunStatus.FAILED and stored.lease_owner is None
    ask = stored.asks[ask_key]
    assert ask.status is AskStatus.OBSOLETE and ask.closed is Closed.FAILED
    assert ("changed", final.run_id, f"{ask_key}:closed:failed") in publisher.events, "the card was closed"
    assert publisher.of("finished") == [("finished", final.run_id, "failed")]
    assert test_graphs.markers() == ["writer:x"], "the tool ran once before its result was lost"
    assert await engine(store, publisher, ahead=3600).sweep() == [], "past the lease, nothing is taken over"
    assert test_graphs.markers() == ["writer:x"], "no sweeper ran the tool again"


# -- SQLite: "database is locked" ---------------------------------------------------------------


class LockedSaves(SqliteRunStore):
    """The real SQLite store, where ``save`` finds the database locked.

    The error is raised where SQLite raises it (taking the write lock) inside the real
    ``save``, so the store's own mapping turns it into ``StoreUnavailable``. ``locked`` is
    how many saves still fail (None: every save of a pass's result, i.e. any save except
    the failed record the engine falls back to).
    """

    def __init__(self, path: str) -> None:
        self.locked: int | None = 0
        self.refused = 0
        self._in_save = threading.local()
        super().__init__(path)

    def save(self, run: Run, *, expected_version: int, **kwargs: Any) -> Run:
        self._in_save.run = run
        try:
            return super().save(run, expected_version=expected_version, **kwargs)
        finally:
            self._in_save.run = None

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        saving: Run | None = getattr(self._in_save, "run", None)
        if saving is not None and self._refuses(saving):
            self.refused += 1
            raise sqlite3.OperationalError("database is locked")
        with super()._write() as conn:
            yield conn

    def _refuses(self, run: Run) -> bool:
        if self.locked is None:
            return run.status is not RunStatus.FAILED
        if self.locked > 0:
            self.locked -= 1
            return True
        return False


async def test_sqlite_locked_saves_are_retried_until_one_lands(tmp_path: Path, publisher: RecordingPublisher) -> None:
    store = LockedSaves(str(tmp_path / "runs.sqlite3"))
    eng = engine(store, publisher)
    run = await eng.start(graph="guarded-write", task="x", user="U0", channel="C1")
    store.locked = 2

    final = await approved_and_resumed(eng, run)

    assert store.refused == 2, "the final save was refused twice before it landed"
    await assert_completed_once(store, publisher, final)


async def test_sqlite_a_save_that_stays_locked_ends_the_run_failed(
    tmp_path: Path, publisher: RecordingPublisher
) -> None:
    store = LockedSaves(str(tmp_path / "runs.sqlite3"))
    eng = engine(store, publisher, lease=SHORT_LEASE)
    run = await eng.start(graph="guarded-write", task="x", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    store.locked = None

    final = await approved_and_resumed(eng, run)

    assert store.refused >= 2, "the result's save was retried before the engine gave up on it"
    await assert_failed_once(store, publisher, final, ask.key)


# -- DynamoDB through the fault proxy ------------------------------------------------------------


def saving(status: RunStatus) -> Callable[[dict[str, Any]], bool]:
    """Matches the UpdateItem of a ``save`` whose record has ``status`` (not claims, decisions, deliveries)."""

    def match(body: dict[str, Any]) -> bool:
        if "write_id = :write_id" not in str(body.get("UpdateExpression", "")):
            return False
        names, values = body.get("ExpressionAttributeNames") or {}, body.get("ExpressionAttributeValues") or {}
        placeholder = next((p for p, name in names.items() if name == "status"), None)
        return placeholder is not None and values.get(":" + placeholder[1:]) == {"S": status.value}

    return match


@pytest.fixture
def proxied_store(fault_proxy: FaultProxy, dynamodb_table: str) -> Callable[..., DynamoRunStore]:
    """A DynamoDB store whose requests go through the fault proxy; botocore tries each request twice."""

    def make(*, read_timeout: float = 10) -> DynamoRunStore:
        config = Config(
            connect_timeout=2,
            read_timeout=read_timeout,
            retries={"total_max_attempts": 2, "mode": "standard"},  # botocore's own retry: one
        )
        client = boto3.client("dynamodb", region_name=REGION, endpoint_url=fault_proxy.url, config=config)
        return DynamoRunStore(dynamodb_table, client=client)

    return make


async def test_dynamodb_500s_on_the_final_save_are_retried_until_one_lands(
    proxied_store: Callable[..., DynamoRunStore], fault_proxy: FaultProxy, publisher: RecordingPublisher
) -> None:
    store = proxied_store()
    eng = engine(store, publisher)
    run = await eng.start(graph="guarded-write", task="x", user="U0", channel="C1")
    fault_proxy.fail(operations={"UpdateItem"}, when=saving(RunStatus.COMPLETED), times=4)

    final = await approved_and_resumed(eng, run)

    assert fault_proxy.count("fail", "UpdateItem") == 4, "two saves (two attempts each) failed before one landed"
    await assert_completed_once(store, publisher, final)


async def test_dynamodb_500s_that_never_end_make_the_run_fail(
    proxied_store: Callable[..., DynamoRunStore], fault_proxy: FaultProxy, publisher: RecordingPublisher
) -> None:
    store = proxied_store()
    eng = engine(store, publisher, lease=SHORT_LEASE)
    run = await eng.start(graph="guarded-write", task="x", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    fault_proxy.fail(operations={"UpdateItem"}, when=saving(RunStatus.COMPLETED))

    final = await approved_and_resumed(eng, run)

    assert fault_proxy.count("fail", "UpdateItem") >= 2
    await assert_failed_once(store, publisher, final, ask.key)


async def test_dynamodb_read_timeouts_on_the_final_save_are_retried_until_one_lands(
    proxied_store: Callable[..., DynamoRunStore], fault_proxy: FaultProxy, publisher: RecordingPublisher
) -> None:
    """DynamoDB answers too late: both of botocore's attempts at the final save time out on
    the client (1 s), so only the engine's own retry saves the pass. The timed-out requests
    reach DynamoDB 5 s late, after the retry landed, and fail their version condition."""
    store = proxied_store(read_timeout=1)
    eng = engine(store, publisher)
    run = await eng.start(graph="guarded-write", task="x", user="U0", channel="C1")
    fault_proxy.delay(seconds=5, operations={"UpdateItem"}, when=saving(RunStatus.COMPLETED), times=2)

    final = await approved_and_resumed(eng, run)

    assert fault_proxy.count("delay", "UpdateItem") == 2, "both attempts of the first save timed out"
    await assert_completed_once(store, publisher, final)


async def test_dynamodb_a_timed_out_final_save_that_landed_is_recognised_as_the_engines_own(
    proxied_store: Callable[..., DynamoRunStore], fault_proxy: FaultProxy, publisher: RecordingPublisher
) -> None:
    """Both attempts of the final save time out on the client, but the first one reaches
    DynamoDB (1.5 s late) and lands before the engine retries. The retry must recognise
    that landed write as its own (not as a lost lease): the end is posted at once, by the
    holder, not a minute later by a sweeper; the tool ran once and nothing runs it again."""
    store = proxied_store(read_timeout=1)
    eng = engine(store, publisher)
    run = await eng.start(graph="guarded-write", task="x", user="U0", channel="C1")
    fault_proxy.delay(seconds=1.5, operations={"UpdateItem"}, when=saving(RunStatus.COMPLETED), times=2)

    final = await approved_and_resumed(eng, run)

    assert fault_proxy.count("delay", "UpdateItem") == 2
    await assert_completed_once(store, publisher, final)


# -- a claim whose response is lost while a click lands --------------------------------------------


def claiming(body: dict[str, Any]) -> bool:
    """The UpdateItem of ``RunStore.claim`` (a decision that claims has another condition)."""
    return "lease_owner = :owner" in str(body.get("UpdateExpression", "")) and str(
        body.get("ConditionExpression", "")
    ).startswith("#version = :expected")


@dataclass
class LostClaim:
    run_id: str
    right: str  # the ask decided while the claim's answer was lost
    final: Run | None  # what ``resume`` returned
    stored: Run  # the run as stored afterwards
    seconds: float  # how long ``resume`` took


async def lost_claim_with_a_click_in_between(
    fault_proxy: FaultProxy, table: str, monkeypatch: pytest.MonkeyPatch, publisher: RecordingPublisher
) -> LostClaim:
    """A two-asks run, left decided without a claim; then ``resume``, whose claim lands but
    whose answer is lost; before botocore retries it, a click on the right ask lands from
    another process. Timeline: claim v -> v+1, click v+1 -> v+2, the retried claim fails its
    version condition and finds its own lease token."""
    elsewhere = DynamoRunStore(table)  # another process: straight to DynamoDB
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", fault_proxy.url)
    from persistence.aws import dynamodb_client

    store = DynamoRunStore(table, client=dynamodb_client())  # the bot's own client settings
    eng = engine(store, publisher, lease=600)  # waiting for it to lapse would time the test out
    run = await eng.start(graph="two-asks", task="t", user="U0", channel="C1")
    left = next(a for a in run.pending_asks() if a.node_id == "left")
    right = next(a for a in run.pending_asks() if a.node_id == "right")
    decided = await eng.decide(run_id=run.run_id, ask_key=left.key, decision=approve("U0BOB"))
    assert decided.accepted and not decided.claimed
    clicked: list[Run] = []
    fault_proxy.lose_response(
        operations={"UpdateItem"},
        when=claiming,
        then=lambda: clicked.append(
            elsewhere.decide(
                run.run_id, right.key, approve("U0CAROL"), now=time.time(), claim=None, member_of=frozenset({"C1"})
            )
        ),
    )

    began = time.monotonic()
    final = await asyncio.wait_for(eng.resume(run.run_id), timeout=60)
    seconds = time.monotonic() - began

    assert fault_proxy.hook_errors == []
    assert fault_proxy.count("lose_response", "UpdateItem") == 1, "the claim's answer was lost once"
    assert clicked and clicked[0].asks[right.key].status is AskStatus.DECIDED, "the click landed in between"
    assert clicked[0].lease_owner is not None, "... while the (lost) claim held the run"
    stored = elsewhere.load(run.run_id, snapshot=False)
    assert stored is not None
    return LostClaim(run_id=run.run_id, right=right.key, final=final, stored=stored, seconds=seconds)


async def test_a_claim_whose_response_was_lost_is_recognised_at_once(
    fault_proxy: FaultProxy, dynamodb_table: str, monkeypatch: pytest.MonkeyPatch, publisher: RecordingPublisher
) -> None:
    """The engine knows the lease it finds is its own: it runs the pass with the left
    answer at once (no 600 s wait for the lease to lapse) and releases the run."""
    lost = await lost_claim_with_a_click_in_between(fault_proxy, dynamodb_table, monkeypatch, publisher)

    assert "left:t" in test_graphs.markers(), "the pass ran in the claiming process, at once"
    assert test_graphs.markers().count("left:t") == 1
    assert lost.final is not None and lost.final.lease_owner is None and lost.stored.lease_owner is None
    assert lost.stored.status in (RunStatus.WAITING, RunStatus.COMPLETED), "released, not left held"
    assert lost.seconds < 30


async def test_a_click_that_lands_while_a_claims_answer_is_lost_is_kept(
    fault_proxy: FaultProxy, dynamodb_table: str, monkeypatch: pytest.MonkeyPatch, publisher: RecordingPublisher
) -> None:
    """The decision on the right ask, recorded while the claim held the run, must reach the
    graph: the holder adopts it (its save finds the version moved) and the run completes."""
    lost = await lost_claim_with_a_click_in_between(fault_proxy, dynamodb_table, monkeypatch, publisher)

    decision = lost.stored.asks[lost.right].decision
    assert decision is not None and decision.user == "U0CAROL", "the click made during the claim was kept"
    assert lost.final is not None and lost.final.status is RunStatus.COMPLETED
    assert sorted(test_graphs.markers()) == ["left:t", "right:t"], "each approved tool ran once"
