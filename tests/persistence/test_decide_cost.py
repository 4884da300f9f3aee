"""What one approval under ``all_of`` or a quorum costs on DynamoDB, counted at moto's door.

The ballot hands the store the last record of the ask its process saw (``known``: the
card it posted, an earlier click, a refusal). From it the ballot looks the person up in
the ask's groups before the write, and the store shapes the write (a vote, the ``all_of``
entry it fills): one UpdateItem. A process that never saw the ask writes blind first; the
refusal returns the record, and the write after the lookup is shaped by it: two. Before,
an ``all_of`` approval cost three (refused blind, refused as a decision, the vote) and a
quorum vote two (three by a group). A failed conditional write is billed like a write (by
the item's size), so units are priced the way DynamoDB bills them (``tests/support/capacity.py``).
"""

from __future__ import annotations

import time
from dataclasses import replace

from engine.ballot import Ballot
from engine.policy import AskRules
from engine.ports import DecideResult
from engine.records import AskStatus, Decision, MessageRef, Run, Verdict
from engine.store import Lease
from persistence.dynamodb import DynamoRunStore
from tests.engine.conftest import FakeDirectory
from tests.persistence.conftest import make_run
from tests.support.aws import CountingMotoServer

FIN, LEGAL = "S0FIN", "S0LEGAL"
CARD = MessageRef(channel="C1", ts="1700000000.000100")


def _waiting(store: DynamoRunStore, rules: AskRules) -> Run:
    base = make_run(f"r-cost-{time.monotonic_ns()}", started_by="U0S")
    run = base.evolve(asks={"a1": replace(base.asks["a1"], rules=rules)})
    store.create(run)
    return run


async def _click(ballot: Ballot, run: Run, user: str) -> DecideResult:
    decision = Decision(verdict=Verdict.APPROVE, user=user, at=time.time())
    claim = Lease(owner=f"p-{user}", until=time.time() + 60)
    return await ballot.record(run_id=run.run_id, ask_key="a1", decision=decision, claim=claim, card=CARD)


async def _cost(moto_server: CountingMotoServer, ballot: Ballot, run: Run, user: str) -> tuple[DecideResult, int, int]:
    """One click's result, its UpdateItems (refused ones included) and its write units."""
    moto_server.reset_counts()
    result = await _click(ballot, run, user)
    counts, capacity = moto_server.counts(), moto_server.capacity()
    assert set(counts) == {"dynamodb.UpdateItem"}, f"a decision reads nothing and writes one item: {counts}"
    return result, counts["dynamodb.UpdateItem"], int(capacity["write_units"])


def _ballot(store: DynamoRunStore, *, seen: Run | None = None) -> Ballot:
    """A process's ballot; with ``seen``, one that posted that run's card (``RunEngine`` tells it)."""
    ballot = Ballot(store=store, directory=FakeDirectory(groups={FIN: {"U0A", "U0B"}, LEGAL: {"U0C"}}), clock=time.time)
    if seen is not None:
        ballot.remember(seen)
    return ballot


async def test_an_all_of_approval_costs_one_write(moto_server: CountingMotoServer, dynamodb_table: str) -> None:
    store = DynamoRunStore(dynamodb_table)
    run = _waiting(store, AskRules(quorum=2, all_of=(FIN, LEGAL)))
    ballot = _ballot(store, seen=run)

    voted, writes, units = await _cost(moto_server, ballot, run, "U0A")
    print(f"\nall_of, the approval that fills finance: {writes} UpdateItems, {units} write units")
    assert voted.accepted and voted.ask is not None and voted.ask.filled == {FIN: "U0A"}
    # Looked up before the write (the card's record says the ask is all_of), then written
    # once as the vote that fills finance. Before: refused blind, refused as a decision, voted.
    assert writes == 1, writes

    decided, writes, units = await _cost(moto_server, ballot, run, "U0C")
    print(f"all_of, the approval that fills legal and decides: {writes} UpdateItems, {units} write units")
    assert decided.accepted and decided.ask is not None and decided.ask.status is AskStatus.DECIDED
    assert decided.ask.decision is not None and decided.ask.decision.counts_for == LEGAL
    assert decided.claimed, "the approval that decides still claims the run in the same write"
    assert writes == 1, writes


async def test_an_all_of_approval_in_a_process_that_never_saw_the_ask_is_refused_once(
    moto_server: CountingMotoServer, dynamodb_table: str
) -> None:
    store = DynamoRunStore(dynamodb_table)
    run = _waiting(store, AskRules(quorum=2, all_of=(FIN, LEGAL)))
    voted, writes, units = await _cost(moto_server, _ballot(store), run, "U0A")
    print(f"\nall_of, an approval in a process new to the ask: {writes} UpdateItems, {units} write units")
    assert voted.accepted and voted.ask is not None and voted.ask.filled == {FIN: "U0A"}
    # The blind write is refused (not looked up yet); the one after the lookup is shaped
    # by the record that refusal returned: the vote. Before, it was refused a second time.
    assert writes == 2, writes


async def test_a_quorum_vote_costs_one_write(moto_server: CountingMotoServer, dynamodb_table: str) -> None:
    store = DynamoRunStore(dynamodb_table)
    listed = _waiting(store, AskRules(approvers=("U0A", "U0B", "U0C"), quorum=3))
    ballot = _ballot(store, seen=listed)
    for user in ("U0A", "U0B"):
        voted, writes, units = await _cost(moto_server, ballot, listed, user)
        print(f"\nquorum=3 of listed people, a vote: {writes} UpdateItems, {units} write units")
        assert voted.accepted and voted.ask is not None and voted.ask.status is AskStatus.PENDING
        assert writes == 1, "written as the vote at once; before, as a decision first (refused)"

    grouped = _waiting(store, AskRules(approvers=(FIN,), quorum=2))
    voted, writes, units = await _cost(moto_server, _ballot(store, seen=grouped), grouped, "U0A")
    print(f"quorum=2 of a group, the first approval: {writes} UpdateItems, {units} write units")
    assert voted.accepted and voted.ask is not None and set(voted.ask.votes) == {"U0A"}
    assert writes == 1, "looked up in the group before the write; before: two refusals, then the vote"


async def test_a_quorum_vote_in_a_process_that_never_saw_the_ask_is_refused_once(
    moto_server: CountingMotoServer, dynamodb_table: str
) -> None:
    store = DynamoRunStore(dynamodb_table)
    grouped = _waiting(store, AskRules(approvers=(FIN,), quorum=2))
    voted, writes, units = await _cost(moto_server, _ballot(store), grouped, "U0A")
    print(f"\nquorum=2 of a group, a vote in a process new to the ask: {writes} UpdateItems, {units} write units")
    assert voted.accepted and voted.ask is not None and set(voted.ask.votes) == {"U0A"}
    # Refused before the lookup (not an approver yet); after it, written as the vote at once.
    assert writes == 2, writes
