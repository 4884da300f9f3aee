"""Run messages and command replies: huge outputs and escaping (help and mistakes: test_usage.py)."""

from __future__ import annotations

from typing import Any

from bot.render import (
    graph_list,
    run_cancelled,
    run_completed,
    run_failed,
    run_started,
)
from bot.render.messages import ending_of, run_rejected, split_output
from engine.records import Ask, AskStatus, Decision, Run, RunStatus, Verdict
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


def test_run_failed_says_what_failed_in_one_line() -> None:
    error = "node deployer: ValueError: bad input <!here>\n  File x.py, line 3\n" + "more\n" * 5000
    message = run_failed(run=make_run(status=RunStatus.FAILED, error=error))
    assert_within_limits(message)
    (body,) = sections(message.blocks)
    assert body == ":x: *deploy* failed at node `deployer`: ValueError: bad input &lt;!here&gt;"
    assert message.text == body
    assert "the bot's log has the details (the error goes on for more lines)" in all_text(message)
    nowhere = run_failed(run=make_run(status=RunStatus.FAILED, error="the graph produced no result"))
    assert sections(nowhere.blocks) == [":x: *deploy* failed: the graph produced no result"]
    assert "more lines" not in all_text(nowhere)


def test_run_failed_cuts_a_long_first_line() -> None:
    message = run_failed(run=make_run(status=RunStatus.FAILED, error="node n: E: " + "<" * 5000))
    assert_within_limits(message)
    (body,) = sections(message.blocks)
    assert body.endswith("&lt; …") and body.count("&lt;") == 300 - len("E: ")


def test_every_run_message_survives_hostile_names_and_sizes() -> None:
    run = make_run(graph="<!everyone>" * 500, task="<&>" * 50_000, output="`<`" * 2_000_000, error="&" * 90_000)
    for render in (run_started, run_completed, run_failed, run_cancelled):
        assert_within_limits(render(run=run))


def test_run_cancelled() -> None:
    message = run_cancelled(run=make_run(status=RunStatus.CANCELLED, graph="<!channel>"))
    assert_within_limits(message)
    assert "was cancelled" in all_text(message)


def test_graph_list() -> None:
    text = graph_list(command="/graph", graphs=[("deploy", "Ship <it>"), ("review", "")])
    assert_harmless(text)
    assert "• *deploy*: Ship &lt;it&gt;" in text and "• *review*" in text
    assert "No graphs" in graph_list(command="/graph", graphs=[])


def test_graph_list_with_many_graphs_is_cut_and_counted() -> None:
    graphs = [(f"graph{i}", "d" * 300) for i in range(300)]  # too many even to name all
    text = graph_list(command="/graph", graphs=graphs)
    assert len(text) <= 3000
    assert "more" in text and "graph0" in text and "graph299" not in text


# --- outcomes: a rejection reads as one, whatever Strands called it --------------------------------


def answered(key: str, *, verdict: Verdict, user: str, at: float, text: str | None = None, **changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": key,
        "interrupt_id": f"i-{key}",
        "name": "approve_deploy",
        "reason": None,
        "node_id": "deployer",
        "status": AskStatus.CONSUMED,
        "created_at": at - 1,
        "decision": Decision(verdict=verdict, user=user, at=at, text=text),
    }
    return Ask(**(fields | changes))


HITL_ASK = {"name": "strands:human-in-the-loop", "reason": 'Approve "delete_resources"?\n  Input: {}'}


def test_a_rejected_run_is_headed_as_a_rejection_with_who_and_why() -> None:
    ask = answered("a1", verdict=Verdict.REJECT, user="U0BOB", at=10.0, text="not before the audit", **HITL_ASK)
    message = run_completed(run=make_run(graph="cleanup", asks={"a1": ask}, output="Cleanup cancelled."))
    assert_within_limits(message)
    first = sections(message.blocks)[0]
    assert (
        first == ":no_entry: *cleanup* finished after <@U0BOB> rejected *Tool approval: delete_resources*"
        "\n> not before the audit"
    )
    assert message.text.startswith(":no_entry: *cleanup* finished after a rejection by <@U0BOB>: not before the audit")
    assert "Cleanup cancelled." in all_text(message)
    assert "white_check_mark" not in message.text + all_text(message)


def test_a_reply_is_never_read_as_a_rejection() -> None:
    """HumanInTheLoop's ``evaluate`` (maybe the author's own) or graph code decides what a Reply meant."""
    for ask in (
        answered("a1", verdict=Verdict.REPLY, user="U0BOB", at=10.0, text="not now", **HITL_ASK),
        answered("a1", verdict=Verdict.REPLY, user="U0BOB", at=10.0, text="lgtm", **HITL_ASK),
        answered("a1", verdict=Verdict.REPLY, user="U0BOB", at=10.0, text="not now"),
    ):
        assert run_completed(run=make_run(asks={"a1": ask})).text.startswith(":white_check_mark:")


def test_a_rejection_followed_by_a_new_question_and_an_approval_ends_approved() -> None:
    first = answered("a1", verdict=Verdict.REJECT, user="U0BOB", at=10.0, text="too long")
    second = answered("a2", verdict=Verdict.APPROVE, user="U0BOB", at=30.0, created_at=20.0)
    message = run_completed(run=make_run(asks={"a1": first, "a2": second}, output="done"))
    assert message.text.startswith(":white_check_mark: *deploy* finished: done")


def test_one_rejection_among_parallel_answers_names_its_node() -> None:
    batch = {"name": "approve_batch", "created_at": 1.0}  # raised together, in one pass
    eu = answered("a1", verdict=Verdict.APPROVE, user="U0BOB", at=10.0, node_id="eu", **batch)
    us = answered("a2", verdict=Verdict.REJECT, user="U0CAROL", at=12.0, node_id="us", text="peak", **batch)
    message = run_completed(run=make_run(asks={"a1": eu, "a2": us}, output="eu: restarted"))
    expected = ":no_entry: *deploy* finished after <@U0CAROL> rejected *Approve batch* (node `us`)\n> peak"
    assert sections(message.blocks)[0] == expected


def test_parallel_answers_with_a_rejection_list_each_rejection_by_node() -> None:
    eu = answered("a1", verdict=Verdict.APPROVE, user="U0BOB", at=10.0, node_id="eu", name="approve_batch")
    us = answered("a2", verdict=Verdict.REJECT, user="U0CAROL", at=12.0, node_id="us", name="approve_batch")
    ops = answered("a3", verdict=Verdict.REJECT, user="U0DAN", at=13.0, node_id="ops", name="approve_batch")
    message = run_completed(run=make_run(asks={"a1": eu, "a2": us, "a3": ops}, output="eu: restarted"))
    assert_within_limits(message)
    assert sections(message.blocks)[0] == (
        ":no_entry: *deploy* finished after rejections by <@U0CAROL>, <@U0DAN>\n"
        "• <@U0CAROL> rejected *Approve batch* (node `us`)\n_(no reason given)_\n"
        "• <@U0DAN> rejected *Approve batch* (node `ops`)\n_(no reason given)_"
    )


def test_output_mentions_and_broadcasts_stay_text() -> None:
    """An output may repeat a task, a tool's input or a reply word for word: it pings nobody."""
    output = "Refunded 25.0 on order A-1, approved by <@U0ALICE> <!channel> <!subteam^S0OPS|@ops>"
    message = run_completed(run=make_run(output=output))
    assert_within_limits(message)
    expected = "approved by &lt;@U0ALICE&gt; &lt;!channel&gt; &lt;!subteam^S0OPS|@ops&gt;"
    assert expected in sections(message.blocks)[1] and expected in message.text


def test_a_node_gate_rejection_names_who_and_quotes_the_gate() -> None:
    ask = answered("a1", verdict=Verdict.REJECT, user="U0BOB", at=10.0, text="legal", name="approve_publish")
    error = "node publish not run: sign-off refused by <@U0BOB>: legal <!here>"
    message = run_rejected(run=make_run(status=RunStatus.REJECTED, error=error, asks={"a1": ask}))
    assert_within_limits(message)
    assert sections(message.blocks)[0] == (
        ":no_entry: *deploy* stopped: rejected, node not run\n<@U0BOB> rejected *Approve publish*\n> legal\n"
        "> node publish not run: sign-off refused by &lt;@U0BOB&gt;: legal &lt;!here&gt;"
    )


def test_every_ending_survives_hostile_rejections() -> None:
    asks = {
        f"a{i}": answered(
            f"a{i}", verdict=Verdict.REJECT, user=f"U{i}", at=10.0, text="<!channel>" * 900, name="x" * 900
        )
        for i in range(40)
    }
    run = make_run(asks=asks, output="`<`" * 900_000, error="<!here>" * 9000, graph="<!everyone>" * 100)
    for render in (run_completed, run_rejected):
        message = render(run=run)
        assert_within_limits(message)
        assert "…and 35 more rejections" in all_text(message)


def test_how_a_run_ended_is_read_back_from_each_endings_own_message() -> None:
    """``ending_of`` (the offline demo's summary counts by it) against every ending's real text."""
    rejected = answered("a1", verdict=Verdict.REJECT, user="U0BOB", at=10.0, text="no", **HITL_ASK)
    for graph in ("deploy", "stopped", "finished-after"):  # a graph's name cannot pass for an ending
        cases = [
            (run_completed(run=make_run(graph=graph, output="ok")), "finished"),
            (run_completed(run=make_run(graph=graph, asks={"a1": rejected}, output="kept")), "finished"),
            (run_failed(run=make_run(graph=graph, status=RunStatus.FAILED, error="node x: Boom: no")), "failed"),
            (run_rejected(run=make_run(graph=graph, status=RunStatus.REJECTED, error="gate said no")), "stopped"),
            (run_cancelled(run=make_run(graph=graph, status=RunStatus.CANCELLED, cancelled_by="U0BOB")), "cancelled"),
        ]
        for message, ending in cases:
            assert ending_of(message.text) == ending, message.text
    assert ending_of("planner finished") == "" and ending_of("") == ""


def test_a_long_graph_list_names_every_graph_rather_than_describing_a_few() -> None:
    from bot.render.messages import graph_list

    graphs = [(f"graph-{i:02d}", "does something useful " * 12) for i in range(40)]
    text = graph_list(graphs=graphs)
    assert all(f"*graph-{i:02d}*" in text for i in range(40)) and "names only" in text
    assert len(text) <= 3000 and "more" not in text
    short = graph_list(graphs=graphs[:3])
    assert "does something useful" in short and "names only" not in short
