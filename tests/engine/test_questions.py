"""What graph code gets from a question (Strands' ``handoff_to_user``): the answer as the
tool's result, a Decline or an expiry as a sentence the model can read, one person's answer
whatever the quorum, and never a run that reads as rejected."""

from __future__ import annotations

from dataclasses import replace

from strands.vended_tools import HANDOFF_INTERRUPT_NAME as STRANDS_HANDOFF_NAME

from engine.decision_rules import Gate, judge, record_of
from engine.policy import AskRules, Refusal
from engine.records import Ask, AskStatus, Decision, Run, RunStatus, Verdict
from engine.sources import (
    DECLINED_TEXT,
    HANDOFF_INTERRUPT_NAME,
    QUESTION_VERDICTS,
    UNANSWERED_TEXT,
    denies,
    question_terms,
    response_for,
)

QUORUM = AskRules(approvers=("U0ALICE", "U0BOB"), quorum=2, expires_at=10.0)


def _ask(decision: Decision, *, rules: AskRules = QUORUM) -> Ask:
    return Ask(
        key="a1",
        interrupt_id="v1:tool_call:tu_1:x",
        name=HANDOFF_INTERRUPT_NAME,
        reason="Which region?",
        node_id="asker",
        status=AskStatus.DECIDED,
        created_at=1.0,
        decision=decision,
        verdicts=QUESTION_VERDICTS,
        rules=rules,
    )


def test_the_name_is_strands_own() -> None:
    assert HANDOFF_INTERRUPT_NAME == STRANDS_HANDOFF_NAME


def test_the_answer_decline_and_expiry_are_what_the_tool_returns() -> None:
    said = Decision(verdict=Verdict.REPLY, user="U0ALICE", at=2.0, text="yes")
    declined = Decision(verdict=Verdict.REJECT, user="U0ALICE", at=2.0, text="ask ops")
    expired = Decision(verdict=Verdict.REJECT, user="bot", at=2.0, expired=True, text="expired")
    assert response_for(_ask(said), said, run_id="r1") == "yes"  # under a quorum too
    assert response_for(_ask(declined), declined, run_id="r1") == f"{DECLINED_TEXT} Their reason: ask ops"
    bare = replace(declined, text=None)
    assert response_for(_ask(bare), bare, run_id="r1") == DECLINED_TEXT
    assert response_for(_ask(expired), expired, run_id="r1") == UNANSWERED_TEXT
    assert not denies(_ask(declined)), "a declined question is not a rejected run"


def test_a_quorum_does_not_apply_to_a_question_and_its_other_terms_stay() -> None:
    assert question_terms(HANDOFF_INTERRUPT_NAME, QUORUM) == replace(QUORUM, quorum=1)
    assert question_terms("approve_deploy", QUORUM) is QUORUM


def test_who_may_answer_is_the_policys_and_approve_is_not_offered() -> None:
    """The same rules as every card: an approver answers, the requester may only decline
    (no self-approval by answering "yes"), and a forged Approve is refused."""
    pending = replace(_ask(Decision(verdict=Verdict.REPLY, user="x", at=2.0)), status=AskStatus.PENDING, decision=None)
    rules = question_terms(HANDOFF_INTERRUPT_NAME, QUORUM)
    run = Run(
        run_id="r1",
        graph="handoff",
        task="t",
        started_by="U0BOB",
        status=RunStatus.WAITING,
        version=1,
        created_at=1.0,
        updated_at=1.0,
        asks={"a1": replace(pending, rules=rules)},
    )

    def verdict(v: Verdict, user: str) -> Refusal | Gate | None:
        decision = Decision(verdict=v, user=user, at=2.0, text="yes")
        return judge(record_of(run, "a1"), "a1", decision, member_of=frozenset(), now=2.0)

    assert verdict(Verdict.REPLY, "U0ALICE") is None, "one approver's yes, under a quorum of two"
    assert verdict(Verdict.REPLY, "U0MALLORY") is Refusal.NOT_APPROVER
    assert verdict(Verdict.REPLY, "U0BOB") is Refusal.SELF_APPROVAL
    assert verdict(Verdict.REJECT, "U0BOB") is None
    assert verdict(Verdict.APPROVE, "U0ALICE") is Gate.NOT_OFFERED


def test_a_rule_never_answers_a_question_and_all_of_names_who_may() -> None:
    from engine.policy import AskRules
    from engine.sources import HANDOFF_INTERRUPT_NAME, question_terms

    ruled = AskRules(quorum=2, all_of=("S0FIN", "U0LEGAL"), auto="approve", label="r", approvers=None)
    asked = question_terms(HANDOFF_INTERRUPT_NAME, ruled)
    assert (asked.quorum, asked.all_of, asked.auto, asked.label) == (1, (), None, "r")
    assert asked.approvers == ("S0FIN", "U0LEGAL"), "only the all_of entries, not the whole channel"
    named = question_terms(HANDOFF_INTERRUPT_NAME, AskRules(approvers=("U0A",), all_of=("U0A", "S0B"), quorum=2))
    assert named.approvers == ("U0A", "S0B")
    assert question_terms("approve_pay", ruled) is ruled, "other asks keep their terms"
