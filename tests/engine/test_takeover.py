"""The takeover rules (``engine.takeover``): what a dead pass got is not sent again silently."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.policy import AskRules
from engine.records import Ask, AskStatus, Decision, RetryOf, Run, RunStatus, ToolCall, Verdict
from engine.sources import HITL_INTERRUPT_NAME, SKIPPED_TEXT, approval_id, response_for
from engine.store import VersionConflict
from engine.takeover import (
    MAX_TAKEOVERS,
    MAY_HAVE_ACTED_VERDICTS,
    handed_to_dead_pass,
    is_takeover,
    may_have_acted,
    over_cap,
    review,
    sendable,
    stopped_record,
    to_hand,
)
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource, died_holding_approval

NOW = 1_800_000_000.0


def decided(key: str, verdict: Verdict, *, handed: str | None, name: str = "approve_pay", **changes: object) -> Ask:
    return Ask(
        key=key,
        interrupt_id=f"v1:i:{key}",
        name=name,
        reason={"amount": 5},
        node_id="payer",
        status=AskStatus.DECIDED,
        created_at=NOW,
        decision=Decision(verdict=verdict, user="U1", at=NOW, text="ok" if verdict is Verdict.REJECT else None),
        tool=ToolCall(name="send_payment", input={"amount": 5}),
        digest="d" + key,
        handed=handed,
        **changes,  # type: ignore[arg-type]
    )


def held(*asks: Ask, owner: str = "new/1", lease_until: float = NOW + 60, takeovers: int = 1) -> Run:
    return Run(
        run_id="r1",
        graph="g",
        task="t",
        started_by="U0",
        status=RunStatus.RESUMING,
        version=3,
        created_at=NOW,
        updated_at=NOW,
        asks={a.key: a for a in asks},
        lease_owner=owner,
        lease_until=lease_until,
        takeovers=takeovers,
    )


def test_an_approval_a_dead_pass_got_becomes_a_may_have_acted_ask() -> None:
    raised_with = AskRules(approvers=("U7",), expires_at=NOW + 99, remind_at=(NOW + 50,))
    run = held(replace(decided("a1", Verdict.APPROVE, handed="dead/1"), rules=raised_with))

    reviewed = review(run, now=NOW + 5, idempotent=())
    # The terms it was raised with: who may decide stays, the deadlines move by the time passed.
    rules = AskRules(approvers=("U7",), expires_at=NOW + 104, remind_at=(NOW + 55,))

    (new,) = reviewed.new_asks
    assert reviewed.run.asks["a1"].status is AskStatus.CONSUMED, "the original keeps its answer; its card too"
    assert new.status is AskStatus.PENDING and new.verdicts == MAY_HAVE_ACTED_VERDICTS and new.rules == rules
    same = ("interrupt_id", "name", "reason", "node_id", "tool", "digest")
    assert all(getattr(new, f) == getattr(run.asks["a1"], f) for f in same), "the same question, for the graph too"
    assert new.retry_of == RetryOf(
        key="a1", response=response_for(run.asks["a1"], run.asks["a1"].decision, run_id="r1")
    )
    assert reviewed.run.asks[new.key] == new and new.key != "a1"
    assert reviewed.run.audit[-1].kind == "may_have_acted"
    assert sendable(reviewed.run) == [], "nothing is sent: the pass waits for Retry or Skip"


def test_rejections_replies_expiries_and_idempotent_approvals_are_sent_again() -> None:
    expired = replace(
        decided("a4", Verdict.REJECT, handed="dead/1"),
        decision=Decision(verdict=Verdict.REJECT, user="bot", at=NOW, expired=True),
    )
    run = held(
        decided("a1", Verdict.REJECT, handed="dead/1"),
        decided("a2", Verdict.REPLY, handed="dead/1"),
        decided("a3", Verdict.APPROVE, handed="dead/1", name="lookup"),
        expired,
    )
    reviewed = review(run, now=NOW, idempotent=["lookup"])
    assert reviewed.new_asks == [] and reviewed.run == run
    assert [a.key for a in sendable(run)] == ["a1", "a2", "a3", "a4"]
    by_tool = held(decided("a1", Verdict.EDIT, handed="dead/1"))
    assert review(by_tool, now=NOW, idempotent=["send_payment"]).new_asks == [], "a tool name counts too"


def test_what_counts_as_acting_and_as_handed_to_a_dead_pass() -> None:
    for verdict in (Verdict.APPROVE, Verdict.EDIT, Verdict.TRUST, Verdict.RETRY):
        assert may_have_acted(decided("a", verdict, handed="x"), idempotent=())
    for verdict in (Verdict.REJECT, Verdict.REPLY):
        assert not may_have_acted(decided("a", verdict, handed="x"), idempotent=())
    mine, dead, fresh = (
        decided("m", Verdict.APPROVE, handed="new/1"),
        decided("d", Verdict.APPROVE, handed="dead/1"),
        decided("f", Verdict.APPROVE, handed=None),
    )
    run = held(mine, dead, fresh)
    assert handed_to_dead_pass(run) == [dead], "the holder's own answers and unhanded ones are not"
    assert to_hand(run) == ["f"]
    assert [a.key for a in sendable(run)] == ["m", "d"], "an answer decided after the claim waits a round"


def test_a_retry_that_reaches_a_dead_pass_asks_again_under_the_original_approval_id() -> None:
    original = decided("a1", Verdict.APPROVE, handed="dead/0")
    first = review(held(original, owner="new/1"), now=NOW, idempotent=()).new_asks[0]
    retried = replace(first, status=AskStatus.DECIDED, decision=Decision(verdict=Verdict.RETRY, user="U2", at=NOW))
    retried = replace(retried, handed="new/1")
    again = review(held(replace(original, status=AskStatus.CONSUMED), retried, owner="new/2"), now=NOW, idempotent=())
    (second,) = again.new_asks
    assert second.retry_of == first.retry_of, "the answer to send, and its approval id, are the original's"
    ids = {approval_id("r1", a) for a in (original, first, second)}
    assert ids == {"r1:a1"}
    assert approval_id("r1", decided("a2", Verdict.APPROVE, handed=None)) != "r1:a1"
    assert approval_id("r2", original) != "r1:a1"


def test_retry_sends_the_original_answer_and_skip_a_rejection_saying_why() -> None:
    original = decided("a1", Verdict.EDIT, handed="dead/1")
    original = replace(original, decision=replace(original.decision, edited_input={"amount": 4}))
    sent = response_for(original, original.decision, run_id="r1")
    assert sent["approval_id"] == "r1:a1" and sent["edited_input"] == {"amount": 4}
    (new,) = review(held(original), now=NOW, idempotent=()).new_asks

    retry = response_for(new, Decision(verdict=Verdict.RETRY, user="U2", at=NOW), run_id="r1")
    # The original approval, edit and approval id included; who approved sending it again: U2.
    assert retry == {**sent, "approvers": ["U2"]}, "Retry re-sends the original approval"
    skip = response_for(new, Decision(verdict=Verdict.REJECT, user="U2", at=NOW, text="it ran"), run_id="r1")
    assert skip == {
        "decision": "reject",
        "text": f"{SKIPPED_TEXT} (it ran)",
        "user": "U2",
        "approval_id": "r1:a1",
    }
    lapsed = response_for(new, Decision(verdict=Verdict.REJECT, user="bot", at=NOW, expired=True), run_id="r1")
    assert lapsed["decision"] == "reject" and lapsed["user"] is None
    hitl = replace(new, name=HITL_INTERRUPT_NAME, retry_of=RetryOf(key="a1", response="yes"))
    assert response_for(hitl, Decision(verdict=Verdict.RETRY, user="U2", at=NOW), run_id="r1") == "yes"
    assert response_for(hitl, Decision(verdict=Verdict.REJECT, user="U2", at=NOW), run_id="r1") == "no"


def test_the_takeover_past_the_cap_fails_the_run_closed() -> None:
    run = held(decided("a1", Verdict.APPROVE, handed="dead/1"), lease_until=NOW - 1, takeovers=MAX_TAKEOVERS)
    assert is_takeover(run, now=NOW) and over_cap(run)
    assert not over_cap(run.evolve(takeovers=MAX_TAKEOVERS - 1))
    stopped = stopped_record(run, now=NOW)
    assert stopped.status is RunStatus.FAILED and stopped.lease_owner is None and stopped.snapshot is None
    assert stopped.error == f"the run was stopped after {MAX_TAKEOVERS + 1} attempts to finish a step"
    assert stopped.asks["a1"].status is AskStatus.OBSOLETE, "its cards are closed"


def test_an_old_record_without_the_new_fields_still_reads() -> None:
    run = held(decided("a1", Verdict.APPROVE, handed=None), takeovers=0)
    data = run.to_dict()
    assert "takeovers" not in {k for k, v in data.items() if v is not None}
    assert "handed" not in data["asks"]["a1"] and "retry_of" not in data["asks"]["a1"]
    assert Run.from_dict(data) == run
    full = held(decided("a1", Verdict.APPROVE, handed="x/1", retry_of=RetryOf(key="a0", response={"n": [1]})))
    assert Run.from_dict(full.to_dict()) == full


# -- through the engine, with the real SQLite store and graph ---------------------------------


def engine(store: SqliteRunStore, publisher: RecordingPublisher) -> RunEngine:
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)


async def a_pass_died_holding(store: SqliteRunStore, publisher: RecordingPublisher, *, takeovers: int = 0) -> Run:
    """A run whose approval a pass got (its claim marked it) before that pass died."""
    return await died_holding_approval(store, publisher, takeovers=takeovers)


def ids_seen(tmp_path: Path) -> list[str]:
    path = tmp_path / "markers.txt.approval_ids"
    return path.read_text().splitlines() if path.exists() else []


async def test_a_sweeper_asks_again_instead_of_running_the_tool_and_retry_runs_it(
    store: SqliteRunStore, publisher: RecordingPublisher, tmp_path: Path
) -> None:
    died = await a_pass_died_holding(store, publisher)
    (original,) = died.asks.values()
    sweeper = engine(store, publisher)

    (swept,) = await sweeper.sweep()

    assert test_graphs.markers() == [], "the tool did not run again"
    assert swept.status is RunStatus.WAITING and swept.takeovers == 0 and swept.lease_owner is None
    (new,) = swept.pending_asks()
    assert new.retry_of is not None and new.retry_of.key == original.key
    assert ("card", died.run_id, new.key) in publisher.events
    retry = Decision(verdict=Verdict.RETRY, user="U1", at=time.time())
    result = await sweeper.decide(run_id=died.run_id, ask_key=new.key, decision=retry, claim=True)
    done = await sweeper.follow_up(result)
    assert done is not None and done.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:x"], "Retry ran it once more, knowingly"
    assert ids_seen(tmp_path) == [f"{died.run_id}:{original.key}"]


async def test_skip_ends_the_step_without_running_the_tool(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    died = await a_pass_died_holding(store, publisher)
    sweeper = engine(store, publisher)
    (swept,) = await sweeper.sweep()
    (new,) = swept.pending_asks()
    skip = Decision(verdict=Verdict.REJECT, user="U1", at=time.time())
    done = await sweeper.follow_up(await sweeper.decide(run_id=died.run_id, ask_key=new.key, decision=skip, claim=True))
    assert done is not None and done.status.terminal
    assert test_graphs.markers() == []
    assert "may already have run" in (done.output or done.error or "")


async def test_a_run_taken_over_too_often_fails_closed_and_its_requester_is_told(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    died = await a_pass_died_holding(store, publisher, takeovers=MAX_TAKEOVERS)
    (swept,) = await engine(store, publisher).sweep()
    assert swept.status is RunStatus.FAILED and swept.error is not None and "attempts to finish a step" in swept.error
    assert ("finished", died.run_id, "failed") in publisher.events
    assert test_graphs.markers() == []
    assert all(a.status is AskStatus.OBSOLETE for a in swept.asks.values())
    assert await engine(store, publisher).sweep() == [], "nothing runs again"


def test_graph_def_declares_idempotent_tools_and_asks_and_refuses_a_bare_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graph_defs import registry
    from graph_defs.registry import GraphDefinitionError, get_graph, graph_def

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))  # the probe leaves nothing behind

    def build() -> None: ...

    graph_def("takeover-idempotent-probe", idempotent=["lookup", "approve_read"])(build)
    assert get_graph("takeover-idempotent-probe").policy.idempotent == frozenset({"lookup", "approve_read"})
    assert get_graph("guarded-write").policy.idempotent == frozenset(), "none unless declared"
    with pytest.raises(GraphDefinitionError, match="idempotent"):
        graph_def("takeover-idempotent-bad", idempotent="lookup")


async def test_a_follow_up_whose_claim_ran_out_leaves_the_run_to_the_process_that_took_it(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    """A process stalls between a click's claim and its follow-up; meanwhile the lease runs
    out and a sweeper takes the run over. The late follow-up must not run the pass too."""
    clock = [time.time()]
    clicker = RunEngine(
        store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60, clock=lambda: clock[0]
    )
    run = await clicker.start(graph="guarded-write", task="x", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    approve = Decision(verdict=Verdict.APPROVE, user="U1", at=clock[0])
    claimed = await clicker.decide(run_id=run.run_id, ask_key=ask.key, decision=approve, claim=True)
    assert claimed.claimed
    clock[0] += 61  # the click's process stalls past its lease
    sweeper = RunEngine(
        store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60, clock=lambda: clock[0]
    )
    assert store.claim(
        run.run_id,
        expected_version=store.load(run.run_id, snapshot=False).version,  # type: ignore[union-attr]
        status=RunStatus.RESUMING,
        owner="sweeper/1",
        lease_until=clock[0] + 60,
        now=clock[0],
    )
    late = await clicker.follow_up(claimed)

    assert test_graphs.markers() == [], "the late follow-up ran no pass: the taker holds the run"
    assert late is not None and late.lease_owner == "sweeper/1"
    del sweeper


async def test_a_claim_never_takes_a_lease_that_still_holds(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    """A renewal does not bump the version: a sweeper that read the run before its holder
    renewed must still not take it over while the renewed lease holds."""
    first = engine(store, publisher)
    run = await first.start(graph="guarded-write", task="x", user="U0", channel="C1")
    now = time.time()
    stale = store.load(run.run_id, snapshot=False)
    assert stale is not None
    store.claim(
        run.run_id, expected_version=stale.version, status=RunStatus.RESUMING, owner="a/1", lease_until=now - 1, now=now
    )
    read_before_renewal = store.load(run.run_id, snapshot=False)
    assert read_before_renewal is not None
    assert store.renew(run.run_id, owner="a/1", lease_until=now + 60)
    with pytest.raises(VersionConflict):
        store.claim(
            run.run_id,
            expected_version=read_before_renewal.version,
            status=RunStatus.RESUMING,
            owner="b/1",
            lease_until=now + 60,
            now=now,
        )
