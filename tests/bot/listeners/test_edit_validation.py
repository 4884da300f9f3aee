"""What an Edit submission must be before it is approved: JSON, an object, valid for the tool."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.listeners.edits import EditSubmission, check_edited_input, read_edit
from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID, ModalTarget, encode_modal_metadata
from engine.records import Ask, AskStatus, Run, RunStatus, ToolCall, Verdict

SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "minLength": 1},
        "replicas": {"type": "integer", "minimum": 1},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["service", "replicas"],
    "additionalProperties": False,
}
TOOL = ToolCall(name="set_replicas", input={"service": "billing", "replicas": 3}, input_schema=SCHEMA)
TARGET = ModalTarget(run_id="run1", ask_key="a1", channel="C0E2E", message_ts="1712345678.123456")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "Write the tool input"),
        ("   ", "Write the tool input"),
        ('{"service": "billing", replicas: 5}', "not valid JSON: Expecting property name"),
        ('{"service": "b", "replicas": 5', "not valid JSON"),
        ('{"service": "b", "replicas": NaN}', "NaN is not a JSON number"),
        ("[" * 5000 + "]" * 5000, "too long"),
        ("[" * 1400 + "]" * 1400, "not valid JSON"),
        ("[1, 2]", "must be a JSON object ({...}), not a list"),
        ('"hello"', "not a string"),
        ("null", "not null"),
        ('{"service": "billing"}', "'replicas' is a required property"),
        ('{"service": "billing", "replicas": "five"}', "at replicas: 'five' is not of type 'integer'"),
        ('{"service": "billing", "replicas": 0}', "at replicas: 0 is less than the minimum of 1"),
        ('{"service": "b", "replicas": 1, "force": true}', "Additional properties are not allowed"),
        ('{"service": "b", "replicas": 1, "labels": {"team": 7}}', "at labels/team: 7 is not of type"),
    ],
)
def test_bad_input_is_refused_with_a_reason(text: str | None, problem: str) -> None:
    result = check_edited_input(text, tool=TOOL)
    assert isinstance(result, str) and problem in result, result
    assert len(result) <= 300


def test_a_valid_edit_is_returned_parsed() -> None:
    text = '{"service": "billing-canary", "replicas": 5, "labels": {"team": "pay"}}'
    assert check_edited_input(text, tool=TOOL) == json.loads(text)


def test_schema_errors_with_huge_values_are_cut() -> None:
    result = check_edited_input(json.dumps({"service": "b", "replicas": "9" * 2500}), tool=TOOL)
    assert isinstance(result, str) and len(result) <= 300 and result.endswith("…")


@pytest.mark.parametrize(
    "schema",
    [None, {}, {"json": SCHEMA}, {"type": "not-a-type"}, {"$ref": "https://example.invalid/schema.json"}],
)
def test_without_a_usable_schema_any_object_goes_but_only_an_object(schema: dict[str, Any] | None) -> None:
    tool = ToolCall(name="t", input={}, input_schema=schema)
    expected_ok = schema != {"json": SCHEMA}  # the wrapped form is usable, and {"x": 1} breaks it
    assert (check_edited_input('{"x": 1}', tool=tool) == {"x": 1}) is expected_ok
    assert isinstance(check_edited_input("[]", tool=tool), str)


def _run(ask: Ask) -> Run:
    return Run(
        run_id="run1",
        graph="g",
        task="t",
        started_by="U1",
        status=RunStatus.WAITING,
        version=1,
        created_at=0.0,
        updated_at=0.0,
        asks={ask.key: ask},
    )


def _ask(**changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": "a1",
        "interrupt_id": "v1:before_tool_call:tu1:x",
        "name": "approve_call",
        "reason": None,
        "node_id": "ops",
        "status": AskStatus.PENDING,
        "created_at": 0.0,
        "verdicts": (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.EDIT),
        "tool": TOOL,
    }
    return Ask(**(fields | changes))


def _view(text: str, metadata: str | None = None) -> dict[str, Any]:
    return {
        "callback_id": "ask:edit",
        "private_metadata": encode_modal_metadata(TARGET) if metadata is None else metadata,
        "state": {"values": {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": text}}}},
    }


def test_read_edit_checks_against_the_stored_ask() -> None:
    good = '{"service": "x", "replicas": 2}'
    assert read_edit(_view(good), _run(_ask())) == EditSubmission(
        target=TARGET, edited_input={"service": "x", "replicas": 2}
    )
    assert "schema" in str(read_edit(_view('{"service": "x"}'), _run(_ask())))
    assert "out of date" in str(read_edit(_view(good, metadata='{"r": "<x>"}'), _run(_ask())))
    assert "no longer be edited" in str(read_edit(_view(good), None))
    assert "no longer be edited" in str(read_edit(_view(good), _run(_ask(tool=None))))
    assert "no longer be edited" in str(read_edit(_view(good), _run(_ask(verdicts=(Verdict.APPROVE,)))))
    assert "no longer be edited" in str(read_edit(_view(good), _run(_ask(key="other"))))


def test_a_decided_ask_still_reads_so_the_engine_can_name_who_decided() -> None:
    decided = _ask(status=AskStatus.DECIDED)
    assert isinstance(read_edit(_view('{"service": "x", "replicas": 2}'), _run(decided)), EditSubmission)
