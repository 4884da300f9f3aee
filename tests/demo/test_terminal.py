"""Cards and bot messages as terminal boxes: within the width, readable, styled, not shouted."""

from __future__ import annotations

import json
import re
from typing import Any

from demo.mrkdwn import cols, visible
from demo.terminal import buttons_of, outline, render_message

NAMES = {"U0ALICE": "alice", "U0BOB": "bob"}


def _name(user_id: str) -> str:
    return NAMES.get(user_id, user_id)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _render(blocks: list[dict[str, Any]], *, width: int = 79, color: bool = False) -> list[str]:
    shown = render_message({"blocks": blocks}, label="card 1", user_name=_name, width=width, color=color)
    return shown.split("\n")


CARD: list[dict[str, Any]] = [
    {"type": "header", "text": {"type": "plain_text", "text": "Review query logs 1"}},
    {
        "type": "section",
        "fields": [
            {"type": "mrkdwn", "text": "*service*\nbilling"},
            {"type": "mrkdwn", "text": "*plan*\n" + "deploy billing to production and watch error rates " * 3},
        ],
    },
    {"type": "context", "elements": [{"type": "mrkdwn", "text": "graph *deploy* · started by <@U0ALICE>"}]},
    {
        "type": "actions",
        "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": "Approve"}, "style": "primary"},
            {"type": "button", "text": {"type": "plain_text", "text": "Reject"}, "style": "danger"},
            {"type": "button", "text": {"type": "plain_text", "text": "Reply"}},
        ],
    },
]


def test_a_card_fits_80_columns_and_shows_fields_as_name_value_lines() -> None:
    lines = _render(CARD)
    assert all(cols(line) <= 79 for line in lines), [line for line in lines if cols(line) > 79]
    assert lines[0].startswith("┌─ card 1 ") and lines[-1].startswith("└─")
    assert lines[1] == "│ Review query logs 1"  # a header is bold in Slack, not upper case
    assert "│ service: billing" in lines
    plan = [i for i, line in enumerate(lines) if line.startswith("│ plan: deploy billing")]
    assert plan and lines[plan[0] + 1].startswith("│   ")  # wrapped, continuation indented
    assert "│ graph deploy · started by @alice" in lines
    assert lines[-2] == "│ [Approve] [Reject] [Reply]"
    assert not any(marker in "\n".join(lines) for marker in ("*", "<@", ":arrow"))


def test_a_narrow_terminal_gets_a_narrow_box() -> None:
    lines = _render(CARD, width=40)
    assert max(cols(line) for line in lines) <= 40


def test_color_styles_the_header_names_and_buttons() -> None:
    shown = "\n".join(_render(CARD, color=True))
    assert "\x1b[1mReview query logs 1\x1b[0m" in shown
    assert "\x1b[1mservice\x1b[0m: billing" in shown
    assert "\x1b[32m[Approve]\x1b[0m \x1b[31m[Reject]\x1b[0m [Reply]" in shown
    assert all(cols(visible(line)) <= 79 for line in shown.split("\n"))


def test_json_in_a_code_block_reads_as_an_outline_with_real_line_breaks() -> None:
    data = {
        "tool": "query_logs",
        "input": {"minutes": 30, "service": "checkout"},
        "result": "query #1: checkout\nERROR checkout-api  upstream timeout\nWARN  retry queue depth 1204",
        "attempt": 1,
    }
    lines = _render([_section("*Tool* `query_logs` · result:\n```\n" + json.dumps(data, indent=2) + "\n```")])
    assert lines[1:-1] == [
        "│ Tool query_logs · result:",
        "│   tool: query_logs",
        "│   input:",
        "│     minutes: 30",
        "│     service: checkout",
        "│   result:",
        "│     query #1: checkout",
        "│     ERROR checkout-api  upstream timeout",
        "│     WARN  retry queue depth 1204",
        "│   attempt: 1",
    ]


def test_a_tool_batch_is_a_compact_list_of_calls() -> None:
    batch = {"region": "us", "calls": [{"tool": "restart_host", "input": {"host": f"us-api-{n}"}} for n in (1, 2)]}
    assert ["".join(run.text for run in line) for line in outline(batch)] == [
        "region: us",
        "calls:",
        "  - restart_host(host=us-api-1)",
        "  - restart_host(host=us-api-2)",
    ]


def test_one_line_json_after_a_label_is_unfolded_and_entities_unescaped() -> None:
    text = 'Approve "delete_resources"?\nInput: {"resource_ids": ["db-1", "db-2"], "note": "a &amp; b"}'
    lines = _render([_section(text)])
    assert lines[1:-1] == [
        '│ Approve "delete_resources"?',
        "│ Input:",
        "│   resource_ids:",
        "│     - db-1",
        "│     - db-2",
        "│   note: a & b",
    ]


def test_quotes_code_text_and_a_plain_text_message() -> None:
    lines = _render([_section("> ship it\n&gt; after the smoke test\n```\nnot json {\n```")])
    assert lines[1:-1] == ["│ ▎ ship it", "│ ▎ after the smoke test", "│   not json {"]
    shown = render_message({"text": ":warning: no blocks <@U0BOB>"}, label="bot", user_name=_name)
    assert "│ ⚠ no blocks @bob" in shown.split("\n")


def test_buttons_of_lists_what_can_still_be_clicked() -> None:
    assert buttons_of({"blocks": CARD}) == ["Approve", "Reject", "Reply"]
    assert buttons_of({"blocks": CARD[:-1]}) == []


def test_escapes_and_tabs_in_graph_output_are_shown_not_obeyed() -> None:
    text = "title\x1b]0;pwned\x07 then\x1b[2J\tcleared\x9b and \u26a0\ufe0f wide \u65e5\u672c " * 4
    shown = render_message({"text": text}, label="bot\x1b[31m", user_name=_name, width=40)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", shown)
    assert "^[]0;pwned^G" in shown and "^[[31m" in shown.split("\n")[0]
    assert all(cols(line) <= 40 for line in shown.split("\n")), shown


STREAM = {
    "state": "streaming",
    "display": "plan",
    "plan": "deploy: billing 1.2.3",
    "markdown": "",
    "tasks": {
        "planner": {"title": "planner · done", "status": "complete", "details": "", "output": ""},
        "deployer": {"title": "deployer · *running*", "status": "in_progress", "details": "", "output": ""},
        "reporter": {"title": "reporter · not started", "status": "pending", "details": "", "output": ""},
        "checker": {"title": "checker · failed", "status": "error", "details": "", "output": "timed out"},
    },
}


def test_a_streamed_message_shows_its_plan_and_tasks_as_slack_draws_them() -> None:
    message = {"text": "deploy: billing 1.2.3\n✓ planner · done", "stream": STREAM}
    lines = render_message(message, label="run 1 status", user_name=_name).split("\n")
    assert lines[1:-1] == [
        "│ deploy: billing 1.2.3",
        "│ ✓ planner · done",
        "│ ◐ deployer · *running*",  # a task's title is plain text, not mrkdwn
        "│ ○ reporter · not started",
        "│ ✗ checker · failed",
        "│   timed out",
    ]
    shown = render_message(message, label="run 1 status", user_name=_name, color=True)
    assert "\x1b[1mdeploy: billing 1.2.3\x1b[0m" in shown and "\x1b[32m✓ \x1b[0m" in shown


def test_a_streamed_message_edited_since_shows_the_edit() -> None:
    edited = {"text": "Completed", "stream": STREAM, "edited": {"ts": "1.2"}, "blocks": [_section("*Completed*")]}
    assert render_message(edited, label="run 1 status", user_name=_name).split("\n")[1:-1] == ["│ Completed"]
