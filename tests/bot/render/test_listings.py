"""``/graph runs`` and ``/graph status``: one line per run, one run in full, escaped and within Slack's limits."""

from __future__ import annotations

from typing import Any

import pytest

from bot.render.listings import (
    MAX_ASKS_SHOWN,
    MAX_RUNS,
    MAX_TRAIL_SHOWN,
    NO_RUNS,
    open_asks,
    run_line,
    run_list,
    run_status,
    sections,
    state_words,
)
from engine.policy import AskRules
from engine.records import Ask, AskStatus, Decision, Run, RunStatus, Verdict
from tests.bot.render import all_text, assert_harmless, assert_within_limits

NOW = 1_800_000_000.0
RUN = "abcdefghijklmnop"
DATE = f"<!date^{int(NOW)}^{{date_short_pretty}} at {{time}}|2027-01-15 08:00 UTC>"


def make_run(**changes: Any) -> Run:
    base = Run(
        run_id=RUN,
        graph="deploy",
        task="ship v2",
        started_by="U0ALICE",
        status=RunStatus.WAITING,
        version=1,
        created_at=NOW,
        updated_at=NOW,
    )
    return base.evolve(**changes)


def make_ask(key: str = "a1", **changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": key,
        "interrupt_id": f"v1:{key}",
        "name": "approve_deploy",
        "reason": "Deploy?",
        "node_id": "deployer",
        "status": AskStatus.PENDING,
        "created_at": NOW,
    }
    fields.update(changes)
    return Ask(**fields)


# --- /graph runs ----------------------------------------------------------------------


def test_a_run_line_says_status_id_graph_who_when_and_what_it_waits_for() -> None:
    run = make_run(asks={"a1": make_ask("a1"), "a2": make_ask("a2"), "a3": make_ask("a3", status=AskStatus.CONSUMED)})
    line = run_line(run)
    assert line.startswith(":hourglass_flowing_sand: `abcdefghijklmnop` *deploy*")
    assert f"started by <@U0ALICE> {DATE}" in line
    assert line.endswith("waiting for 2 decisions")
    assert "\n" not in line
    assert_harmless(line)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"asks": {"a1": make_ask()}}, "waiting for 1 decision"),
        ({}, "waiting"),
        (
            {
                "asks": {
                    "a1": make_ask(
                        status=AskStatus.DECIDED, decision=Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW)
                    )
                }
            },
            "answered, resuming soon",
        ),
        ({"status": RunStatus.RUNNING}, "running"),
        ({"status": RunStatus.RESUMING}, "resuming"),
        ({"status": RunStatus.RUNNING, "cancelled_by": "U0BOB"}, "cancelling"),
        ({"status": RunStatus.COMPLETED}, "completed"),
        ({"status": RunStatus.FAILED}, "failed"),
        ({"status": RunStatus.REJECTED}, "rejected"),
        ({"status": RunStatus.CANCELLED, "cancelled_by": "U0BOB"}, "cancelled"),
    ],
)
def test_state_words(changes: dict[str, Any], words: str) -> None:
    assert state_words(make_run(**changes)) == words


def test_foreign_names_in_a_run_line_stay_inert() -> None:
    run = make_run(graph="<!channel> *bold*\nnext", started_by="not an id <!here>", run_id="`<@U0EVE>`")
    line = run_line(run)
    assert_harmless(line)
    assert "\n" not in line and "<@U0EVE>" not in line and "<!channel>" not in line


def test_no_runs_says_so() -> None:
    rendered = run_list(runs=[], command="/graph")
    assert rendered.text == NO_RUNS == "No runs in this channel yet."
    assert rendered.blocks == []


def test_the_list_keeps_the_order_given_and_names_the_status_command() -> None:
    runs = [make_run(run_id=f"run{i:02}aaaaaaaaaaa", created_at=NOW - i) for i in range(3)]
    rendered = run_list(runs=runs, command="/graph")
    assert_within_limits(rendered)
    text = all_text(rendered)
    assert [text.index(r.run_id) for r in runs] == sorted(text.index(r.run_id) for r in runs)
    assert "`/graph status &lt;run id&gt;`" in text
    assert "older ones are not shown" not in text


def test_at_most_fifteen_runs_are_listed_and_more_is_said() -> None:
    runs = [make_run(run_id=f"run{i:02}aaaaaaaaaaa", created_at=NOW - i) for i in range(MAX_RUNS + 1)]
    rendered = run_list(runs=runs, command="/graph")
    assert_within_limits(rendered)
    text = all_text(rendered)
    assert MAX_RUNS == 15
    assert sum(r.run_id in text for r in runs) == MAX_RUNS
    assert runs[-1].run_id not in text
    assert "The 15 latest runs in this channel" in text and "older ones are not shown" in text


def test_the_longest_lines_stay_within_limits() -> None:
    runs = [
        make_run(
            run_id=f"run{i:02}aaaaaaaaaaa",
            graph="&<>" * 400,
            started_by="&" * 300,
            asks={f"a{j}": make_ask(f"a{j}") for j in range(40)},
        )
        for i in range(MAX_RUNS)
    ]
    rendered = run_list(runs=runs, command="/graph" + "&" * 50)
    assert_within_limits(rendered)
    assert sum(r.run_id in all_text(rendered) for r in runs) == MAX_RUNS


# --- /graph status --------------------------------------------------------------------


def test_a_waiting_run_names_its_questions_and_who_may_decide() -> None:
    vote = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW + 5)
    quorum = make_ask(
        "q1",
        name="approve_release",
        rules=AskRules(approvers=("U0BOB", "U0CAROL", "S0OPS"), quorum=2, expires_at=NOW + 3600),
        votes={"U0BOB": vote},
    )
    anyone = make_ask("a1", name="check_logs", created_at=NOW + 1)
    run = make_run(trail=("planner", "writer"), asks={"q1": quorum, "a1": anyone}, updated_at=NOW + 10)
    rendered = run_status(run=run, command="/graph")
    assert_within_limits(rendered)
    text = all_text(rendered)
    assert "*Run `abcdefghijklmnop`* of *deploy*: waiting for 2 decisions" in text
    assert f"Started by <@U0ALICE> {DATE}; last change <!date^{int(NOW) + 10}^" in text
    assert "Nodes run so far: `planner` → `writer`" in text
    assert "*Waiting for:*" in text
    assert "• *Approve release*: <@U0CAROL> or <!subteam^S0OPS> may decide (1 of 2 approvals so far: <@U0BOB>)" in text
    assert f"it expires <!date^{int(NOW) + 3600}^" in text
    assert "• *Check logs*: anyone in the channel may decide" in text
    assert text.index("Approve release") < text.index("Check logs"), "oldest question first"
    assert "`/graph audit abcdefghijklmnop`" in text


def test_a_long_trail_shows_the_latest_nodes() -> None:
    trail = tuple(f"node{i}" for i in range(25))
    text = all_text(run_status(run=make_run(trail=trail, status=RunStatus.RUNNING), command="/graph"))
    assert f"… ({25 - MAX_TRAIL_SHOWN} earlier) → `node15`" in text and "`node24`" in text
    assert "`node14`" not in text


def test_no_nodes_yet() -> None:
    text = all_text(run_status(run=make_run(status=RunStatus.RUNNING), command="/graph"))
    assert "Nodes run so far: none yet." in text and "Waiting for" not in text


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"status": RunStatus.COMPLETED, "output": "\n  All done, thanks <@U0BOB> <!channel>\nsecond line"},
            "Finished: All done, thanks &lt;@U0BOB&gt; &lt;!channel&gt;",
        ),
        ({"status": RunStatus.COMPLETED, "output": None}, "Finished, no output."),
        (
            {"status": RunStatus.FAILED, "error": "node writer: ValueError: bad <input>\ntraceback"},
            "Failed at node `writer`: ValueError: bad &lt;input&gt; (the error goes on",
        ),
        ({"status": RunStatus.FAILED, "error": "Boom"}, "Failed: Boom"),
        (
            {"status": RunStatus.REJECTED, "error": "Not today, <@U0BOB>"},
            "Rejected, node not run: Not today, &lt;@U0BOB&gt;",
        ),
        ({"status": RunStatus.CANCELLED, "cancelled_by": "U0BOB"}, "Cancelled by <@U0BOB>."),
    ],
)
def test_how_a_run_ended(changes: dict[str, Any], expected: str) -> None:
    rendered = run_status(run=make_run(**changes), command="/graph")
    assert_within_limits(rendered)
    assert expected in all_text(rendered)
    assert "second line" not in all_text(rendered) and "traceback" not in all_text(rendered)


def test_a_completed_run_after_a_rejection_says_who_rejected() -> None:
    no = Decision(verdict=Verdict.REJECT, user="U0BOB", at=NOW + 5, text="no")
    ask = make_ask(status=AskStatus.CONSUMED, decision=no)
    run = make_run(status=RunStatus.COMPLETED, output="ok", asks={"a1": ask})
    assert "Finished after a rejection by <@U0BOB>: ok" in all_text(run_status(run=run, command="/graph"))


def test_a_long_output_line_is_cut() -> None:
    rendered = run_status(run=make_run(status=RunStatus.COMPLETED, output="&" * 100_000), command="/graph")
    assert_within_limits(rendered)
    assert "truncated, 100000 chars" in all_text(rendered)


def test_answered_questions_are_said_to_be_taken_up_shortly() -> None:
    yes = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW + 5)
    run = make_run(asks={"a1": make_ask(status=AskStatus.DECIDED, decision=yes)})
    text = all_text(run_status(run=run, command="/graph"))
    assert "Answered by <@U0BOB>; the run goes on with it shortly." in text


def test_the_worst_status_stays_within_limits() -> None:
    """Many questions with long titles and many approvers and votes, foreign text that grows when escaped."""
    approvers = tuple(f"U0USER{i:02}" for i in range(10))
    votes = {u: Decision(verdict=Verdict.APPROVE, user=u, at=NOW + i) for i, u in enumerate(approvers[:9])}
    asks = {
        f"a{i}": make_ask(
            f"a{i}",
            name="&<>" * 200,
            created_at=NOW + i,
            rules=AskRules(approvers=approvers, quorum=10, expires_at=NOW + 99, escalate_to=("S0LEADS",)),
            votes=votes,
            escalated=True,
        )
        for i in range(40)
    }
    run = make_run(
        graph="&" * 500,
        trail=tuple("<&>" * 100 for _ in range(200)),
        asks=asks,
        run_id="&" * 100,
        started_by="&" * 100,
    )
    rendered = run_status(run=run, command="/graph")
    assert_within_limits(rendered)
    text = all_text(rendered)
    assert "more lines not shown" in text or f"…and {40 - MAX_ASKS_SHOWN} more questions" in text


def test_sections_pack_lines_within_limits_and_count_what_is_left_out() -> None:
    lines = ["x" * 1500] * 20
    packed = sections(lines, budget=9100)
    assert all(len(s) <= 3000 for s in packed)
    assert packed[-1].endswith("…and 14 more lines not shown")
    assert sum(s.count("x" * 1500) for s in packed) == 6
    assert sections(["a", "b"]) == ["a\nb"]
    [cut] = sections(["&" * 5000])
    assert len(cut) <= 3000 and "truncated" in cut


def test_questions_raised_together_are_listed_in_the_order_their_cards_were_posted() -> None:
    security = make_ask("k1", name="security_signoff", node_id="security")
    qa = make_ask("k2", name="qa_signoff", node_id="qa")
    assert [a.key for a in open_asks(make_run(asks={"k1": security, "k2": qa}))] == ["k2", "k1"]  # by node id
    text = all_text(run_status(run=make_run(asks={"k1": security, "k2": qa}), command="/graph"))
    assert text.index("Qa signoff") < text.index("Security signoff")
