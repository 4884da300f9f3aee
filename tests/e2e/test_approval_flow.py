"""The product path through real HTTP: signed slash command → card → signed click → result.

Parametrized over the embedded store and DynamoDB (moto's server over HTTP).
"""

from __future__ import annotations

from pathlib import Path

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, RunStatus
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


async def _start_and_wait_for_card(slack: LocalSlack, user, graph: str = "guarded-write", task: str = "hello"):  # type: ignore[no-untyped-def]
    response = await user.slash_command(text=f"run {graph} {task}", user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200
    return await slack.wait_for(lambda: cards(slack), timeout=30, what="a card")


async def test_approve(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    (card,) = await _start_and_wait_for_card(local_slack, user)
    assert live_buttons(card) == ["Approve", "Reject", "Reply"]
    assert "writer:hello" in all_text(card) or "writer:hello" in str(card["blocks"])
    assert card.get("thread_ts"), "cards go in the run's thread"

    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert "writer result: wrote writer:hello" in all_text(done)
    assert done["thread_ts"] == card["thread_ts"]
    decided = local_slack.message(CHANNEL, card["ts"])
    assert decided is not None and live_buttons(decided) == []
    assert "Approved by <@U0BOB>" in str(decided["blocks"])
    assert markers_file.read_text().splitlines() == ["writer:hello"]
    run = run_of(backend.open_store(), local_slack)
    assert run.status is RunStatus.COMPLETED
    assert [a.status for a in run.asks.values()] == [AskStatus.CONSUMED]


async def test_reject_with_a_reason_skips_the_side_effect(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    (card,) = await _start_and_wait_for_card(local_slack, user)

    await user.click(message=card, label="Reject", user_id="U0BOB", channel_id=CHANNEL)
    view = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the reject modal")
    await user.submit_view(view=view[-1], values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "not on a Friday"}}, user_id="U0BOB")
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert "rejected by U0BOB: not on a Friday" in all_text(done)
    assert str(done["text"]).startswith(
        ":no_entry: *guarded-write* finished after a rejection by <@U0BOB>: not on a Friday"
    )
    assert not markers_file.exists() or markers_file.read_text() == ""
    assert "Rejected by <@U0BOB>" in str(local_slack.message(CHANNEL, card["ts"]))


async def test_reply_through_the_modal_reaches_the_graph(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    (card,) = await _start_and_wait_for_card(local_slack, user)

    await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")
    empty = await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "  "}}, user_id="U0BOB")
    assert empty.status == 200 and local_slack.open_views("U0BOB"), "an empty reply keeps the modal open"
    await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "use the canary"}}, user_id="U0BOB")
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert markers_file.read_text().splitlines() == ["writer:hello | reply: use the canary"]
