"""The "may have acted" card (``engine.takeover``): the first card's content, the warning, Retry or Skip."""

from __future__ import annotations

from dataclasses import replace

from bot.render import ask_card, decided_card
from engine.records import AskStatus, Decision, RetryOf, ToolCall, Verdict
from engine.takeover import MAY_HAVE_ACTED_VERDICTS
from tests.bot.render import all_text, assert_within_limits
from tests.bot.render.test_cards import buttons, make_ask, make_run

ORIGINAL = make_ask(reason={"amount": 1200, "to": "acme"}, tool=ToolCall(name="send_payout", input={"amount": 1200}))
AGAIN = replace(
    ORIGINAL,
    key="a2",
    verdicts=MAY_HAVE_ACTED_VERDICTS,
    retry_of=RetryOf(key="a1", response={"decision": "approve", "approval_id": "run_01HZX:a1"}),
)


def test_it_shows_what_the_first_card_showed_plus_the_warning_and_offers_retry_or_skip() -> None:
    first, card = ask_card(run=make_run(), ask=ORIGINAL), ask_card(run=make_run(), ask=AGAIN)
    assert_within_limits(card)
    assert [b["text"]["text"] for b in buttons(card.blocks)] == ["Retry", "Skip"]
    assert [b["action_id"] for b in buttons(card.blocks)] == ["ask:retry", "ask:reject"]
    text = all_text(card)
    assert "may have acted" in text and "Retry" in text and "Skip" in text
    labels = {b["text"]["text"] for b in buttons(first.blocks)}
    for line in all_text(first).splitlines():
        assert line in text or line in labels, f"the first card's {line!r} is on the new one too"
    assert "may have acted" in card.text and "may have acted" not in all_text(first)


def test_once_decided_it_says_retried_or_skipped() -> None:
    for verdict, said in ((Verdict.RETRY, "Retried"), (Verdict.REJECT, "Skipped")):
        decided = replace(AGAIN, status=AskStatus.DECIDED, decision=Decision(verdict=verdict, user="U0BOB", at=1.7e9))
        card = decided_card(run=make_run(), ask=decided)
        assert_within_limits(card)
        assert said in all_text(card) and buttons(card.blocks) == []
