"""What people type reaches the store and the tool exactly, or is refused with a line that says where.

Numbers that would not reach the tool as typed, nesting that would blow a stack later,
and strings that are not text (an unpaired surrogate) get an inline error naming the
field; the Edit modal's pre-fill round-trips hidden characters as JSON escapes; a Reply
and a slash command with an unpaired surrogate are refused before anything stores them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.listeners.edited_json import MAX_DEPTH, MAX_EXACT_INT
from bot.listeners.edits import check_edited_input
from bot.listeners.views import read_submission
from bot.payloads import inspect, not_text
from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID, ModalTarget, edit_text, encode_modal_metadata
from bot.render.mrkdwn import invisible_chars
from engine.records import ToolCall
from tests.bot.test_payloads import COMMAND, slash_command

TOOL = ToolCall(name="pay", input={})


def _check(text: str) -> Any:
    return check_edited_input(text, tool=TOOL)


@pytest.mark.parametrize(
    "number",
    ["0", "-0", "123456789012345", str(MAX_EXACT_INT), str(-MAX_EXACT_INT), "0.1", "-2.5e10", "1.0", "1e22", "5e-324"],
)
def test_numbers_that_reach_the_tool_as_typed_go_through(number: str) -> None:
    value = _check(f'{{"amount": {number}}}')
    assert isinstance(value, dict), value
    assert json.loads(number) == value["amount"] and type(json.loads(number)) is type(value["amount"])


@pytest.mark.parametrize(
    ("number", "problem"),
    [
        (str(MAX_EXACT_INT + 1), "too large a whole number"),
        ("1" * 42, "too large a whole number"),
        ("9" * 2900, "(9999999999999999999999999999999999999999… (2900 chars))"),
        ("-" + "9" * 17, "too large a whole number"),
        ("1e-400", "(1e-400) would reach the tool as 0.0"),
        ("1e400", "(1e400) is too large a number"),
        ("0.30000000000000001", "would reach the tool as 0.3"),
        ("123456789012345678.0", "would reach the tool as 1.2345678901234568e+17"),
    ],
)
def test_numbers_that_would_not_are_refused_naming_the_field(number: str, problem: str) -> None:
    result = _check(f'{{"order": {{"lines": [1, {{"amount": {number}}}]}}}}')
    assert isinstance(result, str) and "The number at order/lines/1/amount" in result and problem in result, result
    assert len(result) <= 300


def test_nesting_is_bounded_and_never_a_recursion_error() -> None:
    assert isinstance(_check('{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"), dict)
    for depth in (MAX_DEPTH, 900, 1400):
        result = _check('{"a": ' + "[" * depth + "]" * depth + "}")
        assert isinstance(result, str) and ("nested more than 32" in result or "not valid JSON" in result), result


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"to": "\\ud800"}', "The text at to cannot be used: it holds a character that is not text"),
        ('{"to": ["ok", "\\udfff x"]}', "The text at to/1 cannot be used"),
        ('{"\\ud83d": 1}', "A key in the top level cannot be used"),
        ('{"to": "\ud800"}', "This cannot be used: it holds a character that is not text (an unpaired surrogate"),
    ],
)
def test_strings_that_are_not_text_are_refused(text: str, problem: str) -> None:
    result = _check(text)
    assert isinstance(result, str) and problem in result, result
    result.encode("utf-8")  # the error itself can be sent


def test_a_valid_surrogate_pair_is_text() -> None:
    assert _check('{"to": "\\ud83d\\ude00"}') == {"to": "😀"}


def test_an_error_shows_hidden_characters_in_the_key_it_names() -> None:
    result = _check('{"ACME\u202e": 1e-400}')
    assert isinstance(result, str) and "ACME⟨U+202E⟩" in result and "\u202e" not in result


@given(st.dictionaries(st.text(max_size=8), st.text(max_size=12) | st.integers(-(2**53), 2**53), max_size=4))
def test_the_edit_modal_prefill_round_trips_and_hides_nothing(value: dict[str, Any]) -> None:
    shown = edit_text(value)
    assert json.loads(shown) == value
    assert invisible_chars().search(shown) is None


def test_the_prefill_shows_overrides_as_escapes() -> None:
    shown = edit_text({"to": "pay\u202eACME\u200b", "family": "👨\u200d👩"})
    assert '"pay\\u202eACME\\u200b"' in shown and "\u202e" not in shown
    assert _check(shown) == {"to": "pay\u202eACME\u200b", "family": "👨\u200d👩"}, "submitted unchanged, unchanged"


def _reply_view(text: str) -> dict[str, Any]:
    target = ModalTarget(run_id="run1", ask_key="a1", channel="C0E2E", message_ts="1712345678.123456")
    return {
        "callback_id": "ask:reply",
        "private_metadata": encode_modal_metadata(target),
        "state": {"values": {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": text}}}},
    }


def test_a_reply_that_is_not_text_is_refused_inline() -> None:
    problem = read_submission(_reply_view("fine \ud800 by me"))
    assert isinstance(problem, str) and "unpaired surrogate, U+D800" in problem
    accepted = read_submission(_reply_view("fine <@U0X> \u202e by me"))
    assert not isinstance(accepted, str) and accepted.text == "fine <@U0X> \u202e by me", "stored as typed"


def test_a_slash_command_that_is_not_text_is_refused_in_one_ascii_line() -> None:
    inspection = inspect(slash_command(text="run deploy \ud800"), command=COMMAND)
    assert inspection.kind is None and inspection.problem is not None
    assert inspection.problem.isascii() and "\n" not in inspection.problem
    assert inspect(slash_command(text="run deploy <@U0X> \u202e"), command=COMMAND).problem is None
    assert not_text("ok 😀") is None and not_text("\udc00") is not None
