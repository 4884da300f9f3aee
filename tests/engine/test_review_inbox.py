"""Found by review (issue 19): the inbox lists a quorum-1 "may have acted" card to people the policy refuses."""

from __future__ import annotations

import time

from engine import RunEngine
from engine.inbox import Inbox
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource, died_holding_approval


def engine(store: SqliteRunStore, publisher: RecordingPublisher) -> RunEngine:
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)


async def test_inbox_lists_may_have_acted_card_to_outsider_and_starter(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    inbox = Inbox(store=store, directory=None, clock=time.time)
    await died_holding_approval(store, publisher, starter="U0START", approvers=("U0A",))
    (swept,) = await engine(store, publisher).sweep()
    (again,) = swept.pending_asks()
    assert again.retry_of is not None
    listed_out = [a.key for _, a in await inbox.waiting_for("U0OUTSIDER")]
    listed_self = [a.key for _, a in await inbox.waiting_for("U0START")]
    assert listed_out == [] and listed_self == [], (
        f"may-have-acted card listed to an outsider {listed_out} / to the starter {listed_self}"
    )
