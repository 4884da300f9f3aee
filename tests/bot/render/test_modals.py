"""Modals: callback ids, the input's limits, and strict private_metadata."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.render import (
    REJECT_CALLBACK_ID,
    REPLY_CALLBACK_ID,
    TEXT_ACTION_ID,
    TEXT_BLOCK_ID,
    ModalTarget,
    callback_id_for,
    encode_modal_metadata,
    modal_text,
    parse_modal_metadata,
    reply_modal,
    verdict_for_callback_id,
)
from engine.records import Verdict
from tests.bot.render import assert_harmless, texts

TARGET = {"run_id": "run_01HZX", "ask_key": "a2", "channel": "C0123ABC", "message_ts": "1712345678.123456"}


def modal(verdict: Verdict, **extra: Any) -> dict[str, Any]:
    return reply_modal(verdict=verdict, **TARGET, **extra)


def input_block(view: dict[str, Any]) -> dict[str, Any]:
    (block,) = [b for b in view["blocks"] if b["type"] == "input"]
    return block


def test_reply_modal_requires_text() -> None:
    view = modal(Verdict.REPLY, title_hint="Approve deploy")
    assert view["type"] == "modal"
    assert view["callback_id"] == "ask:reply" == REPLY_CALLBACK_ID
    assert (view["title"]["text"], view["submit"]["text"], view["close"]["text"]) == (
        "Reply",
        "Send",
        "Cancel",
    )
    block = input_block(view)
    assert block["block_id"] == TEXT_BLOCK_ID and block.get("optional") is False
    element = block["element"]
    assert element["type"] == "plain_text_input" and element["action_id"] == TEXT_ACTION_ID
    assert element["multiline"] is True and element["max_length"] == 3000
    assert "Approve deploy" in json.dumps(view)


def test_reject_modal_has_an_optional_reason() -> None:
    view = modal(Verdict.REJECT)
    assert view["callback_id"] == "ask:reject" == REJECT_CALLBACK_ID
    assert (view["title"]["text"], view["submit"]["text"], view["close"]["text"]) == (
        "Reject",
        "Reject",
        "Cancel",
    )
    block = input_block(view)
    assert block["optional"] is True and block["label"]["text"] == "Reason"
    assert len(view["title"]["text"]) <= 24


@pytest.mark.parametrize("verdict", [Verdict.APPROVE, Verdict.TRUST, Verdict.RETRY, Verdict.EDIT])
def test_only_reply_and_reject_have_modals(verdict: Verdict) -> None:
    with pytest.raises(ValueError):
        modal(verdict)


def test_private_metadata_holds_only_ids_and_location_and_round_trips() -> None:
    view = modal(Verdict.REPLY, title_hint="secret reason text")
    metadata = view["private_metadata"]
    assert json.loads(metadata) == {"r": "run_01HZX", "a": "a2", "c": "C0123ABC", "t": "1712345678.123456"}
    assert "secret" not in metadata and len(metadata) <= 3000
    assert parse_modal_metadata(metadata) == ModalTarget(**TARGET)
    assert verdict_for_callback_id(view["callback_id"]) is Verdict.REPLY


def test_title_hint_is_escaped_and_cut() -> None:
    view = modal(Verdict.REPLY, title_hint="<!channel>" + "x" * 5000)
    for text in texts(view["blocks"]):
        assert len(text["text"]) <= 3000
        if text["type"] == "mrkdwn":
            assert_harmless(text["text"])


def test_reply_modal_refuses_bad_location() -> None:
    with pytest.raises(ValueError, match="message ts"):
        reply_modal(verdict=Verdict.REPLY, run_id="r", ask_key="a", channel="C1", message_ts="now")


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ("", "not JSON"),
        ('"r"', "JSON object"),
        ('{"r": "r", "a": "a", "c": "C1"}', "exactly the keys"),
        ('{"r": "r", "a": "a", "c": "C1", "t": "1.2", "v": "approve"}', "exactly the keys"),
        ('{"r": "r", "a": "a", "c": 5, "t": "1.2"}', "channel"),
        ('{"r": "r", "a": "a", "c": "C1|x", "t": "1.2"}', "channel"),
        ('{"r": "r", "a": "a", "c": "C1", "t": "1.2.3"}', "message ts"),
        ('{"r": "r/../x", "a": "a", "c": "C1", "t": "1.2"}', "run id"),
        ('{"r": "r", "a": null, "c": "C1", "t": "1.2"}', "ask key"),
        ('{"r": "r", "a": "a", "c": "C1", "t": "1.2", "p": "' + "x" * 3000 + '"}', "too long"),
    ],
)
def test_parse_modal_metadata_rejects_malformed(metadata: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_modal_metadata(metadata)


def test_encode_modal_metadata_validates() -> None:
    with pytest.raises(ValueError):
        encode_modal_metadata(ModalTarget(run_id="r", ask_key="a", channel="<!here>", message_ts="1.2"))


def test_callback_ids_round_trip() -> None:
    for verdict in (Verdict.REPLY, Verdict.REJECT):
        assert verdict_for_callback_id(callback_id_for(verdict)) is verdict
    with pytest.raises(ValueError):
        verdict_for_callback_id("ask:approve")


def state(value: Any) -> dict[str, Any]:
    return {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": value}}}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (state("  ship it\nplease  "), "ship it\nplease"),
        (state(None), None),
        (state("   "), None),
        ({}, None),
        ({TEXT_BLOCK_ID: {"other": {"value": "x"}}}, None),
        ({TEXT_BLOCK_ID: "garbage"}, None),
    ],
)
def test_modal_text(values: dict[str, Any], expected: str | None) -> None:
    assert modal_text(values) == expected
