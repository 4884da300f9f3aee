"""The two-person rule across teams (``AskPolicy(all_of=[...])``) through the engine: the
policy's checks, the terms frozen with the ask, and the ballot's lookups (SQLite store,
``guarded-all-of``: finance S0FIN = Alice and Bob, legal S0LEGAL = Carol)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.inbox import Inbox
from engine.policy import AskPolicy, Policy, PolicyError, Refusal, deciders
from engine.records import AskStatus, Decision, RunStatus, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import FakeDirectory, RecordingPublisher, RegistrySource


def vote(user: str, verdict: Verdict = Verdict.APPROVE) -> Decision:
    return Decision(verdict=verdict, user=user, at=time.time(), text="no" if verdict is Verdict.REJECT else None)


def test_a_quorum_below_all_of_is_refused_and_one_left_out_is_raised() -> None:
    with pytest.raises(PolicyError, match="below the 2 approvals all_of requires"):
        AskPolicy(quorum=1, all_of=["S0FIN", "S0LEGAL"])
    for bad in (["S0FIN", "S0FIN"], [], "S0FIN", ["finance"]):
        with pytest.raises(PolicyError):
            AskPolicy(all_of=bad)  # type: ignore[arg-type]
    policy = Policy.declare(approvers=["U0A"], asks={"pay": AskPolicy(all_of=["S0FIN", "U0L"])})
    rules = policy.rules_for(name="pay", tool=None, now=0.0, default_expires_after=60.0)
    assert rules.quorum == 2 and rules.all_of == ("S0FIN", "U0L")
    assert type(rules).from_dict(rules.to_dict()) == rules
    three = Policy.declare(quorum=3, asks={"pay": AskPolicy(all_of=["S0FIN", "U0L"])})
    assert three.rules_for(name="pay", tool=None, now=0.0, default_expires_after=60.0).quorum == 3


def _engine(store: SqliteRunStore, publisher: RecordingPublisher, directory: FakeDirectory) -> RunEngine:
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, directory=directory)


async def test_two_from_finance_wait_for_legal_and_a_listed_approver_counts_for_her_team(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    directory = FakeDirectory(groups={"S0FIN": {"U0ALICE", "U0BOB"}, "S0LEGAL": {"U0CAROL"}})
    engine = _engine(store, publisher, directory)
    run = await engine.start(graph="guarded-all-of", task="pay", user="U0REQ", channel="C1")
    (ask,) = run.pending_asks()
    assert deciders(ask) == ("U0ALICE", "S0FIN", "S0LEGAL")

    alice = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=vote("U0ALICE"))
    assert alice.accepted and alice.ask is not None and alice.ask.filled == {"S0FIN": "U0ALICE"}
    assert set(directory.lookups) == {"S0FIN", "S0LEGAL"}, "named by id, she was still looked up in the teams"
    bob = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=vote("U0BOB"))
    assert bob.accepted and bob.ask is not None and bob.ask.status is AskStatus.PENDING, "2 of 2, legal missing"
    assert test_graphs.markers() == []

    carol = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=vote("U0CAROL"), claim=True)
    assert carol.accepted and carol.ask is not None and carol.ask.decision is not None
    assert carol.ask.decision.counts_for == "S0LEGAL"
    final = await engine.follow_up(carol)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:pay | approvers: U0ALICE,U0BOB,U0CAROL"]


async def test_a_failed_lookup_counts_for_no_team_and_any_member_may_reject(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    directory = FakeDirectory(groups={"S0FIN": {"U0BOB"}})  # S0LEGAL cannot be read: fail closed
    engine = _engine(store, publisher, directory)
    run = await engine.start(graph="guarded-all-of", task="pay", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key
    refused = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0CAROL"))
    assert not refused.accepted and refused.refusal is Refusal.NOT_APPROVER
    rejected = await engine.decide(run_id=run.run_id, ask_key=key, decision=vote("U0BOB", Verdict.REJECT))
    assert rejected.accepted and rejected.ask is not None and rejected.ask.status is AskStatus.DECIDED


TEAMS = {"U0BOB": frozenset({"S0FIN"}), "U0CAROL": frozenset({"S0LEGAL"})}


class _Teams:
    """The inbox's view of who is in which team (``engine.inbox.Memberships``)."""

    async def groups_of(self, user: str) -> frozenset[str]:
        return TEAMS.get(user, frozenset())

    async def channels_of(self, user: str) -> frozenset[str]:
        return frozenset({"C1"})


async def test_the_inbox_lists_an_all_of_ask_to_a_team_only_while_its_approval_is_missing(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    engine = _engine(store, publisher, FakeDirectory(groups={"S0FIN": {"U0BOB"}, "S0LEGAL": {"U0CAROL"}}))
    run = await engine.start(graph="guarded-write", task="pay", user="U0REQ", channel="C1")
    (ask,) = run.pending_asks()
    # Finance and legal may each give their one approval; only U0A may give a plain one.
    rules = replace(ask.rules, approvers=("U0A",), quorum=2, all_of=("S0FIN", "S0LEGAL"))
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None
    store.save(stored.evolve(asks={ask.key: replace(ask, rules=rules)}), expected_version=stored.version)
    store.index_asks(store.load(run.run_id, snapshot=False))  # type: ignore[arg-type]
    inbox = Inbox(store=store, directory=_Teams(), clock=time.time)  # type: ignore[arg-type]

    assert [a.key for _, a in await inbox.waiting_for("U0BOB")] == [ask.key]
    first = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=vote("U0BOB"))
    assert first.accepted and first.ask is not None and first.ask.filled == {"S0FIN": "U0BOB"}
    assert await inbox.waiting_for("U0BOB") == [], "finance's approval is counted: nothing waits for Bob"
    assert [a.key for _, a in await inbox.waiting_for("U0CAROL")] == [ask.key]
