"""End-to-end harness: the real ``approval-bot serve`` (or ``socket``) process, real HTTP everywhere.

The bot runs as a subprocess (so it can be killed and restarted), talks to the local
fake Slack in the test process through ``SLACK_API_URL``, and stores runs in SQLite or
in DynamoDB on moto's server. Requests from "Slack" are signed like Slack signs them, or,
for ``mode="socket"``, arrive as envelopes over the bot's Socket Mode WebSocket.
Every test also checks that the bot never made a Web API call real Slack would refuse.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from engine.ports import FINAL
from engine.records import Run
from engine.store import RunStore
from localslack import LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser, SocketModeTransport

if TYPE_CHECKING:
    from tests.e2e.lambda_env import LambdaDeployment, PoolFactory, UserFactory
    from tests.support.aws import CountingMotoServer
    from tests.support.lambda_ import LocalLambda

REPO = Path(__file__).resolve().parents[2]
CHANNEL = "C0E2E"
HEALTH_POLL_SECONDS = 0.02
"""How often a starting bot is asked whether it is up: a start takes about a second, and
every test starts one or more, so a coarse poll costs half its period on each."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class BotProcess:
    url: str
    """The HTTP base URL; for ``mode="socket"`` the bot listens on no port and this is empty."""
    process: subprocess.Popen[bytes]
    log: Path
    mode: str = "serve"

    def kill(self) -> None:
        """Die like a crashed host: no clean-up, no goodbye."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    async def stop(self) -> None:
        """SIGTERM, then up to 10 s for the drain, then SIGKILL.

        The wait yields to the event loop: the local Slack runs on this loop, and a bot
        draining its last Slack calls (a status edit, a Home refresh) needs it to answer.
        A blocking wait here froze the local Slack and made every such drain run out.
        """
        if self.process.poll() is not None:
            return
        self.process.terminate()
        deadline = time.monotonic() + 10
        while self.process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.process.poll() is None:
            self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Backend:
    name: str
    env: dict[str, str]
    open_store: Callable[[], RunStore]


def _sqlite(tmp_path: Path) -> Backend:
    from persistence.sqlite import SqliteRunStore

    path = str(tmp_path / "runs.sqlite3")
    return Backend(name="sqlite", env={"SQLITE_PATH": path}, open_store=lambda: SqliteRunStore(path))


def _dynamodb(request: pytest.FixtureRequest) -> Backend:
    aws_env: dict[str, str] = request.getfixturevalue("aws_env")
    table: str = request.getfixturevalue("dynamodb_table")

    def open_dynamo() -> RunStore:
        from persistence.dynamodb import DynamoRunStore

        return DynamoRunStore(table)

    return Backend(name="dynamodb", env={**aws_env, "DYNAMODB_TABLE": table}, open_store=open_dynamo)


@pytest.fixture(params=["sqlite", "dynamodb"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return _sqlite(tmp_path) if request.param == "sqlite" else _dynamodb(request)


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Backend:
    return _sqlite(tmp_path)


@pytest.fixture
def dynamodb_backend(request: pytest.FixtureRequest) -> Backend:
    return _dynamodb(request)


@pytest.fixture
def markers_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "markers.txt"
    monkeypatch.setenv("APPROVAL_BOT_TEST_MARKERS", str(path))
    return path


StartBot = Callable[..., Awaitable[BotProcess]]
UserFor = Callable[[BotProcess], LocalSlackUser]


def _bot_env(*, slack: LocalSlack, backend: Backend, markers: Path, extra: dict[str, str]) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SLACK_", "DYNAMODB_", "SNAPSHOT_"))}
    return {
        **keep,
        "PYTHONPATH": str(REPO),
        "SLACK_BOT_TOKEN": slack.bot_token,
        "SLACK_SIGNING_SECRET": LOCAL_SIGNING_SECRET,
        "SLACK_API_URL": slack.api_url,
        "GRAPH_MODULES": "tests.support.graphs",
        "EXAMPLE_GRAPHS": "true",  # the tests run the example graphs too; off unless asked for
        "GRAPH_MODEL": "offline",
        "APPROVAL_BOT_TEST_MARKERS": str(markers),
        "LOG_LEVEL": "INFO",
        **backend.env,
        **extra,
    }


@pytest.fixture
async def start_bot(
    local_slack: LocalSlack, markers_file: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[StartBot]:
    started: list[BotProcess] = []

    async def start(
        *,
        backend: Backend,
        extra_env: dict[str, str] | None = None,
        mode: str = "serve",
        args: Sequence[str] = (),
        healthy: bool = True,
    ) -> BotProcess:
        """Start ``approval-bot <mode> [args]``; ``socket`` gets the app token and is ready once it connects.

        ``args`` are extra command-line options for the mode, e.g. ``["--sweep-seconds", "1"]``.
        ``healthy=False``: ``serve`` is started once ``/healthz`` answers with the graphs loaded,
        200 or 503 (a test of what makes it unhealthy).
        """
        log = tmp_path / f"bot-{len(started)}.log"
        extra = {"SLACK_APP_TOKEN": local_slack.socket_mode.app_token} if mode == "socket" else {}
        env = _bot_env(slack=local_slack, backend=backend, markers=markers_file, extra=extra | (extra_env or {}))
        if mode == "socket":
            command, url = [sys.executable, "-m", "bot.cli", "socket", *args], ""
        else:
            port = _free_port()
            command = [sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
            url = f"http://127.0.0.1:{port}"
        connected_before = local_slack.socket_mode.connections_opened
        with log.open("wb") as sink:
            process = subprocess.Popen(command, env=env, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
        bot = BotProcess(url=url, process=process, log=log, mode=mode)
        started.append(bot)
        if mode == "socket":
            await _wait_connected(bot, local_slack, before=connected_before)
        else:
            await _wait_healthy(bot, ok_only=healthy)
        return bot

    yield start
    # The test is over: a bot still running is killed, not drained. A drain here proves
    # nothing (no test looks at it; tests/e2e/test_resilience.py stops bots with SIGTERM
    # and checks the drain), and waited 0.2 to 5 s per bot for background Slack calls.
    for bot in started:
        bot.kill()
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        for bot in started:
            print(f"--- {bot.log.name} ---\n{bot.output()[-4000:]}")


async def _wait_healthy(bot: BotProcess, timeout: float = 60.0, *, ok_only: bool = True) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    async with aiohttp.ClientSession() as session:
        while asyncio.get_running_loop().time() < deadline:
            if bot.process.poll() is not None:
                raise RuntimeError(f"the bot exited with {bot.process.returncode}:\n{bot.output()[-3000:]}")
            try:
                async with session.get(bot.url + "/healthz") as response:
                    answered = response.status == 200 or (not ok_only and response.status == 503)
                    if answered and (await response.json())["graphs_loaded"]:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(HEALTH_POLL_SECONDS)
    raise TimeoutError(f"the bot did not become healthy:\n{bot.output()[-3000:]}")


async def _wait_connected(bot: BotProcess, slack: LocalSlack, *, before: int, timeout: float = 60.0) -> None:
    """A Socket Mode bot has no health URL; it is ready when its WebSocket is up (graphs load first)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if bot.process.poll() is not None:
            raise RuntimeError(f"the bot exited with {bot.process.returncode}:\n{bot.output()[-3000:]}")
        if slack.socket_mode.connections_opened > before and slack.socket_mode.connected:
            return
        await asyncio.sleep(HEALTH_POLL_SECONDS)
    raise TimeoutError(f"the bot did not connect over Socket Mode:\n{bot.output()[-3000:]}")


@pytest.fixture
def user_for(
    slack_user: Callable[..., LocalSlackUser], local_slack: LocalSlack
) -> Callable[[BotProcess], LocalSlackUser]:
    """A user who reaches ``bot`` the way Slack would: signed HTTP, or envelopes over its socket."""

    def make(bot: BotProcess) -> LocalSlackUser:
        if bot.mode == "socket":
            return slack_user(transport=SocketModeTransport(socket_mode=local_slack.socket_mode))
        return slack_user(bot_url=bot.url + "/slack/events", signing_secret=LOCAL_SIGNING_SECRET)

    return make


@pytest.fixture(autouse=True)
def slack_never_refused(local_slack: LocalSlack) -> Iterator[None]:
    """No call the bot made may be one that real Slack would refuse."""
    yield
    assert local_slack.rejected == [], f"Slack would have refused: {local_slack.rejected}"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


# -- helpers shared by the e2e tests ------------------------------------------------------------


async def eventually(predicate: Callable[[], Any], *, timeout: float = 30.0, what: str) -> Any:
    """Poll state outside Slack (the store, side-effect files): no Slack call signals it."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout}s")
        await asyncio.sleep(0.05)


def cards(slack: LocalSlack, channel: str = CHANNEL) -> list[dict[str, Any]]:
    """Messages that are approval cards, answered or not: their header's block id is ``card:<key>``."""
    return [
        m
        for m in slack.messages(channel)
        if any(str(b.get("block_id", "")).startswith("card:") for b in m.get("blocks") or [])
    ]


def live_buttons(message: dict[str, Any]) -> list[str]:
    return [
        str(e["text"]["text"])
        for b in message.get("blocks") or []
        if b.get("type") == "actions"
        for e in b.get("elements") or []
    ]


def finished_message(slack: LocalSlack, channel: str = CHANNEL) -> dict[str, Any] | None:
    """The run's final message, whatever the outcome (finished, rejected, failed).

    Found by the metadata the bot stamps on every message (the final one says ``"final"``),
    not by its icon, which differs by outcome.
    """
    for message in slack.messages(channel):
        if ((message.get("metadata") or {}).get("event_payload") or {}).get("what") == FINAL:
            return message
    return None


def all_text(message: dict[str, Any]) -> str:
    """The fallback text and every text in the blocks (sections, fields, context, table
    cells, rich text)."""
    parts = [str(message.get("text", ""))]
    for block in message.get("blocks") or []:
        cells = [cell for row in block.get("rows") or [] for cell in row]
        rich = [e for section in block.get("elements") or [] for e in section.get("elements") or []]
        items = [block.get("text"), *(block.get("fields") or []), *(block.get("elements") or []), *cells]
        for item in [*items, *(rich if block.get("type") == "rich_text" else [])]:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
    return "\n".join(parts)


def run_of(store: RunStore, slack: LocalSlack, channel: str = CHANNEL) -> Run:
    """The run announced first in the channel, as stored."""
    root = next(m for m in slack.messages(channel) if "started" in str(m.get("text", "")))
    import re

    match = re.search(r"run `([a-z0-9]+)`", all_text(root) + str(root.get("blocks")))
    assert match, f"no run id in {root}"
    run = store.load(match.group(1))
    assert run is not None
    return run


@pytest.fixture
def deployment(
    local_lambda: LocalLambda,
    lambda_pool: PoolFactory,
    local_slack: LocalSlack,
    slack_user: UserFactory,
    moto_server: CountingMotoServer,
    aws_env: dict[str, str],
    dynamodb_table: str,
    tmp_path: Path,
) -> Iterator[LambdaDeployment]:
    """The bot deployed as a Lambda function, locally (``tests/e2e/lambda_env.py``)."""
    from tests.e2e.lambda_env import LambdaDeployment

    moto_server.reset_counts()
    yield LambdaDeployment(
        local_lambda=local_lambda,
        slack=local_slack,
        moto=moto_server,
        table=dynamodb_table,
        markers=tmp_path / "markers.txt",
        aws_env=aws_env,
        make_pool=lambda_pool,
        make_user=slack_user,
    )
