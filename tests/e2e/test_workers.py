"""``approval-bot serve --workers 2``: the serving process acks, worker processes do the work.

One approval cycle through the real server with two workers: the run's every line (its
audit trail among them) is logged by a worker, names the run and the request that handed
it off, its metrics are written once, and SIGTERM drains the workers before the server
exits. Then the workers are SIGKILLed while the approved tool runs: they come back, and
worker 0's sweeper takes the run over once the dead pass's lease expires and finishes it,
the tool (declared idempotent) given its approval again and its effect written once.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import aiohttp

from engine.ports import FINAL
from engine.records import RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    BotProcess,
    StartBot,
    all_text,
    cards,
    eventually,
    finished_message,
    run_of,
)
from tests.e2e.test_metrics_and_logs import GRAPH, assert_one_cycle, json_lines
from tests.support.emf import datapoints

WORKERS = ["--workers", "2"]
_STARTED = re.compile(r"worker (\d) started \(pid (\d+)\)")


def worker_pids(bot: BotProcess) -> dict[int, list[int]]:
    """Each worker's pids, in the order they started (a restarted worker has a second one)."""
    pids: dict[int, list[int]] = {}
    for index, pid in _STARTED.findall(bot.output()):
        pids.setdefault(int(index), []).append(int(pid))
    return pids


def finals(slack: LocalSlack) -> list[dict[str, Any]]:
    """Every final message in the channel (by the metadata the bot stamps on it)."""
    return [
        m
        for m in slack.messages(CHANNEL)
        if ((m.get("metadata") or {}).get("event_payload") or {}).get("what") == FINAL
    ]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_an_approval_cycle_runs_in_workers_and_sigterm_drains_them(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend, extra_env={"METRICS": "on", "LOG_FORMAT": "json"}, args=WORKERS)
    user = user_for(bot)
    await user.slash_command(text=f"run {GRAPH} hello", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")
    assert "writer result: wrote writer:hello" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:hello"], "the approved tool ran once"
    pids = [p for started in worker_pids(bot).values() for p in started]
    assert len(pids) == 2 and bot.process.pid not in pids
    # "workers" counts those ready (graphs loaded): one loading still, while the other did the cycle, is not.
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            async with session.get(bot.url + "/healthz") as health:
                body = await health.json()
            if body.get("workers") == 2:
                break
            await asyncio.sleep(0.1)
    assert body == {"ok": True, "graphs_loaded": True, "workers": 2}
    await bot.stop()  # SIGTERM: the workers drain, flush their metrics and exit; then the server

    assert bot.process.returncode == 0, bot.output()[-3000:]
    assert not any(alive(pid) for pid in pids), "no worker outlives the server"
    run = run_of(backend.open_store(), local_slack)
    assert run.status is RunStatus.COMPLETED
    lines = json_lines(bot.output())
    assert_one_cycle(datapoints(bot.output()))
    about = [r for r in lines if r.get("run_id") == run.run_id]
    audit = [json.loads(r["message"].removeprefix("audit ")) for r in about if r["message"].startswith("audit {")]
    assert [a["kind"] for a in audit] == ["started", "asked", "decided", "resumed", "completed"], audit
    # The run's work is the workers', each line naming the request that handed it off.
    assert about and all(r.get("worker") in (0, 1) and r.get("request_id") for r in about), about
    assert len(finals(local_slack)) == 1


async def test_workers_killed_mid_pass_come_back_and_the_sweeper_finishes_the_run_once(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    env = {"APPROVAL_BOT_TEST_SLOW_SECONDS": "1", "LEASE_SECONDS": "5", "DELIVERY_GRACE_SECONDS": "1"}
    bot = await start_bot(backend=backend, extra_env=env, args=[*WORKERS, "--sweep-seconds", "1"])
    user = user_for(bot)
    # Its tool is declared idempotent: a takeover gives it the approval again, no person asked.
    await user.slash_command(text="run guarded-idempotent crash", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    started = Path(f"{markers_file}.approval_bot_test_started")
    await eventually(started.exists, timeout=20, what="the approved tool to start")
    first = {index: pids[0] for index, pids in worker_pids(bot).items()}
    for pid in first.values():  # whichever holds the pass: both die mid-pass
        os.kill(pid, signal.SIGKILL)
    assert not markers_file.exists(), "killed before the tool's effect"

    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=40, what="the result")
    assert "writer result: wrote writer:crash" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:crash"], "the effect once"
    assert bot.process.poll() is None, "the server outlived its workers"
    assert all(len(pids) == 2 for pids in worker_pids(bot).values()), "each worker was restarted once"
    assert "exited with signal SIGKILL" in bot.output()
    assert run_of(backend.open_store(), local_slack).status is RunStatus.COMPLETED
    assert len(finals(local_slack)) == 1
