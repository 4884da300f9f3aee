"""``serve --workers``: while worker 0 is down, a running worker sweeps.

One worker sweeps, so that a server sweeps once: worker 0 when it runs. If it cannot
(here its graph modules fail to import in it, a crash loop at start-up), the pool names a
running worker instead, and runs a dead pass left behind are still taken over and
finished: no server is left without a sweeper while it acks.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, all_text, cards, eventually, finished_message
from tests.e2e.test_workers import worker_pids


async def test_while_worker_0_cannot_start_another_worker_sweeps_and_finishes_a_dead_pass(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path
) -> None:
    env = {
        "GRAPH_MODULES": "tests.support.graphs,tests.support.fails_in_workers",
        "FAILS_IN_WORKER": "0",
        "APPROVAL_BOT_TEST_SLOW_SECONDS": "1",
        "LEASE_SECONDS": "5",
        "DELIVERY_GRACE_SECONDS": "1",
    }
    bot = await start_bot(backend=backend, extra_env=env, args=["--workers", "2", "--sweep-seconds", "1"])
    user = user_for(bot)
    # Its tool is declared idempotent: a takeover gives it the approval again, no person asked.
    await user.slash_command(text="run guarded-idempotent swept", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await eventually(Path(f"{markers_file}.approval_bot_test_started").exists, timeout=20, what="the tool to start")
    os.kill(worker_pids(bot)[1][-1], signal.SIGKILL)  # worker 1 holds the pass; worker 0 never started

    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")
    assert "writer result: wrote writer:swept" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:swept"], "the effect once"
    assert "worker 1 sweeps while worker 0 is not running" in bot.output()
