"""What one approval costs in DynamoDB requests, and how fast Slack gets its ack.

Requests are counted by moto's server at the HTTP level, from the real bot process.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from engine.records import RunStatus
from localslack import LocalSlack
from persistence.dynamodb import DynamoRunStore
from tests.e2e.conftest import CHANNEL, Backend, StartBot, _dynamodb, cards, eventually, finished_message, run_of
from tests.support.aws import CountingMotoServer
from tests.support.source_graphs import BLOB_BYTES_VARIABLE
from tests.support.start_books import had_started_before

BOT_APP_ID = "approval-bot-under-test"
SLACK_ACK_DEADLINE = 3.0  # seconds; Slack's hard limit, not a performance target


async def _one_cycle(
    *,
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for,
    moto_server: CountingMotoServer,
    graph: str,
    extra_env: dict[str, str],
) -> tuple[dict[str, int], dict[str, Any], int]:
    """Start → ask → Approve → end through the real bot; what the bot's own requests cost."""
    env = {"AWS_SDK_UA_APP_ID": BOT_APP_ID, "GRAPH_MODULES": "tests.support.graphs,tests.support.source_graphs"}
    bot = await start_bot(backend=backend, extra_env=env | extra_env)
    user = user_for(bot)
    store = backend.open_store()  # the test's requests are not tagged, so not counted
    had_started_before(store, "U0ALICE")
    moto_server.reset_counts()

    await user.slash_command(text=f"run {graph} cost", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=60, what="a card")
    paused = await eventually(
        lambda: (r := run_of(store, local_slack)).status is RunStatus.WAITING and not r.owes_slack and r,
        what="the pause to be saved and its card recorded",
    )
    state_bytes = int((paused.state_ref or {}).get("size", 0))
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=60, what="the result")
    await eventually(lambda: run_of(store, local_slack).final is not None, what="the end to be recorded")

    counts = {op: n for op, n in moto_server.counts(app_id=BOT_APP_ID).items() if op.startswith("dynamodb.")}
    return counts, moto_server.capacity(app_id=BOT_APP_ID), state_bytes


async def test_one_approval_cycle_costs_nine_small_dynamodb_requests(
    start_bot: StartBot, dynamodb_backend: Backend, local_slack: LocalSlack, user_for, moto_server: CountingMotoServer
) -> None:
    counts, capacity, state = await _one_cycle(
        start_bot=start_bot,
        backend=dynamodb_backend,
        local_slack=local_slack,
        user_for=user_for,
        moto_server=moto_server,
        graph="guarded-write",
        extra_env={},
    )
    print(
        f"\nDynamoDB for one approval cycle (start → ask → decision → resume → end), state {state:,} bytes: "
        f"{sum(counts.values())} requests {counts}, {capacity['write_units']} write units, "
        f"{capacity['read_units']} read units"
    )
    # create; save the pause; index the ask for its deciders' inboxes (BatchWriteItem); record
    # the card; decide and claim; save the end; record the final message. Plus one read of who
    # uses App Home (GetItem), which a process makes at most once a minute whatever it does.
    # The start limits (engine.start_limits) add one small conditional write to the person's
    # book (UpdateItem: the run counted in its minute and open); a person's first start ever
    # adds a second (the refused UpdateItem, then the PutItem that makes the book). Its write
    # is one unit (tests/persistence/test_start_counts.py): 24 write units before, 25 with it.
    assert counts == {
        "dynamodb.PutItem": 1,
        "dynamodb.UpdateItem": 5 + 1,
        "dynamodb.BatchWriteItem": 1,
        "dynamodb.GetItem": 1,
    }, counts
    assert capacity["unmetered"] == 0
    table_units = capacity["write_units"] - capacity["index_write_units"]
    assert table_units <= 2 * sum(counts.values()), "each write stays within 2 KB: a small record"
    # Indexes: the create enters by_channel, by_starter and sweep (3); the card moves the run
    # in sweep to its next deadline (2), the claim to its lease end (2), the final message
    # takes it out (1). The pause and the end leave the key where the create and the claim
    # put it: what a pass's save owes Slack waits for the pass's lease end (Run.held_until).
    assert 0 < capacity["index_write_units"] <= 8, capacity


@pytest.mark.parametrize("bucket", [False, True], ids=["chunks", "s3"])
@pytest.mark.parametrize("blob_bytes", [120_000, 1_200_000], ids=["state-120KB", "conversation-1.6MB"])
async def test_write_units_per_cycle_follow_the_state_size_once(
    start_bot: StartBot,
    local_slack: LocalSlack,
    user_for,
    moto_server: CountingMotoServer,
    request: pytest.FixtureRequest,
    blob_bytes: int,
    bucket: bool,
) -> None:
    """A decision, a claim, a renewal and a delivery record cost a few units whatever the state:
    the state is written once, when the run pauses, and dropped (free) when it ends."""
    backend = _dynamodb(request)
    extra = {BLOB_BYTES_VARIABLE: str(blob_bytes)}
    if bucket:
        name = request.getfixturevalue("s3_bucket")
        backend = Backend(
            name="dynamodb+s3",
            env={**backend.env, "SNAPSHOT_BUCKET": name},
            open_store=lambda: DynamoRunStore(backend.env["DYNAMODB_TABLE"], bucket=name),
        )
    counts, capacity, state = await _one_cycle(
        start_bot=start_bot,
        backend=backend,
        local_slack=local_slack,
        user_for=user_for,
        moto_server=moto_server,
        graph="big-context",
        extra_env=extra,
    )
    limit = 1.5 * state / 1024 + 10
    print(
        f"\n[{backend.name}] state {state / 1024:,.0f} KB: {sum(counts.values())} DynamoDB requests {counts}, "
        f"{capacity['write_units']} write units ({capacity['index_write_units']} of them the indexes'; "
        f"limit {limit:,.0f}), {capacity['read_units']} read units, "
        f"S3 {capacity['s3_requests']}"
    )
    assert state > 80 * 1024, "the state is as large as the test says"
    assert capacity["unmetered"] == 0
    assert capacity["write_units"] <= limit, capacity


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
