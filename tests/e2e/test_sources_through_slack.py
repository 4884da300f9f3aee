"""Issue 3's sources that show in Slack, through the real bot over HTTP: Retry on a
review-after-tool card, a node gate's rejection, and parallel batch gates with one card
each. (HumanInTheLoop Trust and Edit have their own e2e tests.)"""

from __future__ import annotations

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    StartBot,
    all_text,
    cards,
    finished_message,
    live_buttons,
    run_of,
)


def _live(slack: LocalSlack) -> list[dict]:  # type: ignore[type-arg]
    return [c for c in cards(slack) if live_buttons(c)]


async def test_retry_runs_the_tool_again_and_posts_a_new_card(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run incident checkout errors since 10:00", user_id="U0ALICE", channel_id=CHANNEL)
    (first,) = await local_slack.wait_for(lambda: _live(local_slack), timeout=30, what="the review card")
    assert live_buttons(first) == ["Approve", "Reject", "Reply", "Retry"]
    assert "query_logs" in str(first["blocks"]) and "attempt" in str(first["blocks"])

    await user.click(message=first, label="Retry", user_id="U0BOB", channel_id=CHANNEL)
    (second,) = await local_slack.wait_for(
        lambda: [c for c in _live(local_slack) if c["ts"] != first["ts"]], timeout=30, what="a new card"
    )
    assert "Retry requested by <@U0BOB>" in str(local_slack.message(CHANNEL, first["ts"]))
    await user.click(message=second, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert "Incident report for checkout" in all_text(done)
    assert len(cards(local_slack)) == 2


async def test_a_rejected_node_gate_ends_the_run_as_rejected_in_slack_and_the_record(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run node-gate we ship on friday", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: _live(local_slack), timeout=30, what="the sign-off card")

    await user.click(message=card, label="Reject", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")
    await user.submit_view(
        view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "legal has not read it"}}, user_id="U0BOB"
    )
    ended = await local_slack.wait_for(
        lambda: next((m for m in local_slack.messages(CHANNEL) if "rejected, node not run" in m.get("text", "")), None),
        timeout=30,
        what="the rejection notice",
    )

    assert "node publish not run" in all_text(ended) and "legal has not read it" in all_text(ended)
    run = run_of(backend.open_store(), local_slack)
    assert run.status is RunStatus.REJECTED
    assert finished_message(local_slack) == ended, "the rejection notice is the run's one final message"
    assert not ended["text"].startswith((":white_check_mark:", ":x:")), "reported as neither a success nor a failure"


async def test_parallel_batch_gates_get_a_card_each_and_one_answer_each(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run batch-gate rolling restart", user_id="U0ALICE", channel_id=CHANNEL)
    both = await local_slack.wait_for(
        lambda: _live(local_slack) if len(_live(local_slack)) == 2 else None, timeout=30, what="two cards"
    )
    eu = next(c for c in both if "eu" in str(c["blocks"]))
    us = next(c for c in both if c is not eu)

    await user.click(message=eu, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(
        lambda: not live_buttons(local_slack.message(CHANNEL, eu["ts"]) or {}), timeout=30, what="eu decided"
    )
    assert live_buttons(local_slack.message(CHANNEL, us["ts"]) or {}) == ["Approve", "Reject", "Reply"]

    await user.click(message=us, label="Reject", user_id="U0CAROL", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0CAROL"), timeout=10, what="the modal")
    await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "peak traffic"}}, user_id="U0CAROL")
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    text = all_text(done)
    assert "eu: restarted" in text and "us: nothing restarted" in text, text
    # us's "no" is an answer the end rests on: the run reads as rejected, naming who and why.
    assert str(done["text"]).startswith(
        ":no_entry: *batch-gate* finished after a rejection by <@U0CAROL>: peak traffic"
    )
    assert "<@U0CAROL> rejected *Approve batch* (node `us`)" in text
    assert len(cards(local_slack)) == 2
