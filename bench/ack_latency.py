"""How long Slack waits for our ack, against a bare Bolt app that only acks.

Both apps are served in this process over real HTTP on 127.0.0.1 and receive the same
signed bodies, alternately (A/B, then B/A), so machine noise hits both alike:

* ours: ``bot.server.build_web_app`` (the edge and ``bot.app.build_app``), with the SQLite store
  and the local fake Slack (``localslack``) as its Web API, the tiny ``bench-ask``
  graph, and its real post-ack work (start a run, decide and resume);
* bare: a Bolt ``AsyncApp`` with the same signing secret, a ``/graph`` command listener
  and an ``ask:*`` action listener that only ack, served by Bolt's own aiohttp adapter
  (``AsyncApp.web_app``). It authorizes like ours (a fixed token, no ``auth.test``) so the
  ratio is about what we do on the ack path, not about Bolt's authorization options.

The servers run on an event loop in their own thread and the client on another, so the
client's clock is not stalled by the server loop's graph work; in production the client
is Slack, elsewhere. After every request the bench waits until the server loop has no
background work left (the work handed off after the ack: starting the run, resuming it), so one
sample's graph work never lands in the next sample.

Bolt's async listener runner polls for the ack every 10 ms, so both sides have a floor of
about 10 ms as served by ``approval-bot serve``; a ratio near 1.0 there means our ack path
fits inside that floor. The ``inline`` mode (``process_before_response=True``, as on
Lambda) has no poll, and shows the ack path's own cost.
"""

from __future__ import annotations

import asyncio
import gc
import re
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from bench.graphs import SMALL
from bench.stats import Comparison, compare
from bot.server import build_web_app
from bot.services import Services, build_services
from bot.settings import Settings
from localslack import LOCAL_SIGNING_SECRET, BotResponse, HttpTransport, LocalSlack, LocalSlackUser

T = TypeVar("T")

CHANNEL = "C0BENCH"
REQUESTER = "U0ALICE"
APPROVER = "U0BOB"
SLACK_ACK_DEADLINE = 3.0  # seconds: Slack's contract, the one absolute bound that matters
_SETTLE_TIMEOUT = 30.0
BASELINE = "bare Bolt AsyncApp that only acks, same process, interleaved"


@dataclass(frozen=True, kw_only=True)
class AckReport:
    comparisons: list[Comparison]
    worst_ours: float
    """The slowest ack of ours across every kind, in seconds (Slack gives up at 3 s)."""


class _LoopThread:
    """An event loop running in a thread of its own: the servers' side of the wire."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="bench-servers", daemon=True)
        self._thread.start()

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


def _is_connection(task: asyncio.Task[Any]) -> bool:
    # aiohttp keeps one task per open keep-alive connection; it is idle, not work.
    return getattr(task.get_coro(), "__qualname__", "") == "RequestHandler.start"


async def _settle(*, baseline: set[asyncio.Task[Any]]) -> None:
    """Wait until every task started since ``baseline`` (handed-off work, mostly) is done."""
    me = asyncio.current_task()
    deadline = time.monotonic() + _SETTLE_TIMEOUT
    while True:
        busy = [t for t in asyncio.all_tasks() if t is not me and t not in baseline and not _is_connection(t)]
        if not busy:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"background work did not settle within {_SETTLE_TIMEOUT}s: {busy}")
        await asyncio.sleep(0.002)


async def _tasks_now() -> set[asyncio.Task[Any]]:
    return set(asyncio.all_tasks())


def bare_app(*, token: str, api_url: str, inline: bool = False) -> AsyncApp:
    """The baseline: Bolt with listeners that ack and do nothing else."""

    async def authorize(enterprise_id: str | None, team_id: str | None, **_: Any) -> AuthorizeResult:
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token)

    app = AsyncApp(
        signing_secret=LOCAL_SIGNING_SECRET,
        client=AsyncWebClient(base_url=api_url),
        authorize=authorize,
        process_before_response=inline,
        raise_error_for_unhandled_request=False,
    )

    async def just_ack(ack: AsyncAck) -> None:
        await ack()

    app.command("/graph")(just_ack)
    app.action(re.compile(r"^ask:"))(just_ack)
    return app


@dataclass(kw_only=True)
class _Servers:
    slack: LocalSlack | None
    """None when the local Slack runs in a process of its own (``bench/_slack_apart.py``)."""
    services: Services
    ours_url: str = ""
    bare_url: str = ""
    runners: list[web.AppRunner] = field(default_factory=list)

    async def start(self, app: web.Application) -> str:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()  # runs our cleanup_ctx: graph modules are imported here, not on a request
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self.runners.append(runner)
        host, port = runner.addresses[0][:2]
        return f"http://{host}:{port}/slack/events"

    async def stop(self) -> None:
        for runner in reversed(self.runners):
            await runner.cleanup()
        if self.slack is not None:
            await self.slack.stop()
        close = getattr(self.services.store, "close", None)
        if close is not None:
            close()


async def _serve(*, workdir: Path, inline: bool, slack_apart: tuple[str, str] | None = None) -> _Servers:
    """Both apps, against a local Slack of their own or, given as ``(api_url, bot_token)``,
    the one in a process of its own (``bench/_slack_apart.py``)."""
    slack = None
    if slack_apart is None:
        slack = LocalSlack()
        await slack.start()
        api_url, bot_token = slack.api_url, slack.bot_token
    else:
        api_url, bot_token = slack_apart
    # Every setting that picks the store is given, so a DYNAMODB_TABLE in the environment cannot win.
    settings = Settings.model_validate(
        {
            "SLACK_BOT_TOKEN": bot_token,
            "SLACK_SIGNING_SECRET": LOCAL_SIGNING_SECRET,
            "SLACK_API_URL": api_url,
            "SLACK_COMMAND": "/graph",
            "GRAPH_MODULES": ["bench.graphs"],
            "SQLITE_PATH": str(workdir / "runs.sqlite3"),
            "DYNAMODB_TABLE": None,
            "SNAPSHOT_BUCKET": None,
            # One person starts every run of the bench, far beyond a person's fair share.
            "MAX_STARTS_PER_MINUTE": 0,
            "MAX_WAITING_RUNS": 0,
        }
    )
    services = build_services(settings, owner="bench")
    servers = _Servers(slack=slack, services=services)
    # The sweeper would only find nothing to do; keep it out of the measurement window.
    servers.ours_url = await servers.start(
        build_web_app(services=services, sweep_seconds=3600, process_before_response=inline)
    )
    bare = bare_app(token=bot_token, api_url=api_url, inline=inline)
    servers.bare_url = await servers.start(bare.web_app())
    return servers


class _BodyRecorder(HttpTransport):
    """A transport that keeps the signed-to-be body ``LocalSlackUser`` built instead of sending it.

    The bench then posts those bytes to both apps (``HttpTransport.post`` signs each
    request afresh), so both get exactly the payload that Slack, as the local fake models
    it, would deliver.
    """

    def __init__(self) -> None:
        super().__init__(bot_url="http://127.0.0.1:9/unused", signing_secret=LOCAL_SIGNING_SECRET)
        self.body = b""

    async def post(self, body: bytes, **_: Any) -> BotResponse:
        self.body = body
        return BotResponse(status=0, body=None, text="", headers={})


def _pending_cards(slack: LocalSlack) -> list[dict[str, Any]]:
    return [
        m
        for m in slack.messages(CHANNEL)
        if any(
            b.get("type") == "actions" and any(e.get("action_id") == "ask:approve" for e in b.get("elements") or [])
            for b in m.get("blocks") or []
        )
    ]


Sender = Callable[[bytes], Awaitable[BotResponse]]


async def _timed(send: Sender, body: bytes) -> float:
    started = time.perf_counter()
    response = await send(body)
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"ack failed with HTTP {response.status}: {response.text[:200]}")
    return elapsed


async def measure_ack(*, samples: int, warmup: int = 3, inline: bool = False) -> AckReport:
    """Interleaved acks of ``/graph help``, ``/graph run`` and an Approve click.

    ``inline`` builds both apps with ``process_before_response=True`` (how the bot runs
    on Lambda): Bolt then runs the ack listener in the request and skips its 10 ms ack
    poll, so the ratio sees our ack path itself instead of the poll's floor.
    """
    servers_loop = _LoopThread()
    with tempfile.TemporaryDirectory(prefix="bench-ack-") as workdir:
        servers = await servers_loop.call(_serve(workdir=Path(workdir), inline=inline))
        try:
            return await _measure(
                servers_loop=servers_loop, servers=servers, samples=samples, warmup=warmup, inline=inline
            )
        finally:
            await servers_loop.call(servers.stop())
            servers_loop.close()


async def _measure(
    *, servers_loop: _LoopThread, servers: _Servers, samples: int, warmup: int, inline: bool
) -> AckReport:
    slack = servers.slack
    assert slack is not None, "the sequential bench serves its own local Slack"
    ours = HttpTransport(bot_url=servers.ours_url, signing_secret=LOCAL_SIGNING_SECRET)
    bare = HttpTransport(bot_url=servers.bare_url, signing_secret=LOCAL_SIGNING_SECRET)
    recording = _BodyRecorder()
    recorder = LocalSlackUser(slack=slack, transport=recording)
    baseline = await servers_loop.call(_tasks_now())

    async def settle() -> None:
        await servers_loop.call(_settle(baseline=baseline))

    async def send_ours(body: bytes) -> BotResponse:
        return await ours.post(body)

    async def send_bare(body: bytes) -> BotResponse:
        return await bare.post(body)

    async def pair(index: int, body: bytes) -> tuple[float, float]:
        """One sample of each side; who goes first alternates with ``index``."""
        gc.collect()
        if index % 2 == 0:
            ours_time = await _timed(send_ours, body)
            await settle()
            bare_time = await _timed(send_bare, body)
        else:
            bare_time = await _timed(send_bare, body)
            await settle()
            ours_time = await _timed(send_ours, body)
        await settle()
        return ours_time, bare_time

    async def command_body(text: str) -> bytes:
        # Reads and writes LocalSlack state from this thread: only while the servers are settled.
        await recorder.slash_command(text=text, user_id=REQUESTER, channel_id=CHANNEL)
        return recording.body

    mode = " [inline]" if inline else ""

    async def series(name: str, bodies: list[bytes]) -> Comparison:
        ours_times: list[float] = []
        bare_times: list[float] = []
        for index, body in enumerate(bodies):
            ours_time, bare_time = await pair(index, body)
            if index >= warmup:
                ours_times.append(ours_time)
                bare_times.append(bare_time)
        return compare(name=name + mode, ours=ours_times, baseline=bare_times)

    try:
        count = warmup + samples
        help_ack = await series("ack /graph help", [await command_body("help") for _ in range(count)])
        run_bodies = [await command_body(f"run {SMALL} bench sample {i}") for i in range(count)]
        run_ack = await series(f"ack /graph run {SMALL}", run_bodies)
        cards = _pending_cards(slack)
        if len(cards) < count:
            raise RuntimeError(f"expected {count} cards to click, found {len(cards)}")
        click_bodies: list[bytes] = []
        for card in cards[:count]:
            await recorder.click(message=card, label="Approve", user_id=APPROVER, channel_id=CHANNEL)
            click_bodies.append(recording.body)
        click_ack = await series("ack Approve click", click_bodies)
        rejected = list(slack.rejected)
        if rejected:
            raise RuntimeError(f"the bot made calls Slack would refuse: {rejected[:3]}")
        if len(_pending_cards(slack)) != len(cards) - count:
            raise RuntimeError("some Approve clicks did not take effect: the bench did not measure real work")
    finally:
        await ours.aclose()
        await bare.aclose()
    comparisons = [help_ack, run_ack, click_ack]
    worst = max(max(c.ours.samples) for c in comparisons)
    return AckReport(comparisons=comparisons, worst_ours=worst)


if __name__ == "__main__":
    from bench._ack_report import main

    raise SystemExit(main())
