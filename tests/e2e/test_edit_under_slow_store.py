"""An Edit submitted while the store is slow: the ack still comes in time and says what was recorded.

The Edit modal's submission is decided inside its ack (one read of the run, one conditional
write), within a 2.4 s budget, because Slack drops an ack after 3 s. The bot runs on DynamoDB
(moto) through the fault proxy, which holds the next ``GetItem`` (the ack's read) for a while:

* 1.5 s: the read and the decision both fit; the modal closes, the card shows the edit's diff
  and the tool runs with the edited input.
* 3.5 s: the budget runs out first; the modal shows that nothing was recorded, and indeed
  nothing was: no write, the ask pending, the card live, the tool not run. Submitting again
  once the store answers decides.

The graph is ``tool-gate-test`` (``tests/support/graphs.py``): a gate holds ``set_replicas``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bot.listeners.edits import STORE_TOO_SLOW
from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, RunStatus, Verdict
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    StartBot,
    UserFor,
    all_text,
    cards,
    eventually,
    finished_message,
    live_buttons,
    run_of,
)
from tests.support.aws import CountingMotoServer
from tests.support.faults import FaultProxy

BOT_APP_ID = "approval-bot-slow-store"  # tags the bot's requests in moto's counts
SLACK_ACK_DEADLINE = 3.0
PROPOSED = {"service": "billing", "replicas": 3}
EDITED = {"service": "billing-canary", "replicas": 5}


def _markers(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _edit_modal_open(
    *,
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    fault_proxy: FaultProxy,
) -> tuple[LocalSlackUser, dict[str, Any], dict[str, Any]]:
    """The bot on DynamoDB through the proxy, a gate's card, and Bob's Edit modal open on it."""
    env = fault_proxy.env() | {"AWS_SDK_UA_APP_ID": BOT_APP_ID}  # extra_env comes last: the proxy wins
    bot = await start_bot(backend=backend, extra_env=env)
    user = user_for(bot)
    await user.slash_command(text="run tool-gate-test billing", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the gate's card")
    store = backend.open_store()
    await eventually(
        lambda: (r := run_of(store, local_slack)).status is RunStatus.WAITING and not r.owes_slack,
        what="the pause to be saved and its card recorded",
    )
    await user.click(message=card, label="Edit", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the edit modal")
    assert fault_proxy.events == [], "nothing was slowed down yet"
    return user, card, view


async def _submit(user: LocalSlackUser, view: dict[str, Any], edited: dict[str, Any]) -> tuple[Any, float]:
    """Press Submit; what the ack said and how long it took."""
    started = time.perf_counter()
    response = await user.submit_view(
        view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: json.dumps(edited)}}, user_id="U0BOB"
    )
    elapsed = time.perf_counter() - started
    assert response.status == 200
    return response.body, elapsed


async def _assert_edited_and_ran(
    local_slack: LocalSlack, backend: Backend, card: dict[str, Any], markers_file: Path
) -> None:
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final output")
    assert "ops: scaled billing-canary to 5" in all_text(done)
    assert _markers(markers_file) == ["set_replicas " + json.dumps(EDITED, sort_keys=True)], "ran once, edited"
    decided = local_slack.message(CHANNEL, card["ts"])
    assert decided is not None and live_buttons(decided) == []
    text = all_text(decided)
    assert "Approved with edits by <@U0BOB>" in text, text
    assert 'changed `service`: `"billing"` → `"billing-canary"`' in text, text
    assert "changed `replicas`: `3` → `5`" in text, text
    run = run_of(backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.CONSUMED and ask.decision is not None
    assert ask.decision.verdict is Verdict.EDIT and ask.decision.edited_input == EDITED


async def test_a_slow_read_that_fits_the_budget_still_decides_in_the_ack(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    fault_proxy: FaultProxy,
    markers_file: Path,
) -> None:
    user, card, view = await _edit_modal_open(
        start_bot=start_bot,
        backend=dynamodb_backend,
        local_slack=local_slack,
        user_for=user_for,
        fault_proxy=fault_proxy,
    )
    fault_proxy.delay(seconds=1.5, operations={"GetItem"}, times=1)
    body, elapsed = await _submit(user, view, EDITED)
    print(f"\nEdit ack with the store's read held 1.5 s: {elapsed * 1000:.0f} ms")

    assert fault_proxy.count("delay", "GetItem") == 1, "the ack's read was the one held"
    assert 1.5 <= elapsed < SLACK_ACK_DEADLINE, f"ack after {elapsed:.2f}s"
    assert body in ("", None, {}), f"accepted: the modal closes, not {body!r}"
    assert local_slack.open_views("U0BOB") == []
    await _assert_edited_and_ran(local_slack, dynamodb_backend, card, markers_file)


async def test_a_read_slower_than_the_budget_records_nothing_and_says_so(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    fault_proxy: FaultProxy,
    moto_server: CountingMotoServer,
    markers_file: Path,
) -> None:
    user, card, view = await _edit_modal_open(
        start_bot=start_bot,
        backend=dynamodb_backend,
        local_slack=local_slack,
        user_for=user_for,
        fault_proxy=fault_proxy,
    )
    before = moto_server.counts(app_id=BOT_APP_ID)
    fault_proxy.delay(seconds=3.5, operations={"GetItem"}, times=1)
    body, elapsed = await _submit(user, view, EDITED)
    print(f"\nEdit ack with the store's read held 3.5 s: {elapsed * 1000:.0f} ms")

    assert fault_proxy.count("delay", "GetItem") == 1, "the ack's read was the one held"
    assert elapsed < SLACK_ACK_DEADLINE, f"ack after {elapsed:.2f}s"
    assert isinstance(body, dict) and body.get("response_action") == "errors", body
    error = body["errors"][TEXT_BLOCK_ID]
    assert error == STORE_TOO_SLOW
    assert "did not answer in time" in error and "nothing was recorded" in error
    assert [v["id"] for v in local_slack.open_views("U0BOB")] == [view["id"]], "the modal stays open"

    # Let the held read reach the store and its answer come back (too late for anyone).
    reads = before.get("dynamodb.GetItem", 0)
    await eventually(
        lambda: moto_server.counts(app_id=BOT_APP_ID).get("dynamodb.GetItem", 0) > reads,
        timeout=10,
        what="the held read to reach the store",
    )
    after = moto_server.counts(app_id=BOT_APP_ID)
    assert after.get("dynamodb.UpdateItem", 0) == before.get("dynamodb.UpdateItem", 0), "nothing was written"
    run = run_of(dynamodb_backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert run.status is RunStatus.WAITING and ask.status is AskStatus.PENDING and ask.decision is None
    assert ask.tool is not None and ask.tool.input == PROPOSED
    shown = local_slack.message(CHANNEL, card["ts"])
    assert shown is not None and live_buttons(shown) == ["Approve", "Reject", "Reply", "Edit"]
    assert _markers(markers_file) == [], "the tool has not run"
    assert finished_message(local_slack) is None

    body, again = await _submit(user, view, EDITED)
    print(f"Edit ack on the second submission: {again * 1000:.0f} ms")
    assert again < SLACK_ACK_DEADLINE
    assert body in ("", None, {}), f"accepted: the modal closes, not {body!r}"
    assert local_slack.open_views("U0BOB") == []
    await _assert_edited_and_ran(local_slack, dynamodb_backend, card, markers_file)
