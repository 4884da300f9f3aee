"""Found by review (issue 19): a "may have acted" card raised for an Edit shows the input as first raised, while
its Retry sends the edited input: the person approves what the card does not show."""

from __future__ import annotations

import json
from dataclasses import replace

from bot.render.cards import ask_card
from engine.records import Decision, Verdict
from engine.sources import response_for
from engine.takeover import review
from tests.engine.test_takeover import NOW, decided, held


def test_retry_on_an_edited_approval_shows_what_it_sends() -> None:
    original = decided("a1", Verdict.EDIT, handed="dead/1")
    original = replace(original, decision=replace(original.decision, edited_input={"amount": 987654}))
    run = held(original)
    reviewed = review(run, now=NOW, idempotent=())
    (new,) = reviewed.new_asks
    sent = response_for(new, Decision(verdict=Verdict.RETRY, user="U2", at=NOW), run_id="r1")
    assert sent["edited_input"] == {"amount": 987654}, "Retry sends the edited amount"
    rendered = ask_card(run=reviewed.run, ask=new)
    card = json.dumps(getattr(rendered, "blocks", None) or str(rendered), default=str)
    assert "987654" in card, f"the card does not show the amount Retry sends: {card[:1500]}"
