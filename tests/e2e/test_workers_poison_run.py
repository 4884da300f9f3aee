"""Hostile review of ``serve --workers``: a run that kills its worker kills worker 0 forever.

bot/workers.py: "A line is given at most ``MAX_DELIVERIES`` times, so work that kills every
worker it reaches does not kill them forever." That bound is on lines in pipes. Worker 0's
sweeper finds the same run again each time the dead pass's lease expires and resumes it in
worker 0, which dies again: no bound, a crash loop with back-off up to 30 s, for as long as
the run exists. Meanwhile no run anywhere is swept (worker 0 is the only sweeper), each
piece of work handed to worker 0 is redelivered behind the poison and, after three deaths,
dropped (tests/bot/test_workers_poison.py), and ``/healthz`` says 200.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.workers import MAX_DELIVERIES
from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, cards

DEATHS = "worker 0 (pid"


async def test_a_run_that_kills_its_worker_is_not_retried_by_the_sweeper_without_end(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    env = {"GRAPH_MODULES": "tests.support.graphs,tests.support.kills_its_worker", "LEASE_SECONDS": "5"}
    bot = await start_bot(backend=backend, extra_env=env, args=["--workers", "1", "--sweep-seconds", "1"])
    user = user_for(bot)
    await user.slash_command(text="run guarded-idempotent poison", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)

    # Three leases' worth of time: the click's delivery and the sweeper's takeovers.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 24
    while loop.time() < deadline:
        deaths = bot.output().count(DEATHS)
        assert deaths <= MAX_DELIVERIES, f"worker 0 died {deaths} times on one run:\n{bot.output()[-2500:]}"
        await asyncio.sleep(0.2)
