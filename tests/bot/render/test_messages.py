"""Run messages and command replies: huge outputs, escaping and usage text."""

from __future__ import annotations

from typing import Any

import pytest

from bot.render import (
    graph_list,
    help_text,
    run_cancelled,
    run_completed,
    run_failed,
    run_started,
    usage_error,
)
from bot.render.messages import split_output
from engine.records import Run, RunStatus
from tests.bot.render import all_text, assert_harmless, assert_within_limits


def make_run(**changes: Any) -> Run:
    base = Run(
        run_id="run_01HZX",
        graph="deploy",
        task="ship v2 to prod",
        started_by="U012ABC",
        status=RunStatus.COMPLETED,
        version=1,
        created_at=0.0,
        updated_at=0.0,
    )
    return base.evolve(**changes)


def sections(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["text"]["text"] for b in blocks if b["type"] == "section"]


def test_run_started_escapes_the_task() -> None:
    message = run_started(run=make_run(task="deploy <!channel> & <https://x|click>"))
    assert_within_limits(message)
    text = all_text(message)
    assert "<@U012ABC> started *deploy*" in text and "run_01HZX" in text
    assert "&lt;!channel&gt; &amp; &lt;https://x|click&gt;" in text


def test_run_started_cuts_a_long_task() -> None:
    message = run_started(run=make_run(task="t" * 100_000))
    assert_within_limits(message)
    assert "(truncated, 100000 chars)" in all_text(message)


def test_short_output_is_shown_whole() -> None:
    message = run_completed(run=make_run(output="All done: 3 pods <ready>."))
    assert_within_limits(message)
    assert "All done: 3 pods &lt;ready&gt;." in all_text(message)
    assert "truncated" not in all_text(message)


def test_five_megabyte_output_stays_within_limits_and_says_so() -> None:
    output = ("line with <!channel> & stuff\n" * 200_000)[:5_000_000]
    message = run_completed(run=make_run(output=output))
    assert_within_limits(message)
    assert len(message.blocks) <= 45
    note = message.blocks[-1]["elements"][0]["text"]
    assert note.startswith("… truncated: showing ") and note.endswith("of 5,000,000 characters")
    shown = int(note.removeprefix("… truncated: showing ").split(" of ")[0].replace(",", ""))
    assert 5000 < shown < 12_000
    assert len(message.text) <= 3000


def test_split_output_shows_every_character_up_to_the_cut() -> None:
    output = "".join(f"{i} <{'&' * (i % 7)}>\n" for i in range(5000))
    parts, shown = split_output(output, max_sections=40, max_chars=200_000)
    assert len(parts) > 5 and all(len(p) <= 3000 for p in parts)
    joined = "".join(parts).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert joined == output[:shown]


def test_split_output_respects_the_section_count() -> None:
    parts, shown = split_output("x" * 1_000_000, max_sections=3, max_chars=1_000_000)
    assert len(parts) == 3 and shown == sum(len(p) for p in parts)


def test_code_fences_are_closed_and_reopened_across_sections() -> None:
    output = "intro\n```python\n" + "print('hi')\n" * 2000 + "```\nafter"
    parts, _ = split_output(output, max_sections=40, max_chars=200_000)
    assert len(parts) > 2
    for part in parts:
        assert part.count("```") % 2 == 0, part[:80]
    assert parts[1].startswith("```\n")


def test_empty_output() -> None:
    message = run_completed(run=make_run(output=None))
    assert_within_limits(message)
    assert "_(no output)_" in sections(message.blocks)


def test_run_failed_shows_the_error_in_a_code_block() -> None:
    message = run_failed(run=make_run(status=RunStatus.FAILED, error="Traceback <!here>\n" * 5000))
    assert_within_limits(message)
    body = sections(message.blocks)[0]
    assert body.startswith(":x: *deploy* failed\n```\nTraceback &lt;!here&gt;")
    assert body.endswith("_(cut; the bot's logs have the full error)_")
    assert body.count("Traceback") == 500 // len("Traceback <!here>\n") + 1, "only the first 500 characters"
    short = run_failed(run=make_run(status=RunStatus.FAILED, error="ValueError: bad input"))
    assert "ValueError: bad input" in sections(short.blocks)[0] and "cut;" not in sections(short.blocks)[0]


def test_every_run_message_survives_hostile_names_and_sizes() -> None:
    run = make_run(graph="<!everyone>" * 500, task="<&>" * 50_000, output="`<`" * 2_000_000, error="&" * 90_000)
    for render in (run_started, run_completed, run_failed, run_cancelled):
        assert_within_limits(render(run=run))


def test_run_cancelled() -> None:
    message = run_cancelled(run=make_run(status=RunStatus.CANCELLED, graph="<!channel>"))
    assert_within_limits(message)
    assert "was cancelled" in all_text(message)


@pytest.mark.parametrize("command", ["/graph", "/deploy-bot"])
def test_help_text_lists_every_command(command: str) -> None:
    text = help_text(command=command)
    assert_harmless(text)
    for line in (
        f"`{command} run &lt;graph&gt; &lt;task text&gt;`",
        f"`{command} list`",
        f"`{command} help`",
    ):
        assert line in text


def test_usage_error_states_the_problem_then_usage() -> None:
    text = usage_error(command="/graph", problem="unknown graph <!channel>")
    assert_harmless(text)
    assert text.startswith(":warning: unknown graph &lt;!channel&gt;\n")
    assert "`/graph run &lt;graph&gt; &lt;task text&gt;`" in text
    assert len(usage_error(command="/graph", problem="p" * 10_000)) <= 3000


def test_graph_list() -> None:
    text = graph_list(command="/graph", graphs=[("deploy", "Ship <it>"), ("review", "")])
    assert_harmless(text)
    assert "• *deploy*: Ship &lt;it&gt;" in text and "• *review*" in text
    assert "No graphs" in graph_list(command="/graph", graphs=[])


def test_graph_list_with_many_graphs_is_cut_and_counted() -> None:
    graphs = [(f"graph{i}", "d" * 300) for i in range(100)]
    text = graph_list(command="/graph", graphs=graphs)
    assert len(text) <= 3000
    assert "more" in text and "graph0" in text and "graph99" not in text
