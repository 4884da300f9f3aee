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
reports it done; a worker that dies is restarted and given again what it had not
finished. Work is ids and may run twice (``bot.work``): a start finds its run created, a
click its decision recorded, and a run the dead worker held is left to the sweeper once
its lease expires. A line is given at most ``MAX_DELIVERIES`` times, so work that kills
every worker it reaches does not kill them forever; it is logged by kind and run id.
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
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from bot.handoff import HandoffFailed
from bot.work import Work, kind_of, to_wire
from engine import log_context
from engine.crash import ENV as CRASH_ENV

logger = logging.getLogger(__name__)

MAX_PENDING: Final = 500
"""Pieces of work in hand per worker (handed, not reported done) before ``submit`` refuses."""
MAX_DELIVERIES: Final = 3
"""Times one piece of work is given to a worker: the first, and again after a worker died with it."""
WORKER_NICENESS: Final = 19
"""Added to a worker's nice value (the lowest priority): under CPU contention the acking process runs
first. It orders the bot's own processes; in a container or a systemd unit (a cgroup of its own) it
takes nothing from other services' share of the host."""
RESTART_DELAYS: Final = (0.0, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds before restarting a worker, by how many times in a row it died young."""
YOUNG_SECONDS: Final = 30.0
"""A worker that dies sooner than this after its start counts towards a crash loop."""
LINE_LIMIT: Final = 1024 * 1024
"""Longest line either side reads: a piece of work is ids and a few words typed."""


@dataclass(kw_only=True)
class _Item:
    seq: int
    line: bytes
    what: str
    deliveries: int = 0


@dataclass(kw_only=True)
class _Slot:
    """One worker: its process (None while it restarts) and the work it has in hand."""

    index: int
    process: asyncio.subprocess.Process | None = None
    pipe: asyncio.WriteTransport | None = None
    in_hand: dict[int, _Item] = field(default_factory=dict)
    started_at: float = 0.0
    young_deaths: int = 0
    watcher: asyncio.Task[None] | None = None


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
        self._slots = [_Slot(index=i) for i in range(count)]
        self._sweep_seconds = sweep_seconds
        self._env = dict(os.environ if env is None else env)
        self._module = module
        self._max_pending = max_pending
        self._seq = 0
        self._stopping = False
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

    async def start(self) -> None:
        for slot in self._slots:
            await self._spawn(slot, env=self._env)

    def submit(self, work: Work) -> None:
        """Hand ``work`` to the worker with least in hand; HandoffFailed when all are full."""
        if self._stopping:
            raise HandoffFailed("the bot is shutting down")
        room = [s for s in self._slots if len(s.in_hand) < self._max_pending]
        if not room:
            logger.warning(
                "refused %s work: every worker has %d pieces of work in hand", kind_of(work), self._max_pending
            )
            raise HandoffFailed("the bot has too much work in hand; try again in a minute")
        slot = min(room, key=lambda s: (s.process is None, len(s.in_hand)))  # a running worker first
        self._seq += 1
        request_id = log_context.current().get("request_id")
        line = json.dumps({"seq": self._seq, "work": to_wire(work), "request_id": request_id}).encode() + b"\n"
        item = _Item(seq=self._seq, line=line, what=f"{kind_of(work)} work for run {getattr(work, 'run_id', '-')}")
        slot.in_hand[item.seq] = item
        self._write(slot, item)

    def _write(self, slot: _Slot, item: _Item) -> None:
        if slot.pipe is None or slot.pipe.is_closing():
            return  # given when the worker is back
        item.deliveries += 1
        slot.pipe.write(item.line)

    async def _spawn(self, slot: _Slot, *, env: Mapping[str, str]) -> None:
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
        slot.process, slot.pipe, slot.started_at = process, pipe, time.monotonic()  # type: ignore[assignment]
        logger.info("worker %d started (pid %d)", slot.index, process.pid)
        for item in sorted(slot.in_hand.values(), key=lambda i: i.seq):
            self._write(slot, item)
        slot.watcher = asyncio.create_task(self._watch(slot, process, reader))

    async def _watch(self, slot: _Slot, process: asyncio.subprocess.Process, reader: asyncio.StreamReader) -> None:
        """Read the worker's reports until it exits; then restart it unless the pool stops."""
        while line := await reader.readline():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                slot.in_hand.pop(int(json.loads(line)["done"]), None)
        code = await process.wait()
        if slot.pipe is not None:
            slot.pipe.close()
        slot.process, slot.pipe = None, None
        if self._stopping:
            return
        lived = time.monotonic() - slot.started_at
        slot.young_deaths = slot.young_deaths + 1 if lived < YOUNG_SECONDS else 0
        delay = RESTART_DELAYS[min(slot.young_deaths, len(RESTART_DELAYS) - 1)]
        logger.error(
            "worker %d (pid %d) exited with %s after %.0f s, with %d piece(s) of work in hand; restarting in %g s",
            slot.index,
            process.pid,
            _exit_named(code),
            lived,
            len(slot.in_hand),
            delay,
        )
        for seq, item in list(slot.in_hand.items()):
            if item.deliveries >= MAX_DELIVERIES:
                del slot.in_hand[seq]
                logger.error("gave up on %s: %d workers died with it", item.what, item.deliveries)
        # A crash point (tests only, ``engine.crash``) kills a bot once: the worker comes back without it.
        env = {k: v for k, v in self._env.items() if k != CRASH_ENV}
        while True:
            await asyncio.sleep(delay)
            if self._stopping:
                return
            try:
                await self._spawn(slot, env=env)
            except OSError as error:  # out of processes or memory: try again, and say so
                delay = RESTART_DELAYS[-1]
                logger.error("could not restart worker %d (%s); trying again in %g s", slot.index, error, delay)
                continue
            self.restarts += 1
            return

    async def drain(self, *, timeout: float) -> None:
        """No more work; each worker finishes what it has (its pipe is closed), then exits.

        Workers still running after ``timeout`` are killed: a pass cut short is taken
        over by a sweeper once its lease expires, as after any crash.
        """
        self._stopping = True
        for slot in self._slots:
            if slot.pipe is not None:
                slot.pipe.close()
        watchers = [s.watcher for s in self._slots if s.watcher is not None and not s.watcher.done()]
        if watchers:
            _, late = await asyncio.wait(watchers, timeout=timeout)
            if late:
                logger.warning("%d worker(s) still busy after %g s; killing them", len(late), timeout)
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
        unfinished = self.pending
        if unfinished:
            logger.warning(
                "stopped with %d piece(s) of work unfinished; the sweeper finishes what was recorded", unfinished
            )


def _exit_named(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"status {code}"


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
