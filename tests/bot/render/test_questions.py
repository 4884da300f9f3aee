"""A question's card (Strands' ``handoff_to_user``): Answer and Decline on the Reply and
Reject action ids, the agent's message inert, and who answered or declined once decided."""

from __future__ import annotations

import json
from typing import Any

from bot.render import ask_card, decided_card
from bot.render.cards import verdict_from_action_id
from engine.records import Ask, AskStatus, Decision, Verdict
from engine.sources import HANDOFF_INTERRUPT_NAME, QUESTION_VERDICTS
from tests.bot.render import all_text, assert_harmless, assert_within_limits, texts
from tests.bot.render.test_cards import buttons, make_ask, make_run


def _question(**changes: Any) -> Ask:
    return make_ask(
        reason="Which region? <!channel> <@U0BOB> *now*",
        name=HANDOFF_INTERRUPT_NAME,
        interrupt_id="v1:tool_call:tu_1:xyz",
        verdicts=QUESTION_VERDICTS,
        **changes,
    )


def test_a_question_asks_with_answer_and_decline_on_the_reply_and_reject_action_ids() -> None:
    card = ask_card(run=make_run(), ask=_question())
    assert_within_limits(card)
    found = buttons(card.blocks)
    assert [b["text"]["text"] for b in found] == ["Answer", "Decline"]
    assert [verdict_from_action_id(b["action_id"]) for b in found] == [Verdict.REPLY, Verdict.REJECT]
    assert [b.get("style") for b in found] == ["primary", None]
    assert card.blocks[0]["text"]["text"] == "Question from the agent"
    assert "asks a question" in card.text and "*Who may answer:* anyone in the channel" in json.dumps(card.blocks)
    for text in texts(card.blocks):
        if text["type"] == "mrkdwn":
            assert_harmless(text["text"])
    assert "&lt;!channel&gt;" in json.dumps(card.blocks)


def test_a_decided_question_says_who_answered_or_declined() -> None:
    for verdict, said in ((Verdict.REPLY, "Answered by <@U0ALICE>"), (Verdict.REJECT, "Declined by <@U0ALICE>")):
        decision = Decision(verdict=verdict, user="U0ALICE", at=1_700_000_100.0, text="eu-west-1")
        ask = _question(status=AskStatus.CONSUMED, decision=decision)
        card = decided_card(run=make_run(), ask=ask)
        assert said in all_text(card) and not buttons(card.blocks)
