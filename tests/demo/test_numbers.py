"""``demo.numbers``: one number per run and per card, on screen and in commands."""

from __future__ import annotations

import json
from typing import Any

import pytest

from demo.numbers import NotARun, Numbers

RUN_A, RUN_B = "abcdefghijklmnop", "qrstuvwxyz234567"


def _card(run: str, key: str) -> dict[str, Any]:
    value = json.dumps({"r": run, "a": key}, separators=(",", ":"))
    buttons = [{"type": "button", "text": {"type": "plain_text", "text": "Approve"}, "value": value}]
    return {"blocks": [{"type": "actions", "elements": buttons}]}


@pytest.fixture
def numbers() -> Numbers:
    made = Numbers()
    made.add_run(RUN_A, "C1", "1.0")
    made.add_run(RUN_B, "C1", "2.0")
    made.add_card(1, _card(RUN_A, "0b139612"))
    made.add_card(2, _card(RUN_B, "77aa00ff"))
    return made


def test_a_run_number_is_sent_as_the_runs_id(numbers: Numbers) -> None:
    assert numbers.command("status 2") == f"status {RUN_B}"
    assert numbers.command("audit run 1") == f"audit {RUN_A}"  # as the label reads
    assert numbers.command("Cancel 1") == f"Cancel {RUN_A}"
    for text in (f"status {RUN_A}", "status", "status 1 2", "run deploy 1", "list", "status ²", "status 1234567"):
        assert numbers.command(text) == text  # the bot answers these itself


@pytest.mark.parametrize(("text", "said"), [("status 3", "runs are 1 to 2"), ("audit 0", "runs are 1 to 2")])
def test_a_number_the_demo_never_showed_is_refused(numbers: Numbers, text: str, said: str) -> None:
    with pytest.raises(NotARun, match=said):
        numbers.command(text)
    with pytest.raises(NotARun, match=r"there is no run 1 \(no runs yet\)"):
        Numbers().command("status 1")


def test_ids_in_what_the_bot_says_show_as_the_numbers(numbers: Numbers) -> None:
    message = {
        "text": f"run `{RUN_A}` was cancelled",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*Run `{RUN_B}`* of *deploy*: waiting"}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f"Who did what: `/graph audit {RUN_B}`"}]},
            {"type": "section", "text": {"type": "mrkdwn", "text": f":gear: `{RUN_A}` *deploy* · oldest: `{RUN_B}`"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "· @bob · decided · card `0b139612`: approve"}},
            {"type": "actions", "elements": [{"type": "button", "value": json.dumps({"r": RUN_A, "a": "x"})}]},
        ],
        "metadata": {"event_payload": {"run_id": RUN_A}},
    }
    shown = numbers.shown(message)
    texts = [shown["text"]] + [str((b.get("text") or {}).get("text")) for b in shown["blocks"][:4:2]]
    assert texts == ["run 1 was cancelled", "*Run 2* of *deploy*: waiting", ":gear: run 1 *deploy* · oldest: run 2"]
    assert shown["blocks"][1]["elements"][0]["text"] == "Who did what: `/graph audit 2`"
    assert shown["blocks"][3]["text"]["text"] == "· @bob · decided · card 1: approve"
    assert shown["blocks"][4] == message["blocks"][4] and shown["metadata"] == message["metadata"]  # ids stay ids
    assert numbers.text(f"run {RUN_B} (graph x) failed") == "run 2 (graph x) failed"  # a log line


def test_a_card_asked_again_takes_the_new_cards_number(numbers: Numbers) -> None:
    numbers.add_card(3, _card(RUN_A, "0b139612"))  # a may-have-acted card for the same question
    assert numbers.card_for(json.dumps({"r": RUN_A, "a": "0b139612"}, separators=(",", ":"))) == 3
    assert numbers.run_of({"channel": "C1", "thread_ts": "2.0", "ts": "9.0"}) == 2
    assert numbers.run_of({"channel": "C1", "ts": "9.0"}) == 0
