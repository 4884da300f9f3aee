"""What one approval under ``all_of`` or a quorum costs on DynamoDB, counted at moto's door.

The ballot writes first without looking anyone up (a listed person's click costs one
write). Under ``all_of`` that write is refused until the person was looked up in the
ask's groups; the write after the lookup is shaped by the record the refusal returned
(``known``: a vote, the entry it fills), not written blind and refused a second time. A
failed conditional write is billed like a write (by the item's size), so each refusal
spared is a write unit or more. Units are priced the way DynamoDB bills them
(``tests/support/capacity.py``).
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


async def test_an_all_of_approval_costs_one_refusal_and_one_write(
    moto_server: CountingMotoServer, dynamodb_table: str
) -> None:
    store = DynamoRunStore(dynamodb_table)
    directory = FakeDirectory(groups={FIN: {"U0A", "U0B"}, LEGAL: {"U0C"}})
    ballot = Ballot(store=store, directory=directory, clock=time.time)
    run = _waiting(store, AskRules(quorum=2, all_of=(FIN, LEGAL)))

    voted, writes, units = await _cost(moto_server, ballot, run, "U0A")
    print(f"\nall_of, the approval that fills finance: {writes} UpdateItems, {units} write units")
    assert voted.accepted and voted.ask is not None and voted.ask.filled == {FIN: "U0A"}
    # The write before the lookup is refused (UNCOUNTED); the one after it is the vote.
    assert writes == 2, writes

    decided, writes, units = await _cost(moto_server, ballot, run, "U0C")
    print(f"all_of, the approval that fills legal and decides: {writes} UpdateItems, {units} write units")
    assert decided.accepted and decided.ask is not None and decided.ask.status is AskStatus.DECIDED
    assert decided.ask.decision is not None and decided.ask.decision.counts_for == LEGAL
    assert decided.claimed, "the approval that decides still claims the run in the same write"
    assert writes == 2, writes


async def test_a_quorum_vote_costs_one_refusal_and_one_write(
    moto_server: CountingMotoServer, dynamodb_table: str
) -> None:
    store = DynamoRunStore(dynamodb_table)
    directory = FakeDirectory(groups={FIN: {"U0A", "U0B"}})
    ballot = Ballot(store=store, directory=directory, clock=time.time)

    listed = _waiting(store, AskRules(approvers=("U0A", "U0B"), quorum=2))
    voted, writes, units = await _cost(moto_server, ballot, listed, "U0A")
    print(f"\nquorum=2 of listed people, the first approval: {writes} UpdateItems, {units} write units")
    assert voted.accepted and voted.ask is not None and voted.ask.status is AskStatus.PENDING
    assert writes == 2, "the write as a decision is refused by its condition, then the vote"

    grouped = _waiting(store, AskRules(approvers=(FIN,), quorum=2))
    voted, writes, units = await _cost(moto_server, ballot, grouped, "U0A")
    print(f"quorum=2 of a group, the first approval: {writes} UpdateItems, {units} write units")
    assert voted.accepted and voted.ask is not None and set(voted.ask.votes) == {"U0A"}
    # Refused before the lookup (NOT_APPROVER); after it, written as the vote at once.
    assert writes == 2, writes
    decided, writes, units = await _cost(moto_server, ballot, grouped, "U0B")
    print(f"quorum=2 of a group, the last approval: {writes} UpdateItems, {units} write units")
    assert decided.accepted and decided.ask is not None and decided.ask.status is AskStatus.DECIDED
    assert writes == 2, writes
