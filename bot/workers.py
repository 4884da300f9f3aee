"""``approval-bot serve --workers N``: graph passes in N worker processes, acks in this one.

On one event loop a graph pass holds the loop between its awaits, and an ack that arrives
meanwhile waits for one step of each pass (``bot.ack_first``): steady traffic raised the
p99 ack to 4 times a bare Bolt app's. With workers, the serving process verifies, acks,
records what an ack records (a modal's decision) and writes each ``Work`` (``bot.work``,
ids only) as one line of JSON into a pipe to a worker; the workers run ``perform``, the
graph passes and the sweeper. Workers run at a lower CPU priority (``WORKER_NICENESS``),
so on a busy host the acks get the CPU first: Slack's 3 seconds are a hard limit, a
pass's latency is not.

Nothing handed to a worker is lost with it. The pool keeps every line until the worker
reports it done; a worker reports each piece when it starts it, and when it has loaded
the graphs (ready). A worker that dies is restarted at once as a process that waits out
its back-off itself (``--delay``), so the pipe that takes the work meanwhile is held by a
live process from the first moment: a serving process that dies then still leaves the
work to that worker, and a drain hands it over and waits for it. The dead worker's pieces
that no worker started go to a live worker without a count; the pieces it had started
count one delivery each. Work is ids and may run twice (``bot.work``): a start finds its
run created, a click its decision recorded, and a run the dead worker held is left to the
sweeper once its lease expires. A piece started ``MAX_DELIVERIES`` times by workers that
died with it is given up: logged by kind and run id, and the person is told through its
``response_url`` when it has one. So work that kills every worker it reaches neither kills
them forever nor takes the work queued behind it down with it.
What only the serving process holds is what ``InProcessHandoff`` holds today: lines not
yet written when the serving process itself dies (none, once ``submit`` returns: the
pipe holds them, and a worker whose serving process died finishes them and exits).

The pool is bounded: over ``MAX_PENDING`` pieces of work per worker in hand, ``submit``
raises ``HandoffFailed`` at once and the person is told to try again (a click: "nothing
was recorded"; a modal's resume: the sweeper resumes the run), so a flood can neither
block an ack nor grow the serving process's memory without end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import Final

from bot.handoff import HandoffFailed
from bot.work import Work, kind_of, to_wire
from bot.worker_slots import Item, Slot, exit_named, preference, tell_given_up
from engine import log_context
from engine.crash import ENV as CRASH_ENV

logger = logging.getLogger(__name__)

MAX_PENDING: Final = 500
"""Pieces of work in hand per worker (handed, not reported done) before ``submit`` refuses."""
MAX_DELIVERIES: Final = 3
"""Times one piece of work is started by a worker that then died, before the pool gives it up."""
WORKER_NICENESS: Final = 19
"""Added to a worker's nice value (the lowest priority): under CPU contention the acking process runs
first. It orders the bot's own processes; in a container or a systemd unit (a cgroup of its own) it
takes nothing from other services' share of the host."""
RESTART_DELAYS: Final = (0.0, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds a restarted worker waits before it starts, by how many times in a row it died before it
was ready (a crash loop at start-up). One that died after it was ready (a pass killed it) waits
``RESTART_DELAYS[1]`` at most: the sweeper may be in it, and work waits for it."""
YOUNG_SECONDS: Final = 30.0
"""A ready worker that dies sooner than this after its start waits ``RESTART_DELAYS[1]``, else none."""
LINE_LIMIT: Final = 1024 * 1024
"""Longest line either side reads: a piece of work is ids and a few words typed."""


class WorkerPool:
    """N worker processes fed through pipes; ``submit`` never waits for one.

    ``env``: the workers' environment (default this process's): they read the same
    settings from it as the serving process did (``bot.settings.load_settings``).
    ``module`` is what a worker runs (``python -m``); tests give a stand-in.
    """

    def __init__(
        self,
        *,
        count: int,
        sweep_seconds: float,
        env: Mapping[str, str] | None = None,
        module: str = "bot.worker",
        max_pending: int = MAX_PENDING,
    ) -> None:
        if count < 1:
            raise ValueError("a pool has at least one worker")
        self._slots = [Slot(index=i) for i in range(count)]
        self._sweep_seconds = sweep_seconds
        self._env = dict(os.environ if env is None else env)
        self._module = module
        self._max_pending = max_pending
        self._seq = 0
        self._stopping = False  # no more restarts (killed)
        self._draining = False  # no more work; restarts only to hand over what a worker held
        self._sweeper: Slot | None = None  # the worker told to sweep
        self.restarts = 0

    @property
    def count(self) -> int:
        return len(self._slots)

    @property
    def pending(self) -> int:
        """Pieces of work handed to workers and not yet reported done."""
        return sum(len(slot.in_hand) for slot in self._slots)

    def pids(self) -> list[int | None]:
        return [slot.process.pid if slot.process else None for slot in self._slots]

    @property
    def ready(self) -> int:
        """Workers running with their graphs loaded: 0 means work only waits (``/healthz``)."""
        return sum(slot.ready and slot.process is not None for slot in self._slots)

    @property
    def failing_at_start(self) -> int:
        """The most deaths in a row before being ready, of any worker (a crash loop at start-up)."""
        return max(slot.young_deaths for slot in self._slots)

    async def start(self) -> None:
        for slot in self._slots:
            await self._spawn(slot, env=self._env)

    def submit(self, work: Work) -> None:
        """Hand ``work`` to the worker with least in hand; HandoffFailed when all are full."""
        if self._stopping or self._draining:
            raise HandoffFailed("the bot is shutting down")
        room = [s for s in self._slots if len(s.in_hand) < self._max_pending]
        if not room:
            logger.warning(
                "refused %s work: every worker has %d pieces of work in hand", kind_of(work), self._max_pending
            )
            raise HandoffFailed("the bot has too much work in hand; try again in a minute")
        slot = min(room, key=preference)
        self._seq += 1
        request_id = log_context.current().get("request_id")
        line = json.dumps({"seq": self._seq, "work": to_wire(work), "request_id": request_id}).encode() + b"\n"
        what = f"{kind_of(work)} work for run {getattr(work, 'run_id', '-')}"
        item = Item(seq=self._seq, line=line, work=work, what=what)
        slot.in_hand[item.seq] = item
        self._write(slot, item)

    def _write(self, slot: Slot, item: Item) -> None:
        if slot.pipe is None or slot.pipe.is_closing():
            return  # given when the worker is back (its restart is under way: ``_watch``)
        slot.pipe.write(item.line)

    async def _spawn(self, slot: Slot, *, env: Mapping[str, str], delay: float = 0.0) -> None:
        to_worker, from_pool = os.pipe()
        to_pool, from_worker = os.pipe()
        command = [
            sys.executable,
            "-P",  # not the current directory first on sys.path: the worker puts it last, as the CLI does
            "-m",
            self._module,
            f"--index={slot.index}",
            f"--read-fd={to_worker}",
            f"--write-fd={from_worker}",
            f"--sweep-seconds={self._sweep_seconds}",
            f"--delay={delay:g}",
        ]
        try:
            process = await asyncio.create_subprocess_exec(
                *command, env=dict(env), stdin=asyncio.subprocess.DEVNULL, pass_fds=(to_worker, from_worker)
            )
        finally:
            os.close(to_worker)
            os.close(from_worker)
        loop = asyncio.get_running_loop()
        pipe, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, os.fdopen(from_pool, "wb", buffering=0))
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(to_pool, "rb", buffering=0)
        )
        slot.process, slot.pipe, slot.started_at = process, pipe, time.monotonic() + delay  # type: ignore[assignment]
        slot.ready = False
        logger.info("worker %d started (pid %d)", slot.index, process.pid)
        for item in sorted(slot.in_hand.values(), key=lambda i: i.seq):
            self._write(slot, item)
        if self._draining:
            pipe.close()  # it finishes what it was handed, and exits
        slot.watcher = asyncio.create_task(self._watch(slot, process, reader))

    def _report(self, slot: Slot, line: bytes) -> None:
        """One line from a worker: ``{"ready": true}``, ``{"started": seq}`` or ``{"done": seq}``."""
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            report = json.loads(line)
            if "done" in report:
                slot.in_hand.pop(int(report["done"]), None)
            elif "started" in report:
                item = slot.in_hand.get(int(report["started"]))
                if item is not None:
                    item.started = True
            elif report.get("ready") is True:
                slot.ready, slot.young_deaths = True, 0
                self._elect_sweeper()

    def _elect_sweeper(self) -> None:
        """One worker sweeps: worker 0 when it is ready, else the first ready one; none while
        none is. A round under way in the one told to stop finishes (``sweep_forever``)."""
        ready = [s for s in self._slots if s.ready and s.pipe is not None and not s.pipe.is_closing()]
        chosen = next((s for s in ready if s.index == 0), ready[0] if ready else None)
        if chosen is None or chosen is self._sweeper:
            return
        if self._sweeper is not None and self._sweeper.pipe is not None and not self._sweeper.pipe.is_closing():
            self._sweeper.pipe.write(b'{"sweep": false}\n')
        chosen.pipe.write(b'{"sweep": true}\n')  # type: ignore[union-attr]
        if chosen.index != 0:
            logger.warning("worker %d sweeps while worker 0 is not running", chosen.index)
        self._sweeper = chosen

    async def _watch(self, slot: Slot, process: asyncio.subprocess.Process, reader: asyncio.StreamReader) -> None:
        """Read the worker's reports until it exits; then restart it unless the pool stops."""
        while line := await reader.readline():
            self._report(slot, line)
        code = await process.wait()
        if slot.pipe is not None:
            slot.pipe.close()
        was_ready, lived = slot.ready, time.monotonic() - slot.started_at
        slot.process, slot.pipe, slot.ready = None, None, False
        if self._stopping:
            return
        if self._sweeper is slot:
            self._sweeper = None
            self._elect_sweeper()
        if was_ready:
            delay = RESTART_DELAYS[1] if lived < YOUNG_SECONDS else RESTART_DELAYS[0]
        else:
            slot.young_deaths += 1
            delay = RESTART_DELAYS[min(slot.young_deaths, len(RESTART_DELAYS) - 1)]
        logger.error(
            "worker %d (pid %d) exited with %s after %.0f s, with %d piece(s) of work in hand; restarting in %g s",
            slot.index,
            process.pid,
            exit_named(code),
            max(lived, 0.0),
            len(slot.in_hand),
            delay,
        )
        self._after_death(slot)
        if self._draining:
            if not slot.in_hand:
                return
            delay = 0.0  # the drain's timeout bounds the wait; the work goes to a worker now
        # A crash point (tests only, ``engine.crash``) kills a bot once: the worker comes back without it.
        env = {k: v for k, v in self._env.items() if k != CRASH_ENV}
        while not self._stopping:
            try:
                await self._spawn(slot, env=env, delay=delay)
            except OSError as error:  # out of processes or memory: try again, and say so
                delay = RESTART_DELAYS[-1]
                logger.error("could not restart worker %d (%s); trying again in %g s", slot.index, error, delay)
                await asyncio.sleep(delay)
                continue
            self.restarts += 1
            return

    def _after_death(self, slot: Slot) -> None:
        """Count a delivery for each piece the dead worker had started, and give up on those
        started ``MAX_DELIVERIES`` times; hand the pieces it never started to a live worker."""
        live = [s for s in self._slots if s is not slot and s.process is not None and not self._draining]
        for seq, item in sorted(slot.in_hand.items()):
            if item.started:
                item.started = False
                item.deliveries += 1
                if item.deliveries >= MAX_DELIVERIES:
                    del slot.in_hand[seq]
                    logger.error("gave up on %s: %d workers died with it", item.what, item.deliveries)
                    tell_given_up(item)
                continue
            room = [s for s in live if len(s.in_hand) < self._max_pending]
            if room:
                other = min(room, key=preference)
                other.in_hand[seq] = slot.in_hand.pop(seq)
                self._write(other, item)

    async def drain(self, *, timeout: float) -> None:
        """No more work; each worker finishes what it has (its pipe is closed), then exits.

        Workers still running after ``timeout`` are killed: a pass cut short is taken
        over by a sweeper once its lease expires, as after any crash.
        """
        self._draining = True
        for slot in self._slots:
            if slot.pipe is not None:
                slot.pipe.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        # A worker that died meanwhile with work in hand is restarted, and its watcher replaced.
        while watchers := [s.watcher for s in self._slots if s.watcher is not None and not s.watcher.done()]:
            left = deadline - loop.time()
            if left <= 0:
                logger.warning("%d worker(s) still busy after %g s; killing them", len(watchers), timeout)
                break
            await asyncio.wait(watchers, timeout=left)
        await self.kill()

    async def kill(self) -> None:
        """Stop every worker now (clean-up after a drain, or when start-up failed)."""
        self._stopping = True
        for slot in self._slots:
            if slot.process is not None and slot.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    slot.process.kill()
        for slot in self._slots:
            if slot.watcher is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await slot.watcher
        for slot in self._slots:  # a restart that raced the kill
            if slot.process is not None and slot.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    slot.process.kill()
        for slot in self._slots:
            for item in slot.in_hand.values():
                # A click's decision or a run's state in the store is finished by the sweeper;
                # a start or a reply that no worker began is not: each is named, once.
                state = "started" if item.started else "never started"
                logger.warning("stopped with %s unfinished (%s): only what it recorded is resumed", item.what, state)


class WorkerHandoff:
    """The ``Handoff`` of a serving process with workers: a line into a worker's pipe."""

    budget = 0.0  # a write into a pipe's buffer

    def __init__(self, *, pool: WorkerPool) -> None:
        self.pool = pool

    async def submit(self, work: Work) -> None:
        self.pool.submit(work)

    @property
    def pending(self) -> int:
        return self.pool.pending

    async def drain(self, *, timeout: float) -> None:
        await self.pool.drain(timeout=timeout)
