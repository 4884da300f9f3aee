"""Edit before approve on cards and in the modal: the gated call, the diff, the pre-filled input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.render import ask_card, decided_card
from bot.render.edits import Change, input_changes, json_schema_of
from bot.render.modals import EDIT_CALLBACK_ID, TEXT_ACTION_ID, TEXT_BLOCK_ID, edit_modal, parse_modal_metadata
from engine.records import Decision, ToolCall, Verdict
from tests.bot.render import all_text, assert_harmless, assert_within_limits, texts
from tests.bot.render.test_cards import make_ask, make_run

SCHEMA = {
    "type": "object",
    "properties": {"service": {"type": "string"}, "replicas": {"type": "integer"}},
    "required": ["service"],
}
TOOL = ToolCall(name="set_replicas", input={"service": "billing", "replicas": 3}, input_schema=SCHEMA)
EDIT_VERDICTS = (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.EDIT)
TARGET = {"run_id": "run_01HZX", "ask_key": "a2", "channel": "C0123ABC", "message_ts": "1712345678.123456"}


def edited(new_input: dict[str, Any], tool: ToolCall = TOOL) -> str:
    decision = Decision(verdict=Verdict.EDIT, user="U0BOB", at=1_700_000_000.0, edited_input=new_input)
    card = decided_card(run=make_run(), ask=make_ask(tool=tool, verdicts=EDIT_VERDICTS, decision=decision))
    assert_within_limits(card)
    return all_text(card)


def test_the_card_shows_the_tool_and_its_input_and_an_edit_button() -> None:
    card = ask_card(run=make_run(), ask=make_ask(tool=TOOL, verdicts=EDIT_VERDICTS))
    assert_within_limits(card)
    assert "*Tool* `set_replicas` · proposed input:" in all_text(card)
    fields = [f["text"] for b in card.blocks for f in b.get("fields", [])]
    assert fields[-2:] == ["*service*\nbilling", "*replicas*\n3"], "a flat input reads as fields"
    (actions,) = [b for b in card.blocks if b["type"] == "actions"]
    edit = actions["elements"][-1]
    assert (edit["text"]["text"], edit["action_id"]) == ("Edit", "ask:edit")
    assert json.loads(edit["value"]) == {"r": "run_01HZX", "a": "a1"}, "ids only, like the other buttons"


def test_a_card_without_a_tool_call_shows_no_tool_section() -> None:
    assert "*Tool*" not in all_text(ask_card(run=make_run(), ask=make_ask()))


def test_the_decided_card_lists_what_changed() -> None:
    text = edited({"service": "billing-canary", "replicas": 3, "dry_run": True})
    assert "✏️ Approved with edits by <@U0BOB>" in text
    assert 'changed `service`: `"billing"` → `"billing-canary"`' in text
    assert "added `dry_run`: `true`" in text
    assert "replicas" not in text.split("*Input edited*")[1], "unchanged keys are not listed"
    assert "(2 changes)" in text
    assert "removed `replicas` (was `3`)" in edited({"service": "billing"})


def test_an_edit_that_changed_nothing_says_so() -> None:
    assert "no changes" in edited(dict(TOOL.input))


def test_changes_descend_into_objects_and_notice_type_changes() -> None:
    before = {"cfg": {"a": 1, "b": {"c": [1, 2]}}, "n": 1, "flag": True}
    after = {"cfg": {"a": 1, "b": {"c": [2, 1]}}, "n": 1.0, "flag": 1}
    assert input_changes(before, after) == [
        Change(path="cfg.b.c", kind="changed", old=[1, 2], new=[2, 1]),
        Change(path="n", kind="changed", old=1, new=1.0),
        Change(path="flag", kind="changed", old=True, new=1),
    ]


def test_hostile_tool_input_and_edits_stay_harmless_and_within_limits() -> None:
    tool = ToolCall(name="<!channel>`x`" * 50, input={f"<k{i}>": "<!everyone>&`" * 400 for i in range(40)})
    big = {**{f"<k{i}>": "<@U1>" * 500 for i in range(40)}, **{f"new{i}": "`" * 900 for i in range(40)}}
    reason = {f"<r{i}>": "&" * 3000 for i in range(10)}
    ask = make_ask(reason=reason, tool=tool, verdicts=EDIT_VERDICTS)
    assert_within_limits(ask_card(run=make_run(), ask=ask))
    text = edited(big, tool=tool)
    assert "(80 changes)" in text and "\n…and " in text
    shown = [line for line in text.splitlines() if line.startswith("• ")]
    assert 1 <= len(shown) <= 15 and f"…and {80 - len(shown)} more" in text
    for line in text.splitlines():
        if line.startswith("• "):
            assert line.count("`") % 2 == 0, f"an inline code span left open: {line[:200]}"


def test_json_schema_is_unwrapped_from_strands_tool_spec_form() -> None:
    assert json_schema_of(TOOL) == SCHEMA
    assert json_schema_of(ToolCall(name="t", input={}, input_schema={"json": SCHEMA})) == SCHEMA
    assert json_schema_of(ToolCall(name="t", input={})) is None


def test_the_edit_modal_is_prefilled_with_pretty_json_and_carries_ids_only() -> None:
    view = edit_modal(**TARGET, tool=TOOL)
    assert view["callback_id"] == EDIT_CALLBACK_ID == "ask:edit"
    assert len(view["title"]["text"]) <= 24 and view["submit"]["text"] == "Approve"
    (block,) = [b for b in view["blocks"] if b["type"] == "input"]
    element = block["element"]
    assert block["block_id"] == TEXT_BLOCK_ID and element["action_id"] == TEXT_ACTION_ID
    assert element["multiline"] is True and element["max_length"] == 3000
    assert element["initial_value"] == '{\n  "service": "billing",\n  "replicas": 3\n}'
    assert parse_modal_metadata(view["private_metadata"]).ask_key == "a2"
    assert "billing" not in view["private_metadata"]
    hint = json.dumps(view)
    assert "service (string, required)" in hint and "replicas (integer)" in hint
    for text in texts(view["blocks"]):
        if text["type"] == "mrkdwn":
            assert_harmless(text["text"])


def test_an_input_too_long_to_edit_is_refused_not_cut() -> None:
    tool = ToolCall(name="t", input={"text": "x" * 2990})
    with pytest.raises(ValueError, match="3000"):
        edit_modal(**TARGET, tool=tool)
    assert edit_modal(**TARGET, tool=ToolCall(name="t", input={"text": "x" * 2980}))
