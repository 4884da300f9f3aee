"""Reasons and tool inputs read as what they are: fields, lines, logs, calls, compact JSON."""

from __future__ import annotations

from typing import Any

import pytest

from bot.render import ask_card
from bot.render.values import looks_like_log, value_blocks
from engine.records import ToolCall
from tests.bot.render import all_text, assert_within_limits
from tests.bot.render.test_cards import make_ask, make_run

LOGS = "\n".join(
    [
        "query #1: checkout, last 30 minutes, level>=error",
        "ERROR checkout-api  upstream timeout calling checkout-db (p99 4.2s)",
        "ERROR checkout-api  502 from load balancer, 37 requests",
        "WARN  checkout-worker retry queue depth 1204",
    ]
)
REVIEW_REASON = {
    "tool": "query_logs",
    "input": {"service": "checkout", "minutes": 30},
    "result": LOGS,
    "status": "success",
    "attempt": 1,
}


def texts_of(reason: Any, **kwargs: Any) -> list[str]:
    return [b.to_dict().get("text", {}).get("text", "") for b in value_blocks(reason, **kwargs)]


@pytest.mark.parametrize(
    ("text", "log_like"),
    [
        (LOGS, True),
        ("2024-05-01T10:00:01Z start\n2024-05-01T10:00:02Z stop", True),
        ('Traceback (most recent call last):\n  File "x.py", line 1\nValueError: no', True),
        ("Dear team,\nthe release is ready.\nThanks", False),
        ("ERROR one line only", False),
    ],
)
def test_looks_like_log(text: str, log_like: bool) -> None:
    assert looks_like_log(text) is log_like


def test_a_review_reason_shows_fields_compact_input_and_the_log_with_real_lines() -> None:
    card = ask_card(run=make_run(), ask=make_ask(name="review:query_logs:1", reason=REVIEW_REASON))
    assert_within_limits(card)
    fields = [f["text"] for b in card.blocks for f in b.get("fields", [])]
    assert fields == ["*tool*\nquery_logs", "*status*\nsuccess", "*attempt*\n1"]
    text = all_text(card)
    assert '*input*\n```\n{"service": "checkout", "minutes": 30}\n```' in text
    assert "*result*\n```\nquery #1: checkout, last 30 minutes, level&gt;=error\nERROR checkout-api" in text
    assert "\\n" not in text, "no literal backslash-n anywhere"


def test_prose_keeps_its_line_breaks_outside_a_code_block_and_its_mentions_as_text() -> None:
    (section,) = texts_of("Dear <@U0ALICE>,\nthe draft is ready <!here>.")
    assert section == "Dear &lt;@U0ALICE&gt;,\nthe draft is ready &lt;!here&gt;."


def test_a_batch_of_tool_calls_is_one_line_per_call() -> None:
    calls = [{"tool": "restart_host", "input": {"host": f"us-api-{i}", "force": True}} for i in range(1, 4)]
    card = ask_card(run=make_run(), ask=make_ask(name="approve_batch", reason={"region": "us", "calls": calls}))
    assert_within_limits(card)
    text = all_text(card)
    assert "*calls* (3):\n• `restart_host` host: us-api-1, force: true\n• `restart_host` host: us-api-2" in text
    # Six lines are the header, the context, who may decide and the three buttons.
    assert len(text.splitlines()) < 13, "three restarts take a few lines, not a page of JSON"
    (bare,) = texts_of([{"name": "restart_host", "input": {"host": "h"}}])
    assert bare == "*1 tool calls:*\n• `restart_host` host: h"


def test_a_huge_batch_lists_whole_lines_then_a_count() -> None:
    calls = [{"tool": "restart_host", "input": {"host": "<!channel>" * 30}} for _ in range(500)]
    card = ask_card(run=make_run(), ask=make_ask(reason={"calls": calls}))
    assert_within_limits(card)
    lines = all_text(card).splitlines()
    shown = [line for line in lines if line.startswith("• ")]
    assert 1 <= len(shown) <= 20 and f"…and {500 - len(shown)} more" in lines
    assert all(line.count("`") == 2 and "&lt;!channel&gt;" in line for line in shown)


def test_mentions_in_reasons_and_tool_inputs_ping_nobody() -> None:
    """A reason may repeat a task or a reply word for word: it is text, like a tool's input."""
    tool = ToolCall(name="notify", input={"to": "<@U0BOB>", "note": "hi"})
    ask = make_ask(
        reason={"asked_by": "<@U0ALICE>", "why": "<!channel>"}, tool=tool, interrupt_id="v1:before_tool_call:t:1"
    )
    card = ask_card(run=make_run(), ask=ask)
    assert_within_limits(card)
    fields = [f["text"] for b in card.blocks for f in b.get("fields", [])]
    assert "*asked_by*\n&lt;@U0ALICE&gt;" in fields and "*why*\n&lt;!channel&gt;" in fields
    assert "*to*\n&lt;@U0BOB&gt;" in fields, "a model's proposed input pings nobody"


def test_tool_input_already_in_the_reason_is_not_repeated() -> None:
    tool = ToolCall(name="send_payment", input={"amount": 250.0, "to": "ACME"})
    same = make_ask(reason={"tool": "send_payment", "amount": 250.0, "to": "ACME"}, tool=tool)
    assert "*Tool* `send_payment` · input as above" in all_text(ask_card(run=make_run(), ask=same))
    partly = make_ask(reason={"amount": 250.0}, tool=tool)
    text = all_text(ask_card(run=make_run(), ask=partly))
    assert "proposed input, besides the above:" in text and "*to*\nACME" in text


def test_a_hitl_card_shows_the_call_not_strands_prompt() -> None:
    tool = ToolCall(name="delete_resources", input={"resource_ids": ["a", "b"]})
    ask = make_ask(
        name="strands:human-in-the-loop",
        interrupt_id="v1:before_tool_call:t:1",
        reason='Approve "delete_resources"?\n  Input: {"resource_ids": ["a", "b"]}',
        tool=tool,
    )
    card = ask_card(run=make_run(), ask=ask)
    assert_within_limits(card)
    assert card.blocks[0]["text"]["text"] == "Tool approval: delete_resources"
    text = all_text(card)
    assert "Input:" not in text and '*resource_ids*\n["a", "b"]' in text and "*Why:*" not in text
    prompt = 'Approve "delete_resources" \u2014 deletes prod data?\n  Input: {}'
    classified = make_ask(**{**ask.__dict__, "reason": prompt})
    assert "*Why:* deletes prod data" in all_text(ask_card(run=make_run(), ask=classified))


def test_many_long_values_stay_within_the_budget() -> None:
    reason = {f"log{i}": LOGS * 200 for i in range(8)} | {f"f{i}": "v" * 150 for i in range(12)}
    blocks = value_blocks(reason)
    total = sum(len(t) for t in texts_of(reason)) + sum(
        len(f.text) for b in blocks for f in (getattr(b, "fields", None) or [])
    )
    assert total <= 6500 and len(blocks) <= 8
    assert_within_limits(ask_card(run=make_run(), ask=make_ask(reason=reason)))
