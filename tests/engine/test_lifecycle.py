"""The run lifecycle on the real SQLite store with real Strands graphs (scripted model).

Each ``make_engine()`` stands for a separate process: its own lease owner and freshly
built graphs, sharing nothing with the others but the store.
"""

from __future__ import annotations

import time

import pytest

import tests.support.graphs as test_graphs
from engine import UnknownGraph
from engine.records import AskStatus, Decision, RunStatus, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher

IN_C1 = frozenset({"C1"})  # a direct store decision names the channel its decider is in


def approve(user: str = "U1", text: str | None = None, verdict: Verdict = Verdict.APPROVE) -> Decision:
    return Decision(verdict=verdict, user=user, at=time.time(), text=text)


async def test_start_pauses_at_the_first_ask_and_saves_everything(make_engine, store, publisher) -> None:
    run = await make_engine().start(graph="guarded-write", task="hello", user="U0", channel="C1")

    assert run.status is RunStatus.WAITING
    stored = store.load(run.run_id)
    assert stored is not None and stored.snapshot and stored.status is RunStatus.WAITING
    (ask,) = stored.pending_asks()
    assert ask.name == "approve_write_writer" and ask.reason == {"text": "writer:hello"}
    assert ask.node_id == "writer" and ask.card is not None
    assert publisher.of("card") == [("card", run.run_id, ask.key)]
    assert stored.lease_owner is None and test_graphs.markers() == []


async def test_approve_in_another_process_completes_the_run(make_engine, store, publisher) -> None:
    run = await make_engine().start(graph="guarded-write", task="hello", user="U0", channel="C1")
    ask = run.pending_asks()[0]

    other = make_engine()
    decided = await other.decide(run_id=run.run_id, ask_key=ask.key, decision=approve())
    assert decided.accepted
    final = await other.resume(run.run_id, known=decided.run)

    assert final is not None and final.status is RunStatus.COMPLETED
    assert final.output == "writer result: wrote writer:hello"
    assert final.asks[ask.key].status is AskStatus.CONSUMED
    assert test_graphs.markers() == ["writer:hello"]
    assert publisher.of("finished") == [("finished", run.run_id, "completed")]


async def test_reject_reaches_the_graph_and_skips_the_side_effect(make_engine) -> None:
    engine = make_engine()
    run = await engine.start(graph="guarded-write", task="hello", user="U0", channel="C1")
    key = run.pending_asks()[0].key
    result = await engine.decide(run_id=run.run_id, ask_key=key, decision=approve("U9", "not today", Verdict.REJECT))
    final = await engine.resume(run.run_id, known=result.run)

    assert final is not None and final.status is RunStatus.COMPLETED
    assert final.output == "writer result: rejected by U9: not today"
    assert test_graphs.markers() == []


async def test_reply_text_reaches_the_graph(make_engine) -> None:
    engine = make_engine()
    run = await engine.start(graph="guarded-write", task="hi", user="U0", channel="C1")
    key = run.pending_asks()[0].key
    result = await engine.decide(run_id=run.run_id, ask_key=key, decision=approve("U2", "use canary", Verdict.REPLY))
    await engine.resume(run.run_id, known=result.run)
    assert test_graphs.markers() == ["writer:hi | reply: use canary"]


async def test_a_second_decision_loses_and_names_the_winner(make_engine) -> None:
    engine = make_engine()
    run = await engine.start(graph="guarded-write", task="hi", user="U0", channel="C1")
    key = run.pending_asks()[0].key
    first = await engine.decide(run_id=run.run_id, ask_key=key, decision=approve("U1"))
    second = await make_engine().decide(run_id=run.run_id, ask_key=key, decision=approve("U2", None, Verdict.REJECT))

    assert first.accepted and not second.accepted
    assert second.ask is not None and second.ask.decision is not None and second.ask.decision.user == "U1"
    missing = await engine.decide(run_id="nope", ask_key=key, decision=approve())
    assert not missing.accepted and missing.ask is None


async def test_partial_answers_keep_the_other_card_and_resume_at_once(make_engine, store, publisher) -> None:
    engine = make_engine()
    run = await engine.start(graph="two-asks", task="t", user="U0", channel="C1")
    asks = {a.node_id: a for a in run.pending_asks()}
    assert set(asks) == {"left", "right"} and len(publisher.of("card")) == 2

    first = await make_engine().decide(run_id=run.run_id, ask_key=asks["left"].key, decision=approve())
    middle = await make_engine().resume(run.run_id, known=first.run)
    assert middle is not None and middle.status is RunStatus.WAITING
    assert test_graphs.markers() == ["left:t"]
    assert [a.key for a in middle.pending_asks()] == [asks["right"].key]
    assert len(publisher.of("card")) == 2  # the unanswered ask kept its card: no repost

    second = await make_engine().decide(run_id=run.run_id, ask_key=asks["right"].key, decision=approve())
    final = await make_engine().resume(run.run_id, known=second.run)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert final.output == "summary: both sides finished"
    assert sorted(test_graphs.markers()) == ["left:t", "right:t"]


async def test_a_decision_made_during_a_resume_is_picked_up_by_the_holder(make_engine, store) -> None:
    engine = make_engine()
    run = await engine.start(graph="two-asks", task="t", user="U0", channel="C1")
    asks = {a.node_id: a for a in run.pending_asks()}
    # While the holder runs the graph with the left answer, someone answers right.
    test_graphs.DURING_PASS.append(
        lambda: store.decide(run.run_id, asks["right"].key, approve("U7"), now=time.time(), member_of=IN_C1) and None
    )
    first = await engine.decide(run_id=run.run_id, ask_key=asks["left"].key, decision=approve())
    test_graphs.DURING_PASS.append(test_graphs.DURING_PASS.clear)  # fire once

    final = await engine.resume(run.run_id, known=first.run)

    assert final is not None and final.status is RunStatus.COMPLETED
    assert final.asks[asks["right"].key].decision is not None
    assert final.asks[asks["right"].key].decision.user == "U7"  # type: ignore[union-attr]
    assert sorted(test_graphs.markers()) == ["left:t", "right:t"]


async def test_sweep_takes_over_a_run_whose_holder_died(make_engine, store: SqliteRunStore) -> None:
    run = await make_engine().start(graph="guarded-write", task="x", user="U0", channel="C1")
    decided = store.decide(run.run_id, run.pending_asks()[0].key, approve(), now=time.time(), member_of=IN_C1)
    # A process claimed the run, then died: its lease ran out.
    store.claim(
        run.run_id,
        expected_version=decided.version,
        status=RunStatus.RESUMING,
        owner="dead",
        lease_until=time.time() - 1,
        now=time.time(),
    )
    healthy = make_engine()
    assert (await healthy.resume(run.run_id)) is not None
    final = store.load(run.run_id)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:x"]
    assert await healthy.sweep() == []  # nothing left to do


async def test_sweep_resumes_a_decision_whose_process_died_before_claiming(make_engine, store) -> None:
    run = await make_engine().start(graph="guarded-write", task="y", user="U0", channel="C1")
    store.decide(run.run_id, run.pending_asks()[0].key, approve(), now=time.time() - 5, member_of=IN_C1)
    swept = await make_engine().sweep()
    assert [r.status for r in swept] == [RunStatus.COMPLETED]
    assert test_graphs.markers() == ["writer:y"]


async def test_a_live_lease_is_not_taken_over(make_engine, store) -> None:
    run = await make_engine().start(graph="guarded-write", task="z", user="U0", channel="C1")
    decided = store.decide(run.run_id, run.pending_asks()[0].key, approve(), now=time.time(), member_of=IN_C1)
    store.claim(
        run.run_id,
        expected_version=decided.version,
        status=RunStatus.RESUMING,
        owner="alive",
        lease_until=time.time() + 60,
        now=time.time(),
    )
    result = await make_engine().resume(run.run_id)
    assert result is not None and result.status is RunStatus.RESUMING and result.lease_owner == "alive"
    assert test_graphs.markers() == []


async def test_a_failing_node_fails_the_run_and_reports_it(make_engine, publisher: RecordingPublisher) -> None:
    run = await make_engine().start(graph="boom", task="go", user="U0", channel="C1")
    assert run.status is RunStatus.FAILED
    assert run.error is not None and "the model exploded" in run.error
    assert publisher.of("finished") == [("finished", run.run_id, "failed")]


async def test_unknown_graph_starts_nothing(make_engine, publisher: RecordingPublisher) -> None:
    with pytest.raises(UnknownGraph):
        await make_engine().start(graph="nope", task="go", user="U0", channel="C1")
    assert publisher.events == []


async def test_hitl_approve_and_deny(make_engine) -> None:
    engine = make_engine()
    denied = await engine.start(graph="hitl", task="clean", user="U0", channel="C1")
    (ask,) = denied.pending_asks()
    assert ask.name == "strands:human-in-the-loop" and Verdict.TRUST in ask.verdicts
    result = await engine.decide(run_id=denied.run_id, ask_key=ask.key, decision=approve(verdict=Verdict.REJECT))
    final = await engine.resume(denied.run_id, known=result.run)
    assert final is not None and final.status is RunStatus.COMPLETED and test_graphs.markers() == []

    approved = await engine.start(graph="hitl", task="clean", user="U0", channel="C1")
    key = approved.pending_asks()[0].key
    result = await engine.decide(run_id=approved.run_id, ask_key=key, decision=approve())
    final = await make_engine().resume(approved.run_id, known=result.run)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["dropped users"]


class Died(BaseException):
    """Stands for the process vanishing: nothing after this point runs."""


async def test_a_pass_that_died_after_saving_is_never_redone_and_its_cards_are_posted_by_the_sweeper(
    make_engine, store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    original = publisher.post_card

    async def die(**kwargs):  # type: ignore[no-untyped-def]
        raise Died

    publisher.post_card = die  # type: ignore[method-assign]
    with pytest.raises(Died):
        await make_engine(lease_seconds=60).start(graph="guarded-write", task="w", user="U0", channel="C1")
    publisher.post_card = original  # type: ignore[method-assign]
    assert publisher.of("card") == [], "nothing was shown before the state was saved... and nothing after"
    (run_id,) = {e[1] for e in publisher.of("started")}
    saved = store.load(run_id, snapshot=False)
    assert saved is not None and saved.status is RunStatus.WAITING and saved.owes_slack
    (ask,) = saved.pending_asks()
    passes = test_graphs.markers()

    later = make_engine()
    later._clock = lambda: time.time() + 61  # past the delivery grace
    (swept,) = await later.sweep()
    assert swept.asks[ask.key].card is not None and not swept.owes_slack
    assert publisher.of("card") == [("card", run_id, ask.key)], "the saved ask gets its card, once"
    assert ("lookup", run_id, ask.key) in publisher.events, "the sweeper checked Slack before posting"
    assert test_graphs.markers() == passes, "no pass ran again because its cards were owed"

    result = await make_engine().decide(run_id=run_id, ask_key=ask.key, decision=approve(), claim=True)
    final = await make_engine().follow_up(result)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:w"]


async def test_a_card_posted_just_before_the_process_died_is_found_not_posted_again(
    make_engine, store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    original = publisher.post_card

    async def post_then_die(**kwargs):  # type: ignore[no-untyped-def]
        await original(**kwargs)
        raise Died  # before the card's reference is recorded

    publisher.post_card = post_then_die  # type: ignore[method-assign]
    with pytest.raises(Died):
        await make_engine(lease_seconds=60).start(graph="guarded-write", task="w", user="U0", channel="C1")
    publisher.post_card = original  # type: ignore[method-assign]
    ((_, run_id, key),) = publisher.of("card")

    posted = publisher.posted[(run_id, key)]
    clicked = await make_engine().decide(run_id=run_id, ask_key=key, decision=approve(), claim=True, card=posted)
    assert clicked.accepted and clicked.claimed, "the live card's ask exists: a click decides at once"
    final = await make_engine().follow_up(clicked)
    assert final is not None and final.status is RunStatus.COMPLETED
    later = make_engine()
    later._clock = lambda: time.time() + 61
    await later.sweep()
    assert len(publisher.of("card")) == 1, "one card per ask, ever"
    stored = store.load(run_id, snapshot=False)
    assert stored is not None and stored.asks[key].card == posted and not stored.owes_slack
    assert ("changed", run_id, f"{key}:decided") in publisher.events, "the clicked card shows the decision"


async def test_a_click_on_a_free_run_decides_and_claims_in_one_write(make_engine, store: SqliteRunStore) -> None:
    run = await make_engine().start(graph="guarded-write", task="quick", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    result = await make_engine().decide(run_id=run.run_id, ask_key=ask.key, decision=approve(), claim=True)
    assert result.accepted and result.claimed and result.run is not None
    assert result.run.status is RunStatus.RESUMING and result.run.version == run.version + 1
    loser = await make_engine().decide(run_id=run.run_id, ask_key=ask.key, decision=approve("U2"), claim=True)
    assert not loser.accepted and not loser.claimed
    final = await make_engine().follow_up(result)
    assert final is not None and final.status is RunStatus.COMPLETED


async def test_a_choice_the_card_does_not_offer_is_refused(make_engine) -> None:
    engine = make_engine()
    run = await engine.start(graph="guarded-write", task="v", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    assert Verdict.RETRY not in ask.verdicts
    refused = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=approve(verdict=Verdict.RETRY))
    assert not refused.accepted and refused.ask is not None and refused.ask.decision is None
    accepted = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=approve())
    assert accepted.accepted, "the ask stayed open for a choice it offers"
