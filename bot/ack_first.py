"""Acks before work: handed-off work waits while requests are being acked.

A server acks and works on one event loop. Slack sends requests in bursts (a channel
where a release is announced, twenty people clicking one card), and work handed off by
the first acks of a burst would otherwise start at once and hold the loop between its
awaits while the rest of the burst waits to be acked. Measured with 50 concurrent
clients (``bench/ack_load.py``), that work raised the p99 ack from 1.0 to 1.8 times a
bare Bolt app's. Slack's 3 seconds are a hard limit, the work's latency is not: so work
starts once no request is being acked, or after ``longest_wait`` seconds if requests keep
coming, so that steady traffic delays it, never starves it.

It orders starts only. A pass already running keeps its turns of the loop, so an ack that
arrives while passes run waits for one step of each: traffic that keeps the loop busy with
graph work (``bench/ack_load.py``, steady mode) slows acks, though far inside Slack's 3 s.
Work that must not share the acks' CPU runs elsewhere: on Lambda each piece of work is an
invocation of its own, and ``approval-bot serve --workers N`` (``bot.workers``) hands it to
worker processes, where it starts at once and nothing here waits for it. It does not
bound how much runs at once: a pass spends most of its time waiting on Slack (a paced
status message, a 429's ``Retry-After``), and four slots held through those waits starved
every other run (a burst of 100 took 100 s to post its cards, against 1.4 s without).

What waits here must be safe to lose with the process. A click's decision waits at most
``DECISION_WAIT`` (its own ack leaves first), is recorded, and only then does its resume
wait its turn: the sweeper finds a run with a decision to resume. A start waits whole: a
process killed in that window (at most ``longest_wait`` after the ack) never creates the
run, and the person who typed the command sees no announcement and types it again, as
after a crash just after the ack.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Final

LONGEST_WAIT: Final = 0.25
"""Seconds work may wait for a quiet moment: well above the ~30 ms a burst of 50 takes to ack."""
DECISION_WAIT: Final = 0.05
"""Seconds a click's decision may wait before it is recorded: long enough for its own ack to
leave first (a few ms), short enough that an acked decision is almost never only in memory."""


class AckFirst:
    """Counts requests being acked; ``quiet()`` returns when there are none (or time is up).

    One per event loop: the entry points (``bot.edge``) count, the in-process handoff and
    the sweeper wait. Everything runs on the loop's thread, so a plain counter suffices.
    """

    def __init__(self, *, longest_wait: float = LONGEST_WAIT) -> None:
        self.longest_wait = longest_wait
        self._acking = 0
        self._idle: asyncio.Event | None = None

    @property
    def acking(self) -> int:
        return self._acking

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """Around the handling of one request, from its bytes to its ack."""
        self._acking += 1
        if self._idle is not None:
            self._idle.clear()
        try:
            yield
        finally:
            self._acking -= 1
            if self._acking == 0 and self._idle is not None:
                self._idle.set()

    async def quiet(self, *, limit: float | None = None) -> None:
        """Return once no request is being acked, or after ``limit`` (else ``longest_wait``) seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.longest_wait if limit is None else limit)
        while True:
            # One more turn of the loop first: requests whose bytes arrived in the same
            # turn as the ack that handed this work off enter the edge on this turn.
            await asyncio.sleep(0)
            if self._acking == 0:
                return
            if self._idle is None:
                self._idle = asyncio.Event()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), remaining)
