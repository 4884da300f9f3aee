"""Cards: contract labels, ids-only button values, escaping and Slack's limits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.render import (
    ask_card,
    decided_card,
    encode_action_value,
    obsolete_card,
    parse_action_value,
    readable_name,
    verdict_from_action_id,
)
from engine.records import Ask, AskStatus, Closed, Decision, Run, RunStatus, Verdict
from tests.bot.render import all_text, assert_within_limits


def make_run(**changes: Any) -> Run:
    base = Run(
        run_id="run_01HZX",
        graph="deploy",
        task="ship it",
        started_by="U012ABC",
        status=RunStatus.WAITING,
        version=3,
        created_at=1_700_000_000.0,
        updated_at=1_700_000_000.0,
    )
    return base.evolve(**changes)


def make_ask(reason: Any = "Deploy v2 to prod?", **changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": "a1",
        "interrupt_id": "v1:before_tools:xyz",
        "name": "approve_deploy",
        "reason": reason,
        "node_id": "deployer",
        "status": AskStatus.PENDING,
        "created_at": 1_700_000_000.0,
    }
    fields.update(changes)
    return Ask(**fields)


def buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_default_buttons_follow_the_contract() -> None:
    card = ask_card(run=make_run(), ask=make_ask())
    assert_within_limits(card)
    found = buttons(card.blocks)
    assert [b["text"]["text"] for b in found] == ["Approve", "Reject", "Reply"]
    assert [b["action_id"] for b in found] == ["ask:approve", "ask:reject", "ask:reply"]
    assert [b.get("style") for b in found] == ["primary", "danger", None]
    actions = [b for b in card.blocks if b["type"] == "actions"]
    assert actions[0]["block_id"] == "ask:a1"


def test_extra_verdicts_have_their_labels_and_duplicates_are_dropped() -> None:
    verdicts = [Verdict.APPROVE, Verdict.TRUST, Verdict.RETRY, Verdict.EDIT, Verdict.REJECT, Verdict.APPROVE]
    found = buttons(ask_card(run=make_run(), ask=make_ask(), verdicts=verdicts).blocks)
    assert [b["text"]["text"] for b in found] == ["Approve", "Trust", "Retry", "Edit", "Reject"]
    assert {verdict_from_action_id(b["action_id"]) for b in found} == set(verdicts)


def test_button_value_holds_only_the_ids() -> None:
    secret = "password=hunter2 " * 500
    card = ask_card(run=make_run(), ask=make_ask(reason={"note": secret}))
    for button in buttons(card.blocks):
        assert json.loads(button["value"]) == {"r": "run_01HZX", "a": "a1"}
        assert parse_action_value(button["value"]) == ("run_01HZX", "a1")


def test_header_and_context() -> None:
    card = ask_card(run=make_run(), ask=make_ask(), kind_label="Node gate")
    assert card.blocks[0] == {
        "type": "header",
        "block_id": "card:a1",
        "text": {"type": "plain_text", "text": "Approve deploy"},
    }
    decided = make_ask(decision=Decision(verdict=Verdict.APPROVE, user="U1", at=1.0), status=AskStatus.DECIDED)
    for variant in (decided_card(run=make_run(), ask=decided), obsolete_card(run=make_run(), ask=make_ask())):
        assert variant.blocks[0]["block_id"] == "card:a1", "every variant stays recognisable as the ask's card"
    text = all_text(card)
    for expected in ("deploy", "deployer", "<@U012ABC>", "run_01HZX", "Node gate"):
        assert expected in text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("approve_deploy", "Approve deploy"),
        ("strands:human-in-the-loop", "Tool approval"),
        ("my-app:review.result", "My app review result"),
        ("___", "Decision needed"),
    ],
)
def test_readable_name(name: str, expected: str) -> None:
    assert readable_name(name) == expected


def test_string_reason_is_escaped() -> None:
    card = ask_card(run=make_run(), ask=make_ask(reason="hey <!channel> see <https://evil|bank> & go"))
    assert_within_limits(card)
    text = all_text(card)
    assert "&lt;!channel&gt;" in text and "&lt;https://evil|bank&gt;" in text and "&amp; go" in text
    assert "<!channel>" not in text + card.text


@pytest.mark.parametrize("offset", range(5))
def test_long_string_reason_is_cut_with_a_marker_and_never_half_an_entity(offset: int) -> None:
    reason = "a" * offset + "<" * 10_000
    card = ask_card(run=make_run(), ask=make_ask(reason=reason))
    assert_within_limits(card)
    section = card.blocks[1]["text"]["text"]
    kept, marker = section.split("\n… ")
    assert marker == f"(truncated, {len(reason)} chars)"
    assert kept.endswith("&lt;") and len(kept) > 2900


def test_verdicts_default_to_the_asks_own() -> None:
    ask = make_ask(verdicts=(Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.TRUST))
    found = buttons(ask_card(run=make_run(), ask=ask).blocks)
    assert [b["text"]["text"] for b in found] == ["Approve", "Reject", "Reply", "Trust"]


def test_flat_dict_reason_renders_as_fields() -> None:
    reason = {"env": "prod", "replicas": 3, "dry_run": False, "note": None, "who": "<!here>"}
    card = ask_card(run=make_run(), ask=make_ask(reason=reason))
    assert_within_limits(card)
    fields = next(b["fields"] for b in card.blocks if "fields" in b)
    assert [f["text"] for f in fields] == [
        "*env*\nprod",
        "*replicas*\n3",
        "*dry_run*\nfalse",
        "*note*\nnull",
        "*who*\n&lt;!here&gt;",
    ]


def test_wide_dict_reason_keeps_ten_fields_and_summarizes_the_rest() -> None:
    reason = {f"key{i}": "v" * 150 for i in range(25)}
    card = ask_card(run=make_run(), ask=make_ask(reason=reason))
    assert_within_limits(card)
    fields = next(b["fields"] for b in card.blocks if "fields" in b)
    assert len(fields) == 10
    assert "+15 more" in all_text(card) and "key24" in all_text(card)


def test_long_values_get_sections_of_their_own_and_the_rest_is_summarized() -> None:
    reason = {f"key{i}": "v" * 5000 for i in range(25)}
    card = ask_card(run=make_run(), ask=make_ask(reason=reason))
    assert_within_limits(card)
    long_sections = [b for b in card.blocks if b["type"] == "section" and "truncated, 5000 chars" in b["text"]["text"]]
    assert len(long_sections) == 5
    assert "+20 more" in all_text(card) and "key24" in all_text(card)


@pytest.mark.parametrize(
    ("reason", "label"),
    [
        ({"tool": "deploy", "input": {"env": "prod", "tags": ["a", "b"]}}, "*input*"),
        ([1, {"two": 2}, "<!channel>"], None),
    ],
)
def test_nested_reason_renders_as_compact_json(reason: Any, label: str | None) -> None:
    card = ask_card(run=make_run(), ask=make_ask(reason=reason))
    assert_within_limits(card)
    section = next(t for b in card.blocks if "```" in (t := b.get("text", {}).get("text", "")))
    if label:
        assert section.startswith(label + "\n")
        section = section.removeprefix(label + "\n")
    assert section.startswith("```\n") and section.endswith("\n```")
    body = section[4:-4].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert json.loads(body) == (reason["input"] if label else reason)
    assert "\n" not in body, "compact: one line"


def test_huge_nested_reason_is_cut_and_keeps_its_fence() -> None:
    card = ask_card(run=make_run(), ask=make_ask(reason={"rows": [{"i": i} for i in range(100_000)]}))
    assert_within_limits(card)
    section = card.blocks[1]["text"]["text"]
    assert section.startswith("*rows*\n```\n") and "\n```\n… (truncated," in section


def test_code_fence_in_reason_cannot_close_the_block() -> None:
    card = ask_card(run=make_run(), ask=make_ask(reason={"a": {"b": "```\n*bold* <!channel>"}}))
    section = card.blocks[1]["text"]["text"]
    assert section.count("```") == 2
    logs = "2024-05-01 ERROR ```\n2024-05-01 INFO <!channel>\n"
    log_section = ask_card(run=make_run(), ask=make_ask(reason=logs)).blocks[1]["text"]["text"]
    assert log_section.count("```") == 2 and "&lt;!channel&gt;" in log_section


@pytest.mark.parametrize("reason", [None, "", {}, []])
def test_empty_reason_says_no_details(reason: Any) -> None:
    card = ask_card(run=make_run(), ask=make_ask(reason=reason))
    assert_within_limits(card)
    assert card.blocks[1]["text"]["text"] == "_(no details)_"


def test_decided_card_shows_who_what_when_and_no_buttons() -> None:
    decision = Decision(verdict=Verdict.REJECT, user="U999", at=1_700_000_123.9, text="not on a Friday <!channel>")
    card = decided_card(run=make_run(), ask=make_ask(decision=decision, status=AskStatus.DECIDED))
    assert_within_limits(card)
    assert buttons(card.blocks) == []
    text = all_text(card)
    assert "❌ Rejected by <@U999> · <!date^1700000123^{date_short_pretty} at {time}|2023-11-14 22:15 UTC>" in text
    assert "> not on a Friday &lt;!channel&gt;" in text
    assert "Approve deploy" in text  # the same body as the card it replaces


@pytest.mark.parametrize(
    ("verdict", "label"),
    [
        (Verdict.APPROVE, "✅ Approved"),
        (Verdict.REPLY, "💬 Replied"),
        (Verdict.TRUST, "🔒 Trusted"),
        (Verdict.RETRY, "🔁 Retry requested"),
        (Verdict.EDIT, "✏️ Approved with edits"),
    ],
)
def test_decided_card_outcomes(verdict: Verdict, label: str) -> None:
    decision = Decision(verdict=verdict, user="U1", at=0.0)
    card = decided_card(run=make_run(), ask=make_ask(decision=decision))
    assert f"{label} by <@U1>" in all_text(card)


def test_decided_card_shows_edited_input_and_cuts_long_replies() -> None:
    decision = Decision(verdict=Verdict.EDIT, user="U1", at=0.0, text="x" * 50_000, edited_input={"env": "<staging>"})
    card = decided_card(run=make_run(), ask=make_ask(decision=decision))
    assert_within_limits(card)
    text = all_text(card)
    assert '"env": "&lt;staging&gt;"' in text and "(truncated, 50000 chars)" in text


def test_obsolete_card_says_why_it_closed() -> None:
    card = obsolete_card(run=make_run(status=RunStatus.FAILED), ask=make_ask())
    assert_within_limits(card)
    assert buttons(card.blocks) == []
    assert "The run failed; this card can no longer be answered" in all_text(card)
    ended = obsolete_card(run=make_run(status=RunStatus.COMPLETED), ask=make_ask())
    assert "The run ended before this was answered (status: completed)" in all_text(ended)
    changed = obsolete_card(run=make_run(status=RunStatus.WAITING), ask=make_ask(closed=Closed.CHANGED))
    assert "The question changed" in all_text(changed) and buttons(changed.blocks) == []
    moved = obsolete_card(run=make_run(status=RunStatus.WAITING), ask=make_ask())
    assert "went on without needing this answer" in all_text(moved)


def test_every_card_stays_within_limits_with_hostile_input() -> None:
    run = make_run(graph="<!everyone>" * 500, started_by="<!channel>")
    ask = make_ask(reason={f"<k{i}>": "&" * 3000 for i in range(10)}, name="x" * 500, node_id="`" * 900)
    decision = Decision(verdict=Verdict.REPLY, user="U1", at=0.0, text="<&>" * 9000, edited_input={"a": "<" * 9000})
    for card in (
        ask_card(run=run, ask=ask, verdicts=list(Verdict), kind_label="<!here>" * 100),
        decided_card(run=run, ask=ask.__class__(**{**ask.__dict__, "decision": decision})),
        obsolete_card(run=run, ask=ask),
    ):
        assert_within_limits(card)


def test_encode_rejects_ids_that_would_not_round_trip() -> None:
    with pytest.raises(ValueError, match="run id"):
        encode_action_value(run_id="has space", ask_key="a1")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"r": "x"}', "exactly the keys"),
        ('{"r": "x", "a": "y", "reason": "z"}', "exactly the keys"),
        ('{"r": 1, "a": "y"}', "must be a string"),
        ('{"r": "x", "a": "<!channel>"}', "ask key must match"),
        ('{"r": "", "a": "y"}', "run id must match"),
        (json.dumps({"r": "x" * 65, "a": "y"}), "run id must match"),
        (json.dumps({"r": "x", "a": "y", "pad": " " * 3000}), "too long"),
    ],
)
def test_parse_action_value_rejects_malformed(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_action_value(value)


def test_verdict_from_action_id_rejects_unknown() -> None:
    assert verdict_from_action_id("ask:trust") is Verdict.TRUST
    for bad in ("ask:maybe", "approve", "other:approve"):
        with pytest.raises(ValueError):
            verdict_from_action_id(bad)
