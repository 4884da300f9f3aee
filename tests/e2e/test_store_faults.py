"""DynamoDB going away under the real bot: the approved tool still runs once, clicks are never lost silently.

The bot's DynamoDB traffic goes through ``tests.support.faults``' proxy (``fault_proxy.env()``
overrides the endpoint that ``aws_env`` sets); the test reads the store straight from moto,
so it can look at the record while the bot cannot reach it.

(The lost-claim-response case is driven at the engine level, where the claim can be
matched and a click slipped in between it and botocore's retry: see
``tests/engine/test_store_faults.py``.)
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

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
from tests.support.faults import FaultProxy

LIVE = ["Approve", "Reject", "Reply"]
NOT_RECORDED = "Nothing was recorded: I could not reach my store just now. The card is still open; try again."


def final_posts(slack: LocalSlack) -> list[dict[str, Any]]:
    """Every chat.postMessage of a run's end (its metadata says ``final``)."""
    return [
        params
        for method, params in slack.calls
        if method == "chat.postMessage"
        and ((params.get("metadata") or {}).get("event_payload") or {}).get("what") == "final"
    ]


@pytest.mark.long  # 30 s of outage by design; the seeded fault sweep covers shorter outages in CI
async def test_dynamodb_down_for_30s_right_after_the_approved_tool_ran(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    fault_proxy: FaultProxy,
    local_slack: LocalSlack,
    user_for: Any,
    markers_file: Path,
) -> None:
    """The pass's save fails for 30 s (botocore's retries, then the engine's, under a
    120 s lease the heartbeat cannot renew meanwhile); once DynamoDB is back the save
    lands. Nothing is posted before the state is saved, and the tool never runs again."""
    bot = await start_bot(
        backend=dynamodb_backend, extra_env={**fault_proxy.env(), "APPROVAL_BOT_TEST_SLOW_SECONDS": "2"}
    )
    user = user_for(bot)
    await user.slash_command(text="run guarded-write outage", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    store = dynamodb_backend.open_store()  # straight to moto
    await eventually(lambda: not run_of(store, local_slack).owes_slack, what="the card to be recorded")

    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    started = Path(str(markers_file) + ".approval_bot_test_started")
    await eventually(started.exists, what="the approved tool to start")
    fault_proxy.fail(service="dynamodb", for_seconds=30)
    back_at = time.monotonic() + 30
    await eventually(markers_file.exists, timeout=10, what="the tool to finish during the outage")
    assert run_of(store, local_slack).status is RunStatus.RESUMING, "held while DynamoDB is away"

    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=90, what="the end")
    assert time.monotonic() >= back_at - 1, "nothing was posted before the pass could be saved"
    assert fault_proxy.count("fail", "UpdateItem") >= 2, "the save met the outage"
    run = await eventually(
        lambda: (r := run_of(store, local_slack)) and not r.owes_slack and r, what="the end to be recorded"
    )
    (shown,) = cards(local_slack)
    assert live_buttons(shown) == [], "no card is left with buttons"
    # Either outcome is acceptable (the engine expects to complete: a 30 s outage is well
    # within a 120 s lease); each must be told consistently.
    assert run.status in (RunStatus.COMPLETED, RunStatus.FAILED), run.status
    if run.status is RunStatus.COMPLETED:
        assert "wrote writer:outage" in all_text(done)
        assert run.asks[next(iter(run.asks))].status is AskStatus.CONSUMED
    else:
        assert run.error and "could not be saved" in run.error, run.error
        assert "The run failed; this card can no longer be answered" in all_text(shown)
    assert markers_file.read_text().splitlines() == ["writer:outage"], "the approved tool ran exactly once"
    assert run.trail == ("writer",) and len(run.asks) == 1, "one pass resumed the node; no pass ran again"
    assert len(final_posts(local_slack)) == 1


async def test_a_click_while_dynamodb_is_down_is_refused_and_can_be_repeated(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    fault_proxy: FaultProxy,
    local_slack: LocalSlack,
    user_for: Any,
    markers_file: Path,
) -> None:
    """A click whose decision cannot be recorded (DynamoDB answers 500 for 15 s) says so to
    the clicker and leaves the card open; the same click after the outage decides, and the
    tool runs once. botocore's own retries of a DynamoDB 500 back off from 25 ms, so they
    give up well within the outage and the clicker is told during it."""
    bot = await start_bot(backend=dynamodb_backend, extra_env=fault_proxy.env())
    user = user_for(bot)
    await user.slash_command(text="run guarded-write click", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    store = dynamodb_backend.open_store()  # straight to moto
    await eventually(lambda: not run_of(store, local_slack).owes_slack, what="the card to be recorded")

    fault_proxy.fail(service="dynamodb", for_seconds=15)
    back_at = time.monotonic() + 15
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (notice,) = await local_slack.wait_for(
        lambda: local_slack.ephemerals("U0BOB"), timeout=30, what="the clicker to be told nothing was recorded"
    )
    assert time.monotonic() < back_at, "told during the outage, not decided after it"
    assert notice["text"] == NOT_RECORDED
    assert fault_proxy.count("fail", "UpdateItem") >= 2, "botocore retried the decision before giving up"
    assert live_buttons(local_slack.message(CHANNEL, card["ts"]) or {}) == LIVE, "the card is still open"
    waiting = run_of(store, local_slack)
    (ask,) = waiting.asks.values()
    assert ask.status is AskStatus.PENDING and ask.decision is None, "nothing was recorded"
    assert waiting.status is RunStatus.WAITING and waiting.lease_owner is None, "nobody claimed the run"

    await asyncio.sleep(max(0.0, back_at - time.monotonic()))  # the outage is over
    assert run_of(store, local_slack).asks[ask.key].status is AskStatus.PENDING, "no late retry decided it"
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert "wrote writer:click" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:click"], "the approved tool ran exactly once"
    assert len(local_slack.ephemerals("U0BOB")) == 1, "the second click was simply decided"
    run = run_of(store, local_slack)
    assert run.status is RunStatus.COMPLETED
    decision = run.asks[ask.key].decision
    assert decision is not None and decision.user == "U0BOB"
    assert [live_buttons(m) for m in cards(local_slack)] == [[]]
    assert len(final_posts(local_slack)) == 1
