"""One worker process of ``approval-bot serve --workers N`` (``bot.workers`` starts them).

It builds its own services (store, Slack client, engine) from the same settings as the
serving process, reads pieces of work (``bot.work``, one JSON line each) from its pipe,
runs each with ``perform`` as a task, and reports when it is ready (graphs loaded), when
it starts each piece and when it is done (``bot.workers`` counts a delivery only for the
pieces a worker started). A restarted worker waits out its back-off itself (``--delay``),
its pipe already taking work. One worker sweeps, the one the pool names (worker 0, or
while it is down a running one), so that a server sweeps once, as without workers, and
no sweep's pass runs in the acking process. The alternative, the
serving process querying the sweep index and handing each run out, would put that query
and the purge of old runs on the loop that acks, and split ``RunEngine.sweep`` in two. The
price: a sweep's runs resume one after the other in the sweeping worker, as they do without workers,
rather than spread over the workers.

It ignores SIGINT and SIGTERM: the serving process drives the shutdown (a terminal's
Ctrl-C, or systemd's SIGTERM to every process of the unit, reach the workers too). When
its pipe closes (the pool drains, or the serving process died), it finishes the work it
has, up to ``DRAIN_SECONDS``, flushes its metrics and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence

from bot import metrics
from bot.cli import _cwd_on_path
from bot.logs import format_named, set_level, use_format
from bot.perform import perform
from bot.server import DRAIN_SECONDS
from bot.services import Services, build_services
from bot.settings import load_settings
from bot.sweeper import sweep_forever
from bot.work import from_wire
from bot.workers import LINE_LIMIT, WORKER_NICENESS
from engine import log_context

logger = logging.getLogger(__name__)


class _WorkerField(logging.Filter):
    """Names the worker on each of its lines (a ``worker`` key in JSON lines)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def filter(self, record: logging.LogRecord) -> bool:
        record.worker = self.index
        return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="approval-bot worker")
    parser.add_argument("--index", type=int, required=True)
    parser.add_argument("--read-fd", type=int, required=True)
    parser.add_argument("--write-fd", type=int, required=True)
    parser.add_argument("--sweep-seconds", type=float, required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    for fd in (args.read_fd, args.write_fd):
        os.set_inheritable(fd, False)  # not into a subprocess a graph's tool starts: the pipe's EOF is ours
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(format=f"%(asctime)s %(levelname)s %(name)s [worker {args.index}]: %(message)s")
    set_level(os.environ.get("LOG_LEVEL"))
    use_format(format_named(os.environ.get("LOG_FORMAT"), on_lambda=False))
    for handler in logging.getLogger().handlers:
        handler.addFilter(_WorkerField(args.index))
    # EMF lines from several processes share one stdout: one write per line keeps them whole.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    time.sleep(max(args.delay, 0.0))  # the restart's back-off, with the pipe held: work waits in it
    _cwd_on_path()
    settings = load_settings()
    services = build_services(settings)
    asyncio.run(
        _work(services, index=args.index, read_fd=args.read_fd, write_fd=args.write_fd, every=args.sweep_seconds)
    )
    return 0


async def _work(services: Services, *, index: int, read_fd: int, write_fd: int, every: float) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0))
    reports, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, os.fdopen(write_fd, "wb", buffering=0))
    await asyncio.to_thread(services.graphs.load)
    reports.write(b'{"ready": true}\n')
    sweeping = [False]  # the pool says which worker sweeps: worker 0, or a running one while it is down
    sweeper = asyncio.create_task(sweep_forever(services, every=every, enabled=lambda: sweeping[0]))
    tasks: set[asyncio.Task[None]] = set()

    async def do(seq: int, line: bytes) -> None:
        try:
            data = json.loads(line)
            request_id = data.get("request_id")
            work = from_wire(data.get("work"))
        except ValueError as error:  # not from our pool: nothing to do, and nobody to tell
            logger.error("refused a line that is not a piece of work: %s", error)
        else:
            with log_context.about(request_id=request_id if isinstance(request_id, str) else None):
                await perform(work, services=services)
        finally:
            if not reports.is_closing():
                reports.write(json.dumps({"done": seq}).encode() + b"\n")

    async with metrics.flushing() if metrics.start(on=services.settings.metrics) else contextlib.nullcontext():
        while line := await reader.readline():
            try:
                data = json.loads(line)
                if isinstance(data, dict) and "sweep" in data:
                    sweeping[0] = data["sweep"] is True
                    logger.info("sweeping: %s", "on" if sweeping[0] else "off")
                    continue
                seq = int(data["seq"])
            except (ValueError, KeyError, TypeError):
                logger.error("refused a line without a sequence number")
                continue
            reports.write(json.dumps({"started": seq}).encode() + b"\n")
            task = asyncio.create_task(do(seq, line))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        await _drain(services, tasks)
    reports.close()


async def _drain(services: Services, tasks: set[asyncio.Task[None]]) -> None:
    """Finish the work in hand: a pass cut short is redone by a sweeper after its lease."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DRAIN_SECONDS
    if tasks:
        _, late = await asyncio.wait(set(tasks), timeout=DRAIN_SECONDS)
        if late:
            logger.warning("shutting down with %d piece(s) of work unfinished", len(late))
    while services.engine.busy and loop.time() < deadline:
        await asyncio.sleep(0.1)


if __name__ == "__main__":
    raise SystemExit(main())
