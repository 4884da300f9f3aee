"""``serve --workers``: a run whose pass kills its worker ends, failed closed, as in one process.

The pool's bound (``MAX_DELIVERIES``) is on pieces of work in pipes; a run is also found
again by worker 0's sweeper each time the dead pass's lease expires. What ends that is the
engine's takeover cap (``engine.takeover.MAX_TAKEOVERS``, counted in the store): the pass
the click started dies, then ``MAX_TAKEOVERS`` takeovers die, and the next takeover fails
the run closed (its requester told, nothing run again) instead of resuming it. A worker
that dies in a pass (after it was ready) is restarted at once, so sweeping stops only for
a moment, and the run ends within a few leases, not after a growing back-off.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.records import RunStatus
from engine.takeover import MAX_TAKEOVERS
from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, all_text, cards, eventually, finished_message, run_of

DEATHS = "worker 0 (pid"


async def test_a_run_that_kills_its_worker_fails_closed_after_the_takeover_cap(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    env = {"GRAPH_MODULES": "tests.support.graphs,tests.support.kills_its_worker", "LEASE_SECONDS": "5"}
    bot = await start_bot(backend=backend, extra_env=env, args=["--workers", "1", "--sweep-seconds", "1"])
    user = user_for(bot)
    await user.slash_command(text="run guarded-idempotent poison", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)

    # The click's pass and each takeover up to the cap die with their worker; then the run fails.
    most = 1 + MAX_TAKEOVERS

    def ended() -> dict[str, Any] | None:
        deaths = bot.output().count(DEATHS)
        assert deaths <= most, f"worker 0 died {deaths} times on one run:\n{bot.output()[-2500:]}"
        return finished_message(local_slack)

    done = await eventually(ended, timeout=40, what="the run to fail closed")
    assert f"stopped after {MAX_TAKEOVERS + 1} attempts to finish a step" in all_text(done), all_text(done)
    store = backend.open_store()
    await eventually(lambda: run_of(store, local_slack).status is RunStatus.FAILED, timeout=10, what="failed")
    await asyncio.sleep(1.5)  # another sweep round: a failed run is not resumed, no worker dies
    deaths = [line for line in bot.output().splitlines() if DEATHS in line]
    assert len(deaths) <= most, bot.output()[-2500:]
    # Each death was in a pass, after the worker was ready: restarted at once, no growing back-off.
    assert all(line.endswith("restarting in 1 s") for line in deaths), deaths
