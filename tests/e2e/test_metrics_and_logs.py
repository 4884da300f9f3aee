"""Operating the bot: CloudWatch metrics as EMF lines and JSON log lines, from the real processes.

One approval cycle through ``handler()`` in fresh Lambda containers, and one through
``approval-bot serve``; the EMF lines they write are read as CloudWatch would
(``tests/support/emf.py``) and must carry the catalog's metrics with its dimensions
(``engine/metrics.py``). On the server, with ``LOG_FORMAT=json`` every line is one JSON
object, and each line about the run names it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, cards, eventually, finished_message, run_of
from tests.e2e.lambda_env import LambdaDeployment
from tests.support.emf import Datapoint, datapoints, records, values_of

GRAPH = "guarded-write"


def assert_one_cycle(points: list[Datapoint]) -> None:
    """The metrics of one start, one Approve by a person and the run's end, each with its dimensions."""
    assert {p.namespace for p in points} == {"ApprovalBot"}
    assert values_of(points, "AsksRaised", graph=GRAPH) == [1.0]
    assert values_of(points, "Decisions", graph=GRAPH, outcome="approved") == [1.0]
    (waited,) = values_of(points, "TimeToDecision", graph=GRAPH)
    assert 0.0 <= waited < 60.0
    assert values_of(points, "RunsEnded", graph=GRAPH, outcome="completed") == [1.0]
    passes = values_of(points, "PassDuration", graph=GRAPH)
    assert len(passes) == 2 and all(ms > 0 for ms in passes)
    units = {p.name: p.unit for p in points}
    assert (units["TimeToDecision"], units["PassDuration"], units["Decisions"]) == ("Seconds", "Milliseconds", "Count")
    assert not values_of(points, "Decisions", graph=GRAPH, outcome="rejected")


def json_lines(log: str) -> list[dict[str, Any]]:
    """Every non-empty line of ``log`` as the JSON object it must be."""
    parsed = []
    for line in log.splitlines():
        if line.strip():
            record = json.loads(line)  # a line that is not JSON fails here, and names itself
            assert isinstance(record, dict), line
            parsed.append(record)
    return parsed


def assert_names_the_run(lines: list[dict[str, Any]], run_id: str) -> None:
    """Each line names the run, the audit lines and the others alike (a library's line
    logged during the run's pass too: the engine's context reaches every logger)."""
    audit = [r for r in lines if r["message"].startswith("audit {")]
    assert audit and len(audit) < len(lines), lines
    assert all((r.get("run_id"), r.get("graph")) == (run_id, GRAPH) for r in lines), lines


async def test_one_approval_through_lambda_writes_its_metrics_as_emf(deployment: LambdaDeployment) -> None:
    d = deployment
    pool = d.pool({"METRICS": "on"})  # the default on Lambda, said anyway
    front, starter, resumer = pool.new(), pool.new(), pool.new()
    user, _ = d.user(front)
    card = await d.start_run(user, starter)
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (decide,) = d.local_lambda.take()
    assert await d.replay_in(resumer, [decide]) == [{"ok": True}]
    assert finished_message(d.slack) is not None

    assert records(front.stderr_text()) == [], "the acks counted nothing, so wrote nothing"
    assert_one_cycle(datapoints(pool.stderr_text()))

    # JSON lines on Lambda (its default): the resuming invocation's lines about the run name
    # it, the graph and the invocation's request id.
    run = d.only_run()
    about = [r for r in json_lines(resumer.stderr_text()) if "_aws" not in r]  # that invocation did this run's work
    assert_names_the_run(about, run.run_id)
    for line in about:
        assert (line.get("run_id"), line.get("graph")) == (run.run_id, GRAPH), line
        assert line.get("request_id") and line["request_id"] == line.get("aws_request_id"), line


async def test_the_server_writes_metrics_and_json_lines_about_its_runs(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    bot = await start_bot(backend=backend, extra_env={"METRICS": "on", "LOG_FORMAT": "json"})
    user = user_for(bot)
    await user.slash_command(text=f"run {GRAPH} hello", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")
    await bot.stop()  # SIGTERM: drained, then the last flush

    log = bot.output()
    assert_one_cycle(datapoints(log))
    lines = json_lines(log)
    run = run_of(backend.open_store(), local_slack)
    about = [r for r in lines if "_aws" not in r and "listening on" not in r["message"]]  # all about the one run
    assert_names_the_run(about, run.run_id)
    audit = [json.loads(r["message"].removeprefix("audit ")) for r in about if r["message"].startswith("audit {")]
    assert [a["kind"] for a in audit] == ["started", "asked", "decided", "resumed", "completed"], audit
    for line in about:
        assert (line.get("run_id"), line.get("graph")) == (run.run_id, GRAPH), line
        assert line.get("request_id"), line
    assert {r["service"] for r in lines if "_aws" not in r} == {"approval-bot"}


async def test_a_click_landing_during_a_pass_is_counted_once(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    """Two parallel asks: the second is approved while the pass the first's approval started
    runs. That pass's save conflicts and adopts the second decision (``Saver.save``); the
    decision is counted by the click that recorded it, and not again by the adopting save."""
    bot = await start_bot(backend=backend, extra_env={"METRICS": "on", "APPROVAL_BOT_TEST_SLOW_SECONDS": "1"})
    user = user_for(bot)
    await user.slash_command(text="run two-asks t", user_id="U0ALICE", channel_id=CHANNEL)
    pair = await local_slack.wait_for(
        lambda: len(cards(local_slack)) == 2 and cards(local_slack), timeout=30, what="2 cards"
    )
    left, right = sorted(pair, key=lambda card: "right:t" in str(card["blocks"]))
    started = Path(f"{markers_file}.approval_bot_test_started")
    await user.click(message=left, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await eventually(started.exists, timeout=10, what="the first approval's pass to run its step")
    await user.click(message=right, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")
    await bot.stop()

    points = datapoints(bot.output())
    assert values_of(points, "Decisions", graph="two-asks", outcome="approved") == [1.0, 1.0], "each approval once"
    assert len(values_of(points, "TimeToDecision", graph="two-asks")) == 2
    audit = [line for line in bot.output().splitlines() if "audit {" in line and '"kind": "decided"' in line]
    assert len(audit) == 2, audit
