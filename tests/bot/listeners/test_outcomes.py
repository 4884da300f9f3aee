"""What a person is told after an answer the store did not record as deciding the ask:
refused by the policy (and who may decide instead), counted as one approval of several,
lost to someone else, to a cancellation or to an expiry."""

from __future__ import annotations

from typing import Any

import pytest

from bot.listeners.outcomes import counted_text, loser_text
from engine import DecideResult
from engine.policy import AskRules, Refusal
from engine.records import Ask, AskStatus, Closed, Decision, Run, RunStatus, Verdict


def make_ask(**changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": "a1",
        "interrupt_id": "i1",
        "name": "approve_deploy",
        "reason": "ok?",
        "node_id": "n",
        "status": AskStatus.PENDING,
        "created_at": 1.0,
    }
    fields.update(changes)
    return Ask(**fields)


def make_run(ask: Ask, **changes: Any) -> Run:
    run = Run(
        run_id="r1",
        graph="g",
        task="t",
        started_by="U0STARTER",
        status=RunStatus.WAITING,
        version=1,
        created_at=1.0,
        updated_at=1.0,
        asks={ask.key: ask},
    )
    return run.evolve(**changes)


def refused(refusal: Refusal, ask: Ask) -> DecideResult:
    return DecideResult(accepted=False, run=make_run(ask), ask=ask, refusal=refusal)


def vote(user: str, at: float) -> Decision:
    return Decision(verdict=Verdict.APPROVE, user=user, at=at)


def test_not_an_approver_is_told_who_may_decide() -> None:
    ask = make_ask(rules=AskRules(approvers=("U0ALICE", "S0ONCALL")))
    assert loser_text(refused(Refusal.NOT_APPROVER, ask)) == (
        "Only <@U0ALICE> or <!subteam^S0ONCALL> may decide this; nothing was recorded."
    )
    escalated = make_ask(
        rules=AskRules(approvers=("U0ALICE",), escalate_at=1.0, escalate_to=("S0LEADS",)), escalated=True
    )
    assert "Only <@U0ALICE> or <!subteam^S0LEADS> may decide" in loser_text(refused(Refusal.NOT_APPROVER, escalated))


def test_ids_that_are_not_slack_ids_are_not_mentions() -> None:
    ask = make_ask(rules=AskRules(approvers=("<!channel>", "U0OK")))
    text = loser_text(refused(Refusal.NOT_APPROVER, ask))
    assert text == "Only &lt;!channel&gt; or <@U0OK> may decide this; nothing was recorded."


def test_self_approval() -> None:
    text = loser_text(refused(Refusal.SELF_APPROVAL, make_ask()))
    assert text == (
        "You started this run, so you may reject its asks but not approve them "
        "(the graph does not allow self-approval); nothing was recorded."
    )


def test_a_second_approval_by_the_same_person() -> None:
    ask = make_ask(rules=AskRules(quorum=3), votes={"U0A": vote("U0A", 1.0)})
    assert loser_text(refused(Refusal.ALREADY_APPROVED, ask)) == (
        "You already approved this; it needs 3 approvals from different people (1 so far)."
    )


def test_a_reply_that_would_approve_a_quorum_ask() -> None:
    ask = make_ask(rules=AskRules(quorum=2))
    assert loser_text(refused(Refusal.NEEDS_APPROVE, ask)) == (
        "This needs 2 approvals; use Approve (a reply cannot approve on its own)."
    )


def test_a_counted_approval_says_how_many_more_and_from_whom() -> None:
    ask = make_ask(rules=AskRules(approvers=("U0A", "U0B", "S0TEAM"), quorum=3), votes={"U0A": vote("U0A", 1.0)})
    result = DecideResult(accepted=True, run=make_run(ask), ask=ask)
    assert result.counted
    assert (
        counted_text(result)
        == "Your approval counts: 1 of 3. Waiting for 2 more approvals from <@U0B> or <!subteam^S0TEAM>."
    )
    two = make_ask(rules=AskRules(quorum=3), votes={"U0A": vote("U0A", 1.0), "U0B": vote("U0B", 2.0)})
    assert counted_text(DecideResult(accepted=True, run=make_run(two), ask=two)) == (
        "Your approval counts: 2 of 3. Waiting for 1 more approval from anyone in the channel."
    )


def test_a_counted_approval_does_not_name_the_requester_who_may_not_approve() -> None:
    ask = make_ask(rules=AskRules(approvers=("U0STARTER", "U0A", "U0B"), quorum=2), votes={"U0A": vote("U0A", 1.0)})
    assert counted_text(DecideResult(accepted=True, run=make_run(ask), ask=ask)) == (
        "Your approval counts: 1 of 2. Waiting for 1 more approval from <@U0B>."
    )
    allowed = make_ask(
        rules=AskRules(approvers=("U0STARTER", "U0A", "U0B"), quorum=2, allow_self=True),
        votes={"U0A": vote("U0A", 1.0)},
    )
    assert counted_text(DecideResult(accepted=True, run=make_run(allowed), ask=allowed)).endswith(
        "from <@U0STARTER> or <@U0B>."
    )


def test_a_cancelled_run() -> None:
    ask = make_ask(status=AskStatus.OBSOLETE, closed=Closed.CANCELLED)
    run = make_run(ask, status=RunStatus.CANCELLED, cancelled_by="U0CANCEL")
    assert loser_text(DecideResult(accepted=False, run=run, ask=ask)) == (
        "This run was cancelled by <@U0CANCEL>; nothing was decided."
    )
    anonymous = make_run(ask, status=RunStatus.CANCELLED)
    assert loser_text(DecideResult(accepted=False, run=anonymous, ask=ask)) == (
        "This run was cancelled; nothing was decided."
    )


def test_an_expired_ask() -> None:
    expired = Decision(verdict=Verdict.REJECT, user="", at=5.0, text="Nobody decided", expired=True)
    ask = make_ask(status=AskStatus.DECIDED, decision=expired)
    assert loser_text(DecideResult(accepted=False, run=make_run(ask), ask=ask)) == (
        "This ask expired before anyone decided; nothing was decided."
    )


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (DecideResult(accepted=False, run=None, ask=None, unrecorded=True), "Nothing was recorded"),
        (DecideResult(accepted=False, run=None, ask=None), "I don't know this card"),
        (
            DecideResult(
                accepted=False,
                run=None,
                ask=make_ask(status=AskStatus.DECIDED, decision=Decision(verdict=Verdict.REJECT, user="U0B", at=1.0)),
            ),
            "Already rejected by <@U0B>; your click changed nothing.",
        ),
        (DecideResult(accepted=False, run=None, ask=make_ask(status=AskStatus.OBSOLETE)), "This run moved on"),
        (DecideResult(accepted=False, run=None, ask=make_ask(closed=Closed.CHANGED)), "The question changed"),
    ],
)
def test_the_other_outcomes_are_unchanged(result: DecideResult, expected: str) -> None:
    assert loser_text(result).startswith(expected)


def test_someone_not_shown_in_the_runs_channel_is_told_so() -> None:
    text = loser_text(refused(Refusal.NOT_IN_CHANNEL, make_ask()))
    assert text.startswith("Only people in this run's channel may decide this") and "nothing was recorded" in text


def test_a_reply_reading_yes_under_a_quorum_points_to_approve_whatever_the_source() -> None:
    for name in ("approve_deploy", "strands:human-in-the-loop"):
        text = loser_text(refused(Refusal.NEEDS_APPROVE, make_ask(name=name, rules=AskRules(quorum=2))))
        assert text == "This needs 2 approvals; use Approve (a reply cannot approve on its own)."
