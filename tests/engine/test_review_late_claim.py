"""Found by review (issue 19): a follow-up whose claim ran out before its pass began (nothing ran) leaves the run
to the sweeper, whose takeover raised a "may have acted" card for an approval that reached
no pass at all. Now it takes the run again at the version its claim made (nobody took it
over), so the approval runs once and no card warns about a tool that never ran."""

from __future__ import annotations

import asyncio
import time

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.records import Decision, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource


async def test_a_late_follow_up_raises_no_may_have_acted_card_for_a_tool_that_never_ran(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    eng = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=1)
    run = await eng.start(graph="guarded-write", task="x", user="U0START", channel="C1")
    (ask,) = run.pending_asks()
    approve = Decision(verdict=Verdict.APPROVE, user="U0A", at=time.time())
    result = await eng.decide(run_id=run.run_id, ask_key=ask.key, decision=approve, claim=True)
    assert result.claimed
    await asyncio.sleep(1.3)  # the process stalls past its claim before the follow-up
    await eng.follow_up(result)
    assert test_graphs.markers() == ["writer:x"], "taken again at the same version: it ran, once"
    for _ in range(3):
        await eng.sweep()
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None
    warned = [a.key for a in stored.pending_asks() if a.retry_of is not None]
    assert not warned, (
        f"status {stored.status}: card {warned} says the tool may have acted; it never ran "
        f"(markers {test_graphs.markers()})"
    )
