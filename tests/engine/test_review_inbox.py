"""Found by review (issue 19): the inbox lists a quorum-1 "may have acted" card to people the policy refuses."""

from __future__ import annotations

import time

from engine import RunEngine
from engine.inbox import Inbox
from engine.records import AskStatus, Decision, RunStatus, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource


def engine(store: SqliteRunStore, publisher: RecordingPublisher) -> RunEngine:
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)


async def test_inbox_lists_may_have_acted_card_to_outsider_and_starter(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    first = engine(store, publisher)
    run = await first.start(graph="guarded-write", task="x", user="U0START", channel="C1")
    (ask,) = run.pending_asks()
    inbox = Inbox(store=store, directory=None, clock=time.time)
    assert await inbox.waiting_for("U0OUTSIDER") == [], "baseline: a normal card is not listed to an outsider"
    approve = Decision(verdict=Verdict.APPROVE, user="U0A", at=time.time())
    assert (await first.decide(run_id=run.run_id, ask_key=ask.key, decision=approve)).accepted
    decided = store.load(run.run_id, snapshot=False)
    assert decided is not None and decided.asks[ask.key].status is AskStatus.DECIDED
    store.claim(
        run.run_id,
        expected_version=decided.version,
        status=RunStatus.RESUMING,
        owner="dead/1",
        lease_until=time.time() - 1,
        now=time.time(),
        handing=[ask.key],
    )
    (swept,) = await engine(store, publisher).sweep()
    (again,) = swept.pending_asks()
    assert again.retry_of is not None
    listed_out = [a.key for _, a in await inbox.waiting_for("U0OUTSIDER")]
    listed_self = [a.key for _, a in await inbox.waiting_for("U0START")]
    assert listed_out == [] and listed_self == [], (
        f"may-have-acted card listed to an outsider {listed_out} / to the starter {listed_self}"
    )
