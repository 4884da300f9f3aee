"""Hostile review of ``serve --workers``: an acked start lives only in the serving process's
memory while its worker restarts.

docs/limits.md: "With ``--workers``, the start is in a worker's pipe before the ack leaves
[...] a worker whose serving process died finishes what its pipe holds; only a host that
dies whole in that moment loses it." But ``WorkerPool.submit`` keeps a piece for a worker
that is restarting (no pipe) in a dict and writes it only when the worker is back (1 s after
a young worker dies, up to 30 s in a crash loop). With ``--workers 1`` (docs/running.md's
advice on two cores) every request in that window goes there. If the serving process alone
dies then (SIGKILL, out of memory), the acked ``/graph run`` is gone: no pipe holds it, no
store row records it, no sweeper can find it, the person is never told. A SIGTERM (every
deploy) in that window loses it too: the drain stops the restart and logs "the sweeper
finishes what was recorded", though nothing was; without workers the drain waits for it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, eventually
from tests.e2e.test_workers import worker_pids


@pytest.mark.parametrize("end", ["sigkill", "sigterm"])
async def test_a_start_acked_while_the_worker_restarts_survives_the_serving_process_ending(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any, markers_file: Path, end: str
) -> None:
    bot = await start_bot(backend=backend, args=["--workers", "1"])
    user = user_for(bot)
    await eventually(lambda: worker_pids(bot).get(0), timeout=20, what="the worker")
    os.kill(worker_pids(bot)[0][0], signal.SIGKILL)  # e.g. the OOM killer, during a pass
    await eventually(lambda: "restarting in 1 s" in bot.output(), timeout=10, what="the pool to notice")

    ack = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    assert ack.status == 200, ack  # acked: the person was told the run is starting
    if end == "sigkill":
        bot.kill()  # the serving process dies (not the host) before the worker is back
    else:
        await bot.stop()  # a deploy's SIGTERM: a drain, which promises to finish what was handed off

    # The promise: nothing acked is lost; the run is created and announced by someone.
    posted = lambda: [m for m in local_slack.messages(CHANNEL) if "hello" in str(m)]  # noqa: E731
    await local_slack.wait_for(posted, timeout=10, what="the run acked before the serving process died")
