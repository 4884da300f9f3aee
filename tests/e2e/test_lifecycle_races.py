"""The run lifecycle under races: two processes approving a run's parallel asks at once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from engine.records import AskStatus, RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, all_text, cards, eventually

ROUNDS = 4


async def test_parallel_approvals_on_two_processes_are_both_used(
    start_bot: StartBot, dynamodb_backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    """Both asks of one run approved within milliseconds, each on its own process: the run
    always finishes with both approvals used, never stuck waiting with no open ask."""
    first = await start_bot(backend=dynamodb_backend)
    second = await start_bot(backend=dynamodb_backend)
    alice, bob = user_for(first), user_for(second)
    store = dynamodb_backend.open_store()
    for round_ in range(ROUNDS):
        seen = len(cards(local_slack))
        await alice.slash_command(text=f"run two-asks r{round_}", user_id="U0ALICE", channel_id=CHANNEL)
        pair = await local_slack.wait_for(
            lambda seen=seen: cards(local_slack)[seen:] if len(cards(local_slack)) == seen + 2 else None,  # type: ignore[misc]
            timeout=30,
            what=f"round {round_}: two cards",
        )
        left = next(c for c in pair if f"left:r{round_}" in str(c["blocks"]))
        right = next(c for c in pair if f"right:r{round_}" in str(c["blocks"]))
        await asyncio.gather(
            alice.click(message=left, label="Approve", user_id="U0BOB", channel_id=CHANNEL),
            bob.click(message=right, label="Approve", user_id="U0CAROL", channel_id=CHANNEL),
        )
        run_id = _run_id(left)

        def settled(run_id: str = run_id) -> bool:
            run = store.load(run_id)
            return run is not None and (run.status.terminal or (run.status is RunStatus.WAITING and _stuck(run)))

        await eventually(settled, timeout=30, what=f"round {round_}: the run to finish")
        run = store.load(run_id)
        assert run is not None
        assert run.status is RunStatus.COMPLETED, (round_, run.status, {k: a.status for k, a in run.asks.items()})
        assert sorted(a.status for a in run.asks.values()) == [AskStatus.CONSUMED, AskStatus.CONSUMED]
        written = markers_file.read_text().splitlines()
        assert sorted(w for w in written if w.endswith(f":r{round_}")) == [f"left:r{round_}", f"right:r{round_}"]
        done = await local_slack.wait_for(
            lambda run_id=run_id: _final_of(local_slack, run_id), timeout=30, what="the result"
        )
        assert "summary: both sides finished" in all_text(done)


def _stuck(run) -> bool:  # type: ignore[no-untyped-def]
    """Waiting with nothing anyone could answer or pick up: what must never be."""
    return not run.pending_asks() and not run.decided_asks()


def _run_id(card: dict) -> str:  # type: ignore[type-arg]
    for block in card.get("blocks") or []:
        for element in block.get("elements") or []:
            if element.get("value"):
                return str(json.loads(element["value"])["r"])
    raise AssertionError(f"no run id on {card}")


def _final_of(slack: LocalSlack, run_id: str) -> dict | None:  # type: ignore[type-arg]
    for message in slack.messages(CHANNEL):
        payload = (message.get("metadata") or {}).get("event_payload") or {}
        if payload.get("what") == "final" and payload.get("run_id") == run_id:
            return message
    return None


async def test_a_cancel_stops_a_running_pass_before_its_next_node(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    """Cancelled while an approved tool runs: the next node never runs, the run ends
    cancelled (not completed), the thread says so, and the canceller is told what ran."""
    slow = {"APPROVAL_BOT_TEST_SLOW_SECONDS": "2", "CANCEL_CHECK_SECONDS": "0"}
    bot = await start_bot(backend=backend, extra_env=slow)
    user = user_for(bot)
    await user.slash_command(text="run write-then-next t", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    run_id = _run_id(card)
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    started = Path(str(markers_file) + ".approval_bot_test_started")
    await eventually(started.exists, what="the approved tool to start")

    await user.slash_command(text=f"cancel {run_id}", user_id="U0ALICE", channel_id=CHANNEL)
    told = await local_slack.wait_for(lambda: local_slack.ephemerals("U0ALICE"), timeout=30, what="the answer")
    assert "before its next node" in told[0]["text"], told[0]["text"]
    assert "the pass running now received approve_write_writer" in told[0]["text"], told[0]["text"]

    done = await local_slack.wait_for(lambda: _final_of(local_slack, run_id), timeout=30, what="the end")
    store = backend.open_store()
    run = store.load(run_id)
    assert run is not None and run.status is RunStatus.CANCELLED, run
    assert run.cancelled_by == "U0ALICE"
    assert markers_file.read_text().splitlines() == ["writer:t"], "the node after the cancel never ran"
    said = all_text(done)
    assert "cancelled" in said and "<@U0ALICE>" in said, said
    assert "nodes finished: writer;" in said and "stopped before node next" in said, said

    await user.slash_command(text=f"cancel {run_id}", user_id="U0ALICE", channel_id=CHANNEL)
    after = await local_slack.wait_for(
        lambda: local_slack.ephemerals("U0ALICE")[1:], timeout=30, what="the answer once it ended"
    )
    assert "cancelled" in after[0]["text"] and "nodes finished: writer;" in after[0]["text"], after[0]["text"]
    assert "stopped before node next" in after[0]["text"], after[0]["text"]
