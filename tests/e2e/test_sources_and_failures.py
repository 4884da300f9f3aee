"""HumanInTheLoop through Slack, failing nodes, and outputs too big for one message."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.records import RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, all_text, cards, finished_message, live_buttons, run_of


@pytest.mark.parametrize(("label", "dropped"), [("Approve", True), ("Reject", False), ("Trust", True)])
async def test_human_in_the_loop(
    start_bot: StartBot,
    sqlite_backend: Backend,
    local_slack: LocalSlack,
    user_for,
    markers_file: Path,
    label: str,
    dropped: bool,
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run hitl clean up", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    assert live_buttons(card) == ["Approve", "Reject", "Reply", "Trust"], "enable_trust adds a Trust button"
    assert "drop_table" in str(card["blocks"])

    await user.click(message=card, label=label, user_id="U0BOB", channel_id=CHANNEL)
    if label == "Reject":
        (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="modal")
        await user.submit_view(view=view, values={}, user_id="U0BOB")
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    marks = markers_file.read_text().splitlines() if markers_file.exists() else []
    assert marks == (["dropped users"] if dropped else [])
    assert ("dba: dropped users" in all_text(done)) is dropped
    if dropped:
        assert str(done["text"]).startswith(":white_check_mark: *hitl* finished")
    else:  # the graph only echoes Strands' denial; the message says what happened, and who did it
        assert str(done["text"]).startswith(":no_entry: *hitl* finished after a rejection by <@U0BOB>")
        assert "<@U0BOB> rejected *Tool approval: drop_table*" in all_text(done)


async def test_a_node_that_raises_is_reported_and_the_run_marked_failed(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=backend)
    await user_for(bot).slash_command(text="run boom now", user_id="U0ALICE", channel_id=CHANNEL)
    failed = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the failure")

    assert str(failed["text"]).startswith(":x:")
    assert "the model exploded" in all_text(failed)
    root = local_slack.messages(CHANNEL, top_level=True)[0]
    assert failed["thread_ts"] == root["ts"], "the failure is reported in the run's thread"
    run = run_of(backend.open_store(), local_slack)
    assert run.status is RunStatus.FAILED and run.error is not None and "the model exploded" in run.error
    assert bot.process.poll() is None, "the bot is still up"


async def test_megabytes_of_output_are_posted_within_slack_limits(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run big-output go", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert "truncated" in all_text(done) and "the output is 2,000,004 characters" in all_text(done)
    assert len(done["blocks"]) <= 50
    run = run_of(sqlite_backend.open_store(), local_slack)
    assert run.output is not None and 100_000 < len(run.output) < 100_200, "the record keeps a bounded head"
    # The autouse check then proves no call was one real Slack would refuse.
