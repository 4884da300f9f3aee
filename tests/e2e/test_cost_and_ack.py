"""What one approval costs in DynamoDB requests, and how fast Slack gets its ack.

Requests are counted by moto's server at the HTTP level, from the real bot process.
"""

from __future__ import annotations

import time
from pathlib import Path

from bot.localslack import LocalSlack
from persistence.records import RunStatus
from tests.e2e.conftest import CHANNEL, Backend, StartBot, cards, eventually, finished_message, run_of
from tests.support.aws import CountingMotoServer

BOT_APP_ID = "approval-bot-under-test"
SLACK_ACK_DEADLINE = 3.0  # seconds; Slack's hard limit, not a performance target


async def test_one_approval_cycle_costs_five_dynamodb_requests(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    local_slack: LocalSlack,
    user_for,
    markers_file: Path,
    moto_server: CountingMotoServer,
) -> None:
    bot = await start_bot(backend=dynamodb_backend, extra_env={"AWS_SDK_UA_APP_ID": BOT_APP_ID})
    user = user_for(bot)
    moto_server.reset_counts()

    await user.slash_command(text="run guarded-write cost", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    store = dynamodb_backend.open_store()  # the test's reads are not tagged, so not counted
    await eventually(lambda: run_of(store, local_slack).status is RunStatus.WAITING, what="the pause to be saved")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    counts = {op: n for op, n in moto_server.counts(app_id=BOT_APP_ID).items() if op.startswith("dynamodb.")}
    total = sum(counts.values())
    print(f"\nDynamoDB requests for one approval cycle (start → ask → decision → resume → end): {total} {counts}")
    assert counts == {"dynamodb.PutItem": 3, "dynamodb.UpdateItem": 2}, counts


async def test_acks_come_well_within_slacks_deadline(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)

    started = time.perf_counter()
    response = await user.slash_command(text="run guarded-write ack", user_id="U0ALICE", channel_id=CHANNEL)
    command_ack = time.perf_counter() - started
    assert response.status == 200
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")

    started = time.perf_counter()
    response = await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    modal_ack = time.perf_counter() - started
    assert response.status == 200
    await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")

    print(f"\nack times: slash command {command_ack * 1000:.0f} ms, Reply with modal {modal_ack * 1000:.0f} ms")
    assert command_ack < SLACK_ACK_DEADLINE and modal_ack < SLACK_ACK_DEADLINE
