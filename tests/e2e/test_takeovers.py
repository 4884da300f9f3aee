"""An approved tool whose pass dies is never run again silently (issue 19).

The real bot is killed (SIGKILL) while an approved tool runs; a new bot takes the run
over with its sweeper. The approval reached a pass that never saved, so the tool may
have acted: instead of running the pass again with the same approval, the new bot posts
a "may have acted" card. Skip ends the step without running the tool; Retry runs it once
more, knowingly, with the original ``approval_id`` (a tool declared idempotent gets the
approval again at once, under the same id). And takeovers that never manage to save
stop after ``engine.takeover.MAX_TAKEOVERS``: the run fails closed, its requester told.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import RunStatus
from engine.takeover import MAX_TAKEOVERS
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

GRAPHS = {"GRAPH_MODULES": "tests.support.graphs"}
FAST = {**GRAPHS, "LEASE_SECONDS": "5", "DELIVERY_GRACE_SECONDS": "1"}
SWEEP = ["--sweep-seconds", "1"]
LIVE = ["Approve", "Reject", "Reply"]


def may_have_acted(slack: LocalSlack) -> list[dict[str, Any]]:
    return [m for m in cards(slack) if "may have acted" in all_text(m)]


async def approve_then_kill(
    graph: str, *, start_bot: StartBot, backend: Backend, slack: LocalSlack, user_for: Any, markers: Path
) -> str:
    """Run ``graph``, approve its write, SIGKILL the bot while the tool runs; the run id."""
    bot = await start_bot(backend=backend, extra_env={**FAST, "APPROVAL_BOT_TEST_SLOW_SECONDS": "60"})
    user = user_for(bot)
    await user.slash_command(text=f"run {graph} kill", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await slack.wait_for(lambda: cards(slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    started = Path(str(markers) + ".approval_bot_test_started")
    await eventually(started.exists, what="the approved tool to start")
    bot.kill()
    started.unlink()
    run = run_of(backend.open_store(), slack)
    assert run.status is RunStatus.RESUMING, "the pass died holding the run"
    return run.run_id


async def test_a_tool_killed_mid_run_is_not_run_again_and_skip_ends_the_step(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    run_id = await approve_then_kill(
        "guarded-write",
        start_bot=start_bot,
        backend=backend,
        slack=local_slack,
        user_for=user_for,
        markers=markers_file,
    )
    bot = await start_bot(backend=backend, extra_env=FAST, args=SWEEP)
    (card,) = await local_slack.wait_for(lambda: may_have_acted(local_slack), timeout=30, what="a may-have-acted card")
    assert live_buttons(card) == ["Retry", "Skip"]
    assert "writer:kill" in all_text(card), "the card shows what the approved card showed"
    started = Path(str(markers_file) + ".approval_bot_test_started")
    assert not started.exists() and not markers_file.exists(), "the takeover did not run the tool again"

    user = user_for(bot)
    await user.click(message=card, label="Skip", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the skip modal")
    await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "it did run"}}, user_id="U0BOB")
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")
    assert "may already have run" in all_text(done), all_text(done)
    assert not started.exists() and not markers_file.exists(), "Skip ran nothing"
    run = backend.open_store().load(run_id, snapshot=False)
    assert run is not None and run.status is RunStatus.COMPLETED and run.takeovers == 0


async def test_retry_runs_the_tool_once_more_with_the_same_approval_id(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    await approve_then_kill(
        "guarded-write",
        start_bot=start_bot,
        backend=backend,
        slack=local_slack,
        user_for=user_for,
        markers=markers_file,
    )
    bot = await start_bot(backend=backend, extra_env=FAST, args=SWEEP)
    (card,) = await local_slack.wait_for(lambda: may_have_acted(local_slack), timeout=30, what="a may-have-acted card")
    assert not markers_file.exists()

    await user_for(bot).click(message=card, label="Retry", user_id="U0BOB", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")
    assert "wrote writer:kill" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:kill"], "Retry ran the tool once more"
    first, again = Path(str(markers_file) + ".approval_ids").read_text().splitlines()
    assert first == again and first not in ("", "None"), (first, again)


async def test_an_idempotent_tool_gets_its_approval_again_under_the_same_approval_id(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    await approve_then_kill(
        "guarded-idempotent",
        start_bot=start_bot,
        backend=sqlite_backend,
        slack=local_slack,
        user_for=user_for,
        markers=markers_file,
    )
    await start_bot(backend=sqlite_backend, extra_env=FAST, args=SWEEP)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")
    assert "wrote writer:kill" in all_text(done)
    assert may_have_acted(local_slack) == [], "declared idempotent: sent again, no card"
    first, again = Path(str(markers_file) + ".approval_ids").read_text().splitlines()
    assert first == again and first not in ("", "None"), (first, again)


async def test_takeovers_that_never_save_are_capped_and_the_run_fails_closed(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    fault_proxy: FaultProxy,
    local_slack: LocalSlack,
    user_for: Any,
    markers_file: Path,
) -> None:
    """Every save fails (claims and lease renewals still land) under a 5 s lease (``FAST``): the pass
    that ran the tool cannot save, and neither can any takeover. Each takeover is counted;
    the one past the cap fails the run once the store takes a write again."""
    env = {**FAST, **fault_proxy.env(), "APPROVAL_BOT_TEST_SLOW_SECONDS": "1"}
    bot = await start_bot(backend=dynamodb_backend, extra_env=env, args=SWEEP)
    user = user_for(bot)
    await user.slash_command(text="run guarded-write cap", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    store = dynamodb_backend.open_store()  # straight to moto
    await eventually(lambda: not run_of(store, local_slack).owes_slack, what="the card to be recorded")

    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await eventually(Path(str(markers_file) + ".approval_bot_test_started").exists, what="the tool to start")
    stops: list[str] = []

    def a_save(body: dict[str, Any]) -> bool:
        if "attempts to finish a step" in json.dumps(body):
            stops.append(json.dumps(body))  # the takeover past the cap tried to fail the run
        return "write_id" in str(body.get("UpdateExpression"))

    fault_proxy.fail(operations={"UpdateItem"}, when=a_save)
    await eventually(lambda: stops, timeout=90, what="a takeover past the cap")
    assert run_of(store, local_slack).takeovers == MAX_TAKEOVERS
    fault_proxy.clear()
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")
    assert f"stopped after {MAX_TAKEOVERS + 1} attempts to finish a step" in all_text(done), all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:cap"], "the approved tool ran once"
    run = await eventually(lambda: (r := run_of(store, local_slack)) and not r.owes_slack and r, what="delivery")
    assert run.status is RunStatus.FAILED
    assert all(live_buttons(c) == [] for c in cards(local_slack)), "no card is left with buttons"
    assert may_have_acted(local_slack) == [], "nothing unsaved was shown"


async def test_under_a_quorum_the_may_have_acted_card_needs_the_quorum_again(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    """Found by review: one person's Retry re-sent an approval that needed two. Under a
    quorum the card asks for votes (its Retry is an approval that counts), so the tool runs
    again only once the quorum approved again, and the graph is told who did."""
    bot = await start_bot(backend=backend, extra_env={**FAST, "APPROVAL_BOT_TEST_SLOW_SECONDS": "60"})
    user = user_for(bot)
    await user.slash_command(text="run guarded-quorum kill", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await local_slack.wait_for(
        lambda: "1 of 2" in all_text(local_slack.message(CHANNEL, str(card["ts"])) or {}),
        timeout=30,
        what="the first approval counted",
    )
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    started = Path(str(markers_file) + ".approval_bot_test_started")
    await eventually(started.exists, what="the approved tool to start")
    bot.kill()
    started.unlink()

    bot = await start_bot(backend=backend, extra_env=FAST, args=SWEEP)
    user = user_for(bot)
    (again,) = await local_slack.wait_for(lambda: may_have_acted(local_slack), timeout=30, what="the card")
    assert live_buttons(again) == ["Retry", "Skip"]
    await user.click(message=again, label="Retry", user_id="U0CAROL", channel_id=CHANNEL)
    await local_slack.wait_for(
        lambda: "1 of 2" in all_text(local_slack.message(CHANNEL, str(again["ts"])) or {}),
        timeout=30,
        what="one Retry counted as one approval of two",
    )
    assert not markers_file.exists() and not started.exists(), "one person's Retry ran nothing"
    await user.click(message=again, label="Retry", user_id="U0ALICE", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")
    assert "wrote" in all_text(done), all_text(done)
    (line,) = markers_file.read_text().splitlines()
    assert line.endswith("approvers: U0CAROL,U0ALICE"), line
