"""Card titles are the question in words, never the interrupt's identifier shouted."""

from __future__ import annotations

from typing import Any

import pytest

from bot.render import ask_card, card_title, decided_card
from engine.records import AskStatus, Decision, ToolCall, Verdict
from tests.bot.render import assert_within_limits
from tests.bot.render.test_cards import make_ask, make_run

HITL = "strands:human-in-the-loop"
TOOL_GATE_ID = "v1:before_tool_call:tooluse_1:6f1c"
HITL_PROMPT = 'Approve "delete_resources"?\n  Input: {"resource_ids": ["a"]}'


@pytest.mark.parametrize(
    ("changes", "title"),
    [
        ({"name": "review:query_logs:1"}, "Review what query_logs returned"),
        ({"name": "review:query_logs:2"}, "Review what query_logs returned, attempt 2"),
        ({"name": "review:query_logs"}, "Review what query_logs returned"),
        ({"name": "review:fetch:data:3"}, "Review what fetch:data returned, attempt 3"),
        ({"name": "review:"}, "Review a tool result"),
        (
            {"name": HITL, "interrupt_id": TOOL_GATE_ID, "tool": ToolCall(name="delete_resources", input={})},
            "Tool approval: delete_resources",
        ),
        ({"name": HITL, "interrupt_id": TOOL_GATE_ID, "reason": HITL_PROMPT}, "Tool approval: delete_resources"),
        (
            {"name": HITL, "reason": 'Approve "drop" — risky?\n  Input: {}'},
            "Tool approval: drop",
        ),
        ({"name": HITL, "reason": "something else"}, "Tool approval"),
        (
            {"name": "approve_payment", "interrupt_id": TOOL_GATE_ID, "tool": ToolCall(name="send_payment", input={})},
            "Approve send_payment?",
        ),
        (
            {"name": "approve_payment", "interrupt_id": TOOL_GATE_ID, "reason": {"tool": "send_payment"}},
            "Approve send_payment?",
        ),
        ({"name": "approve_payment", "interrupt_id": TOOL_GATE_ID, "reason": "pay?"}, "Approve payment"),
        ({"name": "approve_deploy"}, "Approve deploy"),
        ({"name": "approve_batch", "interrupt_id": "v1:before_tools:abc", "reason": {"tool": "x"}}, "Approve batch"),
        ({"name": "___"}, "Decision needed"),
    ],
)
def test_card_title(changes: dict[str, Any], title: str) -> None:
    assert card_title(make_ask(**changes)) == title


def test_the_header_and_fallback_use_the_title_and_stay_within_limits() -> None:
    ask = make_ask(name="review:" + "t" * 500 + ":7")
    card = ask_card(run=make_run(), ask=ask)
    assert_within_limits(card)
    header = card.blocks[0]["text"]["text"]
    assert header.startswith("Review what ttt") and len(header) <= 150
    decided = make_ask(
        name="review:query_logs:2", status=AskStatus.DECIDED, decision=Decision(verdict=Verdict.RETRY, user="U1", at=0)
    )
    text = decided_card(run=make_run(), ask=decided).text
    assert text.startswith("Review what query_logs returned, attempt 2: 🔁 Retry requested by <@U1>")
