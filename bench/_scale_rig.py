"""The rig ``bench.scale`` measures with: the real ``approval-bot serve`` process, the local
Slack in this process, and SQLite or DynamoDB on moto's counting server.

The bot is launched as the end-to-end tests launch it (``tests/e2e/conftest.py``): its own
process, reached by signed HTTP, calling the local Slack over HTTP, so its memory can be read
from ``/proc`` and nothing it does shares this process's interpreter. What the bot does is
observed where Slack would see it: cards in a channel, ephemeral answers, ``views.publish``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from bench.graphs import SMALL
from engine.records import Run
from engine.store import RunStore
from localslack import LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser

if TYPE_CHECKING:
    from tests.support.aws import CountingMotoServer

REPO = Path(__file__).resolve().parents[1]
STARTER = "U0STARTER"
BOT_APP_ID = "scale-bot"
"""The bot's botocore app id, so moto's counting server tells its requests from the bench's."""


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` (``VmRSS`` in ``/proc/<pid>/status``), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError(f"no VmRSS for process {pid}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Bot:
    """One ``approval-bot serve`` process, its store (opened here too) and a user who reaches it."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str]
    store: RunStore
    user: LocalSlackUser
    channel: str
    viewer: str
    """Who lists: not the starter, so every ask (``ANYONE`` may decide) is in their inbox."""
    run_ids: list[str] = field(default_factory=list)

    @property
    def rss_kib(self) -> int:
        return rss_kib(self.process.pid)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    async def stop(self) -> None:
        await self.user.aclose()
        if self.process.poll() is None:
            self.process.terminate()
            deadline = time.monotonic() + 10
            while self.process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=10)
        close = getattr(self.store, "close", None)
        if close is not None:
            close()


@contextlib.contextmanager
def counting_moto() -> Iterator[CountingMotoServer]:
    """moto's counting server (``tests/support/aws.py``), with this process's environment
    pointed at it (fake credentials, no profile or metadata service) until the block ends."""
    from tests.support.aws import CountingMotoServer, _env

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = CountingMotoServer()
    server.start()
    env = _env(server.url)
    dropped = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN")
    saved = {name: os.environ.get(name) for name in (*env, *dropped)}
    for name in dropped:
        os.environ.pop(name, None)
    os.environ.update(env)
    try:
        yield server
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def store_env(*, backend: str, workdir: Path, name: str) -> tuple[dict[str, str], Callable[[], RunStore]]:
    """The variables that give a bot its own store, and how to open that store here."""
    if backend == "sqlite":
        from persistence.sqlite import SqliteRunStore

        path = str(workdir / f"{name}.sqlite3")
        return {"SQLITE_PATH": path}, lambda: SqliteRunStore(path)
    from persistence import create_table
    from persistence.dynamodb import DynamoRunStore

    table = f"scale-{name}-{uuid.uuid4().hex[:8]}"
    create_table(table=table)
    aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    return {**aws, "DYNAMODB_TABLE": table, "AWS_SDK_UA_APP_ID": BOT_APP_ID}, lambda: DynamoRunStore(table)


async def start_bot(*, slack: LocalSlack, backend: str, workdir: Path, name: str, channel: str, viewer: str) -> Bot:
    """``approval-bot serve`` on its own store; its sweeper is kept out of the way (hourly):
    the bench runs the sweep itself, when it measures one."""
    extra, open_store = store_env(backend=backend, workdir=workdir, name=name)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SLACK_", "DYNAMODB_", "SNAPSHOT_"))}
    env = {
        **keep,
        "PYTHONPATH": str(REPO),
        "SLACK_BOT_TOKEN": slack.bot_token,
        "SLACK_SIGNING_SECRET": LOCAL_SIGNING_SECRET,
        "SLACK_API_URL": slack.api_url,
        "GRAPH_MODULES": "bench.graphs",
        "GRAPH_MODEL": "offline",
        "LOG_LEVEL": "WARNING",
        # One person starts every run of the bench, far beyond a person's fair share.
        "MAX_STARTS_PER_MINUTE": "0",
        "MAX_WAITING_RUNS": "0",
        **extra,
    }
    port = _free_port()
    command = [sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    log = workdir / f"bot-{name}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "--sweep-seconds", "3600"], env=env, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT
        )
    user = LocalSlackUser(
        bot_url=f"http://127.0.0.1:{port}/slack/events", signing_secret=LOCAL_SIGNING_SECRET, slack=slack
    )
    bot = Bot(
        name=name,
        url=f"http://127.0.0.1:{port}",
        process=process,
        log=log,
        env=env,
        store=open_store(),
        user=user,
        channel=channel,
        viewer=viewer,
    )
    try:
        await _wait_healthy(bot)
    except BaseException:
        await bot.stop()
        raise
    return bot


async def _wait_healthy(bot: Bot, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if bot.process.poll() is not None:
                raise RuntimeError(f"the bot exited with {bot.process.returncode}:\n{bot.output()[-3000:]}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(bot.url + "/healthz") as response:
                    if response.status == 200 and (await response.json())["graphs_loaded"]:
                        return
            await asyncio.sleep(0.1)
    raise TimeoutError(f"the bot did not become healthy:\n{bot.output()[-3000:]}")


def cards(slack: LocalSlack, channel: str) -> list[dict[str, Any]]:
    """Approval cards in ``channel``: messages whose header block id is ``card:<key>``."""
    return [
        m
        for m in slack.messages(channel)
        if any(str(b.get("block_id", "")).startswith("card:") for b in m.get("blocks") or [])
    ]


def card_keys(slack: LocalSlack, channel: str) -> list[str]:
    return [
        str(b["block_id"])
        for m in cards(slack, channel)
        for b in m.get("blocks") or []
        if str(b.get("block_id", "")).startswith("card:")
    ]


async def start_runs(bot: Bot, slack: LocalSlack, *, count: int, timeout: float = 120.0) -> None:
    """Start ``count`` runs one after another, each through ``/graph run``, until its card is up."""
    for n in range(count):
        before = len(cards(slack, bot.channel))
        response = await bot.user.slash_command(text=f"run {SMALL} seed {n}", user_id=STARTER, channel_id=bot.channel)
        if response.status != 200:
            raise RuntimeError(f"/graph run answered {response.status}: {response.text}")

        def posted(seen: int = before) -> bool:
            return len(cards(slack, bot.channel)) > seen

        await slack.wait_for(posted, timeout=timeout, what=f"card {n}")
    bot.run_ids = [run.run_id for run in bot.store.recent(channel=bot.channel, limit=count)]
    # The card is up before its delivery (and the status message's last edit) is recorded: a
    # copy made of a run that still owes Slack something is due at once, and every sweep of
    # the filled store would deliver to the copies instead of finding nothing to do.
    deadline = time.monotonic() + timeout
    while any((run := bot.store.load(r, snapshot=False)) is None or run.owes_slack for r in bot.run_ids):
        if time.monotonic() > deadline:
            raise RuntimeError("the started runs still owe Slack something: copies of them would be due")
        await asyncio.sleep(0.1)


def clone_waiting(bot: Bot, *, total: int) -> list[str]:
    """Fill ``bot``'s store up to ``total`` waiting runs with copies of the runs it really
    started (snapshot, asks, card references and all), written straight through the store
    API and indexed for the inbox as the engine indexes them; each copy is a new run id, a
    little older than the last, in the same channel."""
    templates: list[Run] = []
    for run_id in bot.run_ids:
        run = bot.store.load(run_id)
        if run is None:
            raise LookupError(run_id)
        templates.append(run)
    oldest = min(run.created_at for run in templates)
    made: list[str] = []
    if any(run.sweep_at is not None and run.sweep_at <= time.time() + 60 for run in templates):
        raise RuntimeError("a template run is due within a minute: its copies would be swept, not left waiting")
    for n in range(total - len(templates)):
        template = templates[n % len(templates)]
        at = oldest - 0.001 * (n + 1)  # older by a millisecond each: never old enough to make an ask due
        copy = template.evolve(run_id=f"clone{n:011d}", created_at=at, updated_at=at, state_ref=None)
        bot.store.create(copy)
        bot.store.index_asks(copy)
        made.append(copy.run_id)
    return made


async def answered(
    slack: LocalSlack, send: Callable[[], Any], *, seen: Callable[[], int], timeout: float = 60.0, what: str
) -> float:
    """Seconds from ``send()`` until ``seen()`` grows: a listing as the person sees it arrive."""
    before = seen()
    start = time.perf_counter()
    response = await send()
    if response.status != 200:
        raise RuntimeError(f"{what}: the bot answered {response.status}: {response.text}")
    await slack.wait_for(lambda: seen() > before, timeout=timeout, what=what)
    return time.perf_counter() - start


@contextlib.asynccontextmanager
async def local_slack() -> AsyncIterator[LocalSlack]:
    slack = LocalSlack()
    await slack.start()
    try:
        yield slack
    finally:
        await slack.stop()
