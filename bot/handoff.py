"""How work leaves the ack: a task in this process, a worker process (``serve --workers``,
``bot.workers``), or (on Lambda) another invocation.

A listener calls ``submit`` before it acks, so that when the handoff fails the person is
told in the ack or right after it, instead of the work vanishing. ``submit`` must be
cheap: on a server it schedules a task; on Lambda it is one asynchronous ``Invoke``
(``bot.aws_lambda.invoke``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from bot.ack_first import DECISION_WAIT, AckFirst
from bot.perform import perform
from bot.services import Services
from bot.work import Decide, Work

logger = logging.getLogger(__name__)


class HandoffFailed(Exception):
    """The work could not be handed on; ``str()`` is safe to show a person.

    ``maybe_started``: no answer came in time, so the work may run after all; a person is
    then told it is unconfirmed rather than that nothing happened.
    """

    def __init__(self, reason: str, *, maybe_started: bool = False) -> None:
        super().__init__(reason)
        self.maybe_started = maybe_started


class Handoff(Protocol):
    budget: float
    """Seconds ``submit`` may take: an ack that does store work first leaves this much room."""

    async def submit(self, work: Work) -> None:
        """Arrange for ``work`` to run after the ack; raises HandoffFailed when it cannot."""
        ...


class InProcessHandoff:
    """Runs work as tasks of this process's event loop (the HTTP server and Socket Mode).

    A process that stops waits for them (``drain``): a task cut short leaves its run to
    the sweeper, but a start or a click that never ran is lost to the person who asked.
    """

    budget = 0.0  # scheduling a task

    def __init__(self, *, services: Services, ack_first: AckFirst | None = None) -> None:
        self._services = services
        self.ack_first = ack_first or AckFirst()
        """Give the same one to the edge (``build_edge``): work starts after the acks in flight."""
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, work: Work) -> None:
        task = asyncio.get_running_loop().create_task(self._perform(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _perform(self, work: Work) -> None:
        if isinstance(work, Decide):
            # An acked click is recorded within DECISION_WAIT: a process that dies while the
            # work waits would otherwise lose a decision nobody else knows of. The resume
            # waits its turn like any work.
            await self.ack_first.quiet(limit=DECISION_WAIT)
            await perform(work, services=self._services, before_resume=self.ack_first.quiet)
            return
        await self.ack_first.quiet()
        await perform(work, services=self._services)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def drain(self, *, timeout: float) -> None:
        if self._tasks:
            _, late = await asyncio.wait(set(self._tasks), timeout=timeout)
            if late:
                logger.warning("shutting down with %d piece(s) of work unfinished", len(late))


async def hand_on(handoff: Handoff, work: Work) -> None:
    """Hand on the resume after a decision recorded in an ack. Should that fail, the decision
    stands and the sweeper resumes the run; the person is not told of a failure they need
    not act on."""
    try:
        await handoff.submit(work)
    except HandoffFailed as failed:
        logger.warning("could not hand on the resume (%s); the sweeper will resume the run", failed)
