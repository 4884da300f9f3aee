"""Runs survive the process that started them, and clicks race safely."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.records import AskStatus, RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    StartBot,
    all_text,
    cards,
    eventually,
    finished_message,
    live_buttons,
    run_of,
)


async def test_a_click_after_the_server_was_killed_resumes_in_a_new_process(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    first = await start_bot(backend=backend)
    await user_for(first).slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    store = backend.open_store()
    await eventually(lambda: run_of(store, local_slack).status is RunStatus.WAITING, what="the run to be saved")
    first.kill()

    second = await start_bot(backend=backend)
    await user_for(second).click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert "wrote writer:hello" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:hello"]
    assert run_of(backend.open_store(), local_slack).status is RunStatus.COMPLETED


async def test_twenty_concurrent_clicks_make_one_decision_and_one_resume(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run guarded-write once", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")

    people = [f"U0P{i:02d}" for i in range(20)]
    clicks = [
        user.click(message=card, label="Approve", user_id=person, channel_id=CHANNEL, allow_stale=True)
        for person in people
    ]
    responses = await asyncio.gather(*clicks)
    assert all(r.status == 200 for r in responses)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    def losers_told() -> list[dict[str, Any]] | None:
        found = [r for r in local_slack.responses if "Already approved" in str(r["body"])]
        return found if len(found) >= 19 else None

    notices = await local_slack.wait_for(losers_told, timeout=30, what="19 'already decided' notices")

    run = run_of(backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.CONSUMED and ask.decision is not None
    winner = ask.decision.user
    assert winner in people
    assert len(notices) == 19
    assert {r["user"] for r in notices} == set(people) - {winner}
    assert all(f"<@{winner}>" in str(r["body"]) for r in notices), "losers are told who decided"
    assert all(r["body"].get("response_type") == "ephemeral" for r in notices)
    assert markers_file.read_text().splitlines() == ["writer:once"], "exactly one resume ran the tool"
    finals = [m for m in local_slack.messages(CHANNEL) if str(m.get("text", "")).startswith(":white_check_mark:")]
    assert len(finals) == 1


async def test_two_parallel_asks_partial_answers(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run two-asks t", user_id="U0ALICE", channel_id=CHANNEL)
    both = await local_slack.wait_for(
        lambda: cards(local_slack) if len(cards(local_slack)) == 2 else None, timeout=30, what="two cards"
    )
    left = next(c for c in both if "left:t" in str(c["blocks"]))
    right = next(c for c in both if "right:t" in str(c["blocks"]))

    await user.click(message=left, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await eventually(
        lambda: markers_file.exists() and markers_file.read_text().splitlines() == ["left:t"],
        what="the left side to run at once",
    )
    store = backend.open_store()
    await eventually(
        lambda: run_of(store, local_slack).status is RunStatus.WAITING and run_of(store, local_slack).version > 3,
        what="the run to pause again",
    )
    assert len(cards(local_slack)) == 2, "the unanswered ask was not posted again"
    assert live_buttons(local_slack.message(CHANNEL, right["ts"]) or {}) == ["Approve", "Reject", "Reply"]
    assert finished_message(local_slack) is None

    await user.click(message=right, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")
    assert "summary: both sides finished" in all_text(done)
    assert sorted(markers_file.read_text().splitlines()) == ["left:t", "right:t"]


async def test_sigterm_waits_for_a_running_pass_to_be_saved(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=sqlite_backend, extra_env={"APPROVAL_BOT_TEST_SLOW_SECONDS": "2"})
    user = user_for(bot)
    await user.slash_command(text="run guarded-write slow", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    started = Path(str(markers_file) + ".approval_bot_test_started")
    await eventually(started.exists, what="the approved tool to start")

    bot.process.terminate()  # a deploy or scale-in, mid-pass
    await asyncio.to_thread(bot.process.wait, 30)

    assert markers_file.read_text().splitlines() == ["writer:slow"]
    assert run_of(sqlite_backend.open_store(), local_slack).status is RunStatus.COMPLETED
    assert finished_message(local_slack) is not None, "the result was posted before the process exited"
