"""``serve --workers``: a start acked while the worker restarts is done, however the serving
process ends.

A worker that died is restarted at once as a process that waits out its back-off itself,
its pipe already taking work (``bot.workers``): an acked ``/graph run`` is never only in
the serving process's memory. So a SIGTERM in that window (every deploy) drains into the
restarted worker, which starts the run; and a SIGKILL of the serving process alone (out
of memory) leaves the run to that worker, which reads its pipe to the end and exits.
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
