"""``approval-bot demo``: the real bot against a local stand-in for Slack, in a terminal.

Nothing is mocked between the keyboard and the graph: typed commands become signed
HTTP requests to the bot's real aiohttp server, the bot answers through the real Web
API client into ``LocalSlack``, runs are stored in the embedded SQLite store, and the
graphs run on Strands with the offline scripted model. Cards are printed as they
arrive; answer them by number, in the channel or from your App Home tab (``home``).

The session survives its person: a line that goes wrong is reported in one line and the
prompt comes back. It ends with ``quit``, Ctrl-D or a closed terminal window (SIGHUP:
exit status 0, a hang-up is an ordinary way for a terminal session to end) or Ctrl-C and
SIGTERM (130, the shell's status for an interrupted program), always with a one-line
summary, and the temporary folder holding the run store is removed however it ends.

The demo owns its environment: :func:`own_environment` removes every variable that could
send it elsewhere (a DynamoDB table, an AWS endpoint, a Slack URL) or change how it
behaves, before the bot's settings are read and before the engine is imported; that is
why this module imports the bot (through ``demo.commands``) only inside :func:`run_demo`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

from demo.console import Console, ConsoleLogHandler

if TYPE_CHECKING:
    from demo.commands import DemoSession

T = TypeVar("T")
INTERRUPTED = 130  # exit status after Ctrl-C, as a shell reports a program ended by SIGINT
SETTLE_SECONDS = 0.3  # after a typed line, what the bot says within this is shown before the prompt
SETTLE_LIMIT = 2.0
# A walk-through step is over when the bot has said nothing for this long: longer than its
# pace for editing a run's status message (bot.progress.UPDATE_INTERVAL, one second), which
# a run still going keeps to, so that a run's output is never cut off by the next step.
STEP_QUIET = 1.5

# What the demo must not take from the environment it was started in: where runs are stored
# (DYNAMODB_*, SNAPSHOT_*, SQLITE_PATH), where Slack and AWS are (SLACK_*, AWS_*), how the
# engine and the model behave (LEASE_SECONDS, DELIVERY_GRACE_SECONDS, BEDROCK_*). What it
# reads, as documented: GRAPH_MODULES and LOG_LEVEL.
_NOT_OURS = re.compile(
    r"^(AWS_|SLACK_|DYNAMODB_|SNAPSHOT_|BEDROCK_)|^(LEASE_SECONDS|SQLITE_PATH|PORT|DELIVERY_GRACE_SECONDS|EXAMPLE_GRAPHS)$"
)
# A user's graph with a plain Agent() finds no AWS credentials (no shared files, no instance
# or container metadata) and fails at once, instead of reaching Bedrock from a demo that says
# nothing leaves the machine.
_OFFLINE = {
    "GRAPH_MODEL": "offline",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_CONFIG_FILE": os.devnull,
}

# The walk-through: you start runs and your teammates decide them (a run's starter may
# reject its asks but not approve them), one of them from his App Home tab, then the
# payout graph's rules by amount: a small payout approved by its rule with no card, and
# a large one whose card shows what it will pay and needs one approval from finance and
# one from legal (two from finance never do). Each run's status message shows its nodes.
SCRIPT = [
    "/graph list",
    "/graph run deploy billing 1.2.3",
    "as alice",
    "approve 1",
    "as you",
    "/graph run release-check 2.0.0",
    "as alice",
    "reply 2 ship it after the smoke test",
    "as bob",
    "home",  # the other sign-off waits there, under its card's number
    "home approve 3",
    "as you",
    "/graph run cleanup remove the old staging databases",
    "reject 4 not before the audit",
    "/graph run payout 20 EUR to acme",  # the rule "small" approves it: one line, no card
    "/graph run payout 1200 EUR to acme",  # card 5: what it will pay; finance and legal
    "approve 5",  # refused: you started it
    "as alice",
    "approve 5",  # counts for finance; still needed: one from legal
    "as bob",
    "approve 5",  # refused: finance has approved, legal has not
    "as dana",
    "approve 5",  # legal: the payout is sent
    "/graph audit 5",  # run 5's trail: who did what, for which team
]
RUNS = sum(1 for line in SCRIPT if line.startswith("/graph run "))


def own_environment(environ: MutableMapping[str, str] = os.environ) -> None:
    """Take the demo's settings away from the environment it was started in (see ``_NOT_OURS``)."""
    for name in [name for name in environ if _NOT_OURS.match(name)]:
        del environ[name]
    environ.update(_OFFLINE)


async def run_demo(*, scripted: bool) -> int:
    """Start the local Slack and the bot, run the prompt (or the script), clean up."""
    own_environment()  # first: nothing of the bot or the engine is imported yet
    console = Console(interactive=not scripted)
    stop = _stop_on_signals()
    state = tempfile.mkdtemp(prefix="approval-bot-demo-")
    handlers = _route_logs([ConsoleLogHandler(console)])
    try:
        # The bot (and Strands with it) loads here, after the signal handlers: a Ctrl-C
        # while it loads ends the demo cleanly once it has loaded.
        from demo.commands import HELP, DemoSession
        from demo.stack import Stack

        async with Stack(state=state) as stack:
            session = DemoSession(slack=stack.slack, user=stack.user, console=console, command=stack.command)
            console.rename = session.numbers.text  # a log line names run 2 as the screen does
            try:
                if stop.done():  # Ctrl-C while the bot loaded
                    return _ended(session, stop)
                console.note("Offline demo: the real bot and a local Slack, nothing leaves this machine.", indent="")
                if scripted:
                    status = await _first(_scripted(session), stop)
                    return _ended(session, stop) if status is None else status
                console.note(HELP, indent="")
                return await _interactive(session, stop)
            finally:
                # The summary was the last word: a run cut short by the end logs nothing more.
                _route_logs([logging.NullHandler()])
    finally:
        try:
            console.restore()
            await _cancel_leftovers()
            _route_logs(handlers)
        finally:  # whatever went wrong above (a terminal already gone), the folder goes
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
    session.console.note(f"demo ended: {session.summary()}", indent="")
    return INTERRUPTED if stop.done() and stop.result() != signal.SIGHUP else 0


async def _scripted(session: DemoSession) -> int:
    """A walk-through for non-interactive use: every step waits for the bot's answer."""
    for line in SCRIPT:
        session.console.say(f"\n{session.prompt}{line}")
        try:
            await _step(session, line)
        except TimeoutError as error:
            print(f"demo: {error}", file=sys.stderr)
            return 1
    ended, cards = session.ended_summary(), len(session.cards)
    session.console.note(f"\nDemo finished: {ended}, {cards} cards answered.", indent="")
    return 0 if session.finished() == RUNS else 1


async def _step(session: DemoSession, line: str) -> None:
    from demo.commands import VERBS  # loaded with the bot by now (see the module's docstring)

    cards, updated, notices, homes = len(session.cards), session.updated, session.notices, session.homes.shown
    sent, clicks = session.sent, session.clicks + session.homes.clicks
    known = set(session.started)
    await session.handle(line)
    verb = line.split()[0]

    def not_clicked() -> bool:
        return session.clicks + session.homes.clicks == clicks

    if line.startswith("/graph run"):
        # A card, or this run's end: another run ending meanwhile is not what this step waits for;
        # or the bot's answer to a start that did not happen (no such graph, no task).
        await session.slack.wait_for(
            lambda: (
                len(session.cards) > cards
                or bool((session.started - known) & session.ended)
                or session.notices > notices
            ),
            timeout=60,
            what="a card or a result",
        )
    elif verb in VERBS:
        # The card changes, or (a refused click, a vote short of the quorum) its clicker is told;
        # nothing, when the demo answered it itself (no such card or button: nothing clicked).
        await session.slack.wait_for(
            lambda: session.updated > updated or session.notices > notices or not_clicked(),
            timeout=60,
            what="a decision",
        )
    elif verb == "home" and line != "home":  # ("home" alone waits for the tab itself)
        # The bot publishes the Home tab again, with the outcome at its top or the ask gone.
        await session.slack.wait_for(
            lambda: session.homes.shown > homes or session.notices > notices or not_clicked(),
            timeout=60,
            what="the Home tab",
        )
    elif verb == "as":
        return  # the demo's own business: the bot has nothing to say
    elif line.startswith("/graph"):
        # Every other subcommand answers the person who typed it: in the ack (help, a usage
        # error) or through the response_url once the work handed off after the ack has run.
        # (Nothing to wait for when the demo answered it itself: a run number it never showed.)
        await session.slack.wait_for(
            lambda: session.notices > notices or session.sent == sent, timeout=60, what="the answer"
        )
    await _quiet(session, seconds=STEP_QUIET, limit=30)


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
