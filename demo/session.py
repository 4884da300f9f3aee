"""``approval-bot demo``: the real bot against a local stand-in for Slack, in a terminal.

Nothing is mocked between the keyboard and the graph: typed commands become signed
HTTP requests to the bot's real aiohttp server, the bot answers through the real Web
API client into ``LocalSlack``, runs are stored in the embedded SQLite store, and the
graphs run on Strands with the offline scripted model. Cards are printed as they
arrive; answer them by number.

The session survives its person: a line that goes wrong is reported in one line and the
prompt comes back. It ends with ``quit``, Ctrl-D (exit status 0) or Ctrl-C (130, the
shell's status for an interrupted program), always with a one-line summary, and the
temporary folder holding the run store is removed however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from demo.commands import HELP, DemoSession
from demo.console import Console, ConsoleLogHandler

T = TypeVar("T")
INTERRUPTED = 130  # exit status after Ctrl-C, as a shell reports a program ended by SIGINT
SETTLE_SECONDS = 0.3  # after a typed line, what the bot says within this is shown before the prompt
SETTLE_LIMIT = 2.0

SCRIPT = [
    "/graph list",
    "/graph run deploy billing 1.2.3",
    "approve 1",
    "/graph run release-check 2.0.0",
    "reply 2 ship it after the smoke test",
    "as bob",
    "approve 3",
    "/graph run cleanup remove the old staging databases",
    "reject 4 not before the audit",
]


async def run_demo(*, scripted: bool) -> int:
    """Start the local Slack and the bot, run the prompt (or the script), clean up."""
    console = Console(interactive=not scripted)
    stop = _stop_on_signals()
    os.environ["GRAPH_MODEL"] = "offline"  # the demo never calls a model provider
    state = tempfile.mkdtemp(prefix="approval-bot-demo-")
    handlers = _route_logs([ConsoleLogHandler(console)])
    try:
        # The bot (and Strands with it) loads here, after the signal handlers: a Ctrl-C
        # while it loads ends the demo cleanly once it has loaded.
        from demo.stack import Stack

        async with Stack(state=state) as stack:
            session = DemoSession(slack=stack.slack, user=stack.user, console=console, command=stack.command)
            try:
                if stop.done():  # Ctrl-C while the bot loaded
                    return _ended(session, stop)
                console.say("Offline demo: the real bot and a local Slack, nothing leaves this machine.")
                if scripted:
                    status = await _first(_scripted(session), stop)
                    return _ended(session, stop) if status is None else status
                console.say(HELP)
                return await _interactive(session, stop)
            finally:
                # The summary was the last word: a run cut short by the end logs nothing more.
                _route_logs([logging.NullHandler()])
    finally:
        console.restore()
        await _cancel_leftovers()
        _route_logs(handlers)
        shutil.rmtree(state, ignore_errors=True)


def _stop_on_signals() -> asyncio.Future[int]:
    """A future set by Ctrl-C (SIGINT), SIGTERM or a closed terminal (SIGHUP)."""
    loop = asyncio.get_running_loop()
    stop: asyncio.Future[int] = loop.create_future()

    def stopped(signum: int) -> None:
        if not stop.done():
            stop.set_result(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # no signals here (Windows)
            loop.add_signal_handler(signum, stopped, signum)
    return stop


async def _first(work: Awaitable[T], stop: asyncio.Future[int]) -> T | None:
    """``work``'s result, or None (``work`` cancelled) if a signal came first."""
    task: asyncio.Future[T] = asyncio.ensure_future(work)
    either: list[asyncio.Future[Any]] = [task, stop]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    return None


async def _interactive(session: DemoSession, stop: asyncio.Future[int]) -> int:
    console = session.console
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    console.start_reader(asyncio.get_running_loop(), lines.put_nowait)
    while not stop.done():
        console.ask(session.prompt)
        line = await _first(lines.get(), stop)
        if line is None or not await _first(_handle(session, line), stop):
            break  # Ctrl-D, quit or a signal
    return _ended(session, stop)


async def _handle(session: DemoSession, line: str) -> bool:
    """One line, then a moment for what the bot says straight away (it lands above the prompt).

    Whatever goes wrong is reported in one line and the prompt comes back: a mistake
    must never cost the person the runs they have going.
    """
    try:
        if not await session.handle(line):
            return False
    except Exception as error:
        session.console.note(f"that went wrong: {type(error).__name__}: {error}".splitlines()[0])
    await _quiet(session, seconds=SETTLE_SECONDS, limit=SETTLE_LIMIT)
    return True


def _ended(session: DemoSession, stop: asyncio.Future[int]) -> int:
    session.console.end_line()
    session.console.say(f"demo ended: {session.summary()}")
    return INTERRUPTED if stop.done() else 0


async def _scripted(session: DemoSession) -> int:
    """A walk-through for non-interactive use: every step waits for the bot's answer."""
    for line in SCRIPT:
        session.console.say(f"\n{session.prompt}{line}")
        try:
            await _step(session, line)
        except TimeoutError as error:
            print(f"demo: {error}", file=sys.stderr)
            return 1
    cards = len(session.cards)
    session.console.say(f"\nDemo finished: {len(session.ended)} runs finished, {cards} cards answered.")
    return 0 if len(session.ended) == 3 else 1


async def _step(session: DemoSession, line: str) -> None:
    cards, ended, updated = len(session.cards), len(session.ended), session.updated
    await session.handle(line)
    if line.startswith("/graph run"):
        await session.slack.wait_for(
            lambda: len(session.cards) > cards or len(session.ended) > ended, timeout=60, what="a card or a result"
        )
    elif line.split()[0] in ("approve", "reject", "reply"):
        await session.slack.wait_for(lambda: session.updated > updated, timeout=60, what="a decision")
    await _quiet(session, seconds=0.8, limit=30)


async def _quiet(session: DemoSession, *, seconds: float, limit: float) -> None:
    """Wait until the bot has said nothing for ``seconds`` (it may still be resuming a run)."""
    deadline = time.monotonic() + limit
    while time.monotonic() - session.last_change < seconds and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def _route_logs(handlers: list[logging.Handler]) -> list[logging.Handler]:
    """Give the root logger these handlers; returns the ones it had."""
    root = logging.getLogger()
    old = list(root.handlers)
    for handler in old:
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    return old


async def _cancel_leftovers() -> None:
    """End the bot's background work (a run mid-step) while logging is still quiet."""
    current = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not current]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
