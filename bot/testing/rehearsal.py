"""``Rehearsal``: the real bot, a local Slack and a store of its own, for one test, synchronously.

The bot and the local Slack run on an asyncio loop in a thread of their own, as the demo
runs them (``demo.stack.Stack``): the bot's real aiohttp web app, signed HTTP from Slack's
side, the real engine and store, graphs on Strands with the offline scripted model. The
test's thread only asks that loop for things and waits for the answers, so a test is plain
synchronous code and the bot keeps working (resuming a run, updating a card) between its
lines, as it would in a workspace.

The environment. The bot reads some settings where it uses them, not from its settings
object: ``GRAPH_MODEL`` when a graph is built, boto3 its ``AWS_*`` variables, graph code
whatever it likes. So for the length of the ``with`` block the process environment is the
rehearsal's, made the way the demo makes its own (``demo.session.own_environment``: no
Slack, AWS, DynamoDB or Bedrock setting from outside, ``GRAPH_MODEL=offline``, no AWS
credentials) plus ``GRAPH_MODULES`` and the ``env`` given; on exit it is put back exactly as
it was, whatever happened inside. That is also why only one rehearsal may run at a time in
a process (pytest-xdist's workers are processes: they may each run one).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from bot.testing.driver import Driver, RehearsalError
from bot.testing.runs import RehearsedRun

if TYPE_CHECKING:
    from demo.stack import Stack

T = TypeVar("T")
START_TIMEOUT = 10.0
BOOT_TIMEOUT = 120.0  # importing Strands and the graph modules, the first time in a process
SHUTDOWN_TIMEOUT = 30.0
MARGIN = 15.0  # beyond a wait's own timeout, for the loop to answer at all
# Settings the kit makes itself: a test cannot point the bot at another Slack, nor at a
# model provider (a rehearsal is offline; `env` with AWS keys must not reach Bedrock).
_OURS = frozenset({"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL", "SLACK_APP_TOKEN", "GRAPH_MODEL"})
_ONE_AT_A_TIME = threading.Lock()


class Rehearsal:
    """``with Rehearsal(graph_modules=["graphs.refunds"]) as r:`` the bot, for one test.

    ``graph_modules``: the modules whose ``@graph_def`` graphs the bot offers (as
    ``GRAPH_MODULES``). ``channel``: where runs start. ``env``: more settings and variables
    for the bot and the graphs, e.g. ``DYNAMODB_TABLE`` with the ``AWS_*`` variables of a
    local DynamoDB. ``usergroups``: user groups (``S…`` id → member ids) the policies name.
    Anyone else is any ``U…`` id: the local Slack knows every one as a channel member.
    """

    def __init__(
        self,
        graph_modules: Sequence[str] = (),
        *,
        channel: str = "C0REHEARSAL",
        env: Mapping[str, str] | None = None,
        usergroups: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        if isinstance(graph_modules, str):
            raise TypeError(f"graph_modules is a list of module names, not the string {graph_modules!r}")
        if not channel.startswith(("C", "G")):
            raise ValueError(f"channel must be a channel id (C… or G…), not {channel!r}")
        taken = sorted(_OURS & set(env or {}))
        if taken:
            raise ValueError(f"a rehearsal makes its own Slack and runs offline; leave {', '.join(taken)} out of env")
        self.channel = channel
        self._modules = [m.strip() for m in graph_modules if m.strip()]
        self._env = dict(env or {})
        self._usergroups = {group: list(members) for group, members in (usergroups or {}).items()}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stack: Stack | None = None
        self._driver: Driver | None = None
        self._state: str | None = None
        self._saved_env: dict[str, str] | None = None
        self._held = False

    # -- the test's side -----------------------------------------------------------------------

    def start(self, task: str, *, user: str, timeout: float = START_TIMEOUT) -> RehearsedRun:
        """``/graph run <task>`` typed by ``user`` in the channel; the run, once announced.

        Raises ``Refused`` with the bot's answer when it starts nothing (an unknown graph,
        a user the graph's starters leave out, a start limit).
        """
        run_id = self._call(lambda d: d.start(task, user=user, timeout=timeout), timeout=timeout)
        return RehearsedRun(id=run_id, _loop=self._call)

    def command(self, text: str, *, user: str, timeout: float = START_TIMEOUT) -> str:
        """What the bot answers ``user`` alone to ``/graph <text>`` (``stats``, ``pending``,
        ``runs``, ``status <run>``…), as plain text. A ``run`` is what ``start`` is for."""
        return self._call(lambda d: d.typed(text, user=user, timeout=timeout), timeout=timeout)

    def __enter__(self) -> Self:
        if not _ONE_AT_A_TIME.acquire(blocking=False):
            raise RuntimeError("another Rehearsal is running in this process; use one at a time")
        self._held = True
        try:
            self._open()
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        refused = self._close()
        if refused and exc_type is None:
            first = refused[0]
            raise RehearsalError(
                f"Slack would have refused {len(refused)} of the bot's calls, "
                f"first {first['method']}: {first['error']} {first.get('errors') or ''}".rstrip()
            )

    # -- the loop ------------------------------------------------------------------------------

    def _call(self, work: Callable[[Driver], Awaitable[T]], *, timeout: float) -> T:
        """Run ``work(driver)`` on the loop and wait for its result (or its exception)."""
        driver = self._driver
        if driver is None:
            raise RuntimeError("the rehearsal is not running: use it inside its with block")
        return self._on_loop(work(driver), timeout=timeout + MARGIN)

    def _on_loop(self, work: Awaitable[T], *, timeout: float) -> T:
        loop = self._loop
        if loop is None or not loop.is_running():
            raise RuntimeError("the rehearsal's event loop is not running")

        async def run() -> T:
            return await work

        future = asyncio.run_coroutine_threadsafe(run(), loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RehearsalError(f"the rehearsal's event loop did not answer within {timeout:g} s") from None

    def _open(self) -> None:
        from demo.session import own_environment

        self._state = tempfile.mkdtemp(prefix="rehearsal-")
        self._saved_env = dict(os.environ)
        own_environment(os.environ)
        os.environ.update({"GRAPH_MODULES": ",".join(self._modules), **self._env})
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="rehearsal-loop", daemon=True)
        self._thread.start()
        ready.wait()
        self._driver = self._on_loop(self._boot(self._state), timeout=BOOT_TIMEOUT)

    def _serve(self, ready: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _boot(self, state: str) -> Driver:
        from demo.stack import Stack
        from localslack import LocalSlack

        slack = LocalSlack(channels={self.channel: "rehearsal"}, usergroups=self._usergroups)
        settings: dict[str, Any] = {
            "GRAPH_MODULES": ",".join(self._modules),
            "EXAMPLE_GRAPHS": False,
            "GRAPH_MODEL": "offline",
            **self._env,
        }
        stack = Stack(state=state, slack=slack, settings=settings)
        await stack.__aenter__()  # which stops whatever it started when it fails
        self._stack = stack
        return Driver(stack=stack, channel=self.channel)

    async def _shutdown(self) -> list[dict[str, Any]]:
        """Stop what the bot still had going (a run mid-pass, the sweeper), then its web app
        and the local Slack; what the bot saved stays saved, and nothing is left running."""
        stack, self._stack = self._stack, None
        if stack is None:
            return []
        from demo.session import _cancel_leftovers  # the demo's end, which is the same as ours

        refused = list(stack.slack.rejected)
        try:
            await _cancel_leftovers()
            await stack.aclose()
        finally:
            await _cancel_leftovers()
            store = vars(stack.services).get("store") if stack.services is not None else None
            close = getattr(store, "close", None)
            if callable(close):
                close()
        return refused

    def _close(self) -> list[dict[str, Any]]:
        """Everything ``_open`` did, undone in reverse, each step whatever the others did;
        returns the calls the local Slack refused (real Slack would have refused them too)."""
        self._driver = None
        refused: list[dict[str, Any]] = []
        try:
            try:
                if self._loop is not None and self._loop.is_running():
                    refused = self._on_loop(self._shutdown(), timeout=SHUTDOWN_TIMEOUT)
            finally:
                self._stop_loop()
        finally:
            if self._saved_env is not None:
                _restore(os.environ, self._saved_env)
                self._saved_env = None
            if self._state is not None:
                shutil.rmtree(self._state, ignore_errors=True)
                self._state = None
            if self._held:
                self._held = False
                _ONE_AT_A_TIME.release()
        return refused

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop, self._thread = None, None
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(SHUTDOWN_TIMEOUT)


def _restore(environ: os._Environ[str], saved: Mapping[str, str]) -> None:
    """Make ``environ`` exactly ``saved`` again, touching only what differs."""
    for name in [n for n in environ if n not in saved]:
        del environ[name]
    for name, value in saved.items():
        if environ.get(name) != value:
            environ[name] = value
