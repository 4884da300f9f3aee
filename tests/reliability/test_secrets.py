"""No secret ever reaches a log line or a Slack message, even at ``LOG_LEVEL=DEBUG``.

A full session runs against the real bot process, first over HTTP on DynamoDB (moto), then
over Socket Mode: a command, a card approved, one rejected with a reason, one edited, the
listings, App Home, a forged request, a command for a graph that does not exist, and the
sweeper going round. The bot token, the signing secret, the app token and the AWS secret
key are given distinctive values; afterwards every line the bot logged (its stdout and
stderr, DEBUG included) and everything the local Slack received or answered (Web API
calls with their arguments, messages, views, Home tabs, ``response_url`` posts) and every
answer the bot gave to a request are searched for each value, for its base64 form, and for
its distinctive middle part (so a secret cut or wrapped by a log formatter still shows).

A check that cannot fail proves nothing, so ``test_the_search_finds_each_secret_in_any_form``
shows the search finding each secret in each form it looks for.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.ports import FINAL
from engine.records import Run, RunStatus
from localslack import LocalSlack, LocalSlackUser
from persistence.dynamodb import DynamoRunStore
from tests.e2e.conftest import CHANNEL, Backend, BotProcess, StartBot, UserFor, cards, eventually

BOT_TOKEN = "xoxb-4242-0000-SECRETBOTTOKEN7q2"
APP_TOKEN = "xapp-1-A0424-SECRETAPPTOKEN9k4"
SIGNING_SECRET = "8f1c0SECRETSIGNING5ecret3d9e2b"
AWS_SECRET = "wJalrSECRETAWSKEYbPxRfiCYEXAMPLE"
SECRETS = {
    "bot token": BOT_TOKEN,
    "app token": APP_TOKEN,
    "signing secret": SIGNING_SECRET,
    "AWS secret key": AWS_SECRET,
}
MARKERS = ("SECRETBOTTOKEN", "SECRETAPPTOKEN", "SECRETSIGNING", "SECRETAWSKEY")


def leaks(text: str, secrets: dict[str, str]) -> list[str]:
    """Which secrets ``text`` holds, whole, base64-encoded, or by their distinctive middle."""
    found = []
    for name, value in secrets.items():
        forms = {value, base64.b64encode(value.encode()).decode().rstrip("=")}
        forms |= {marker for marker in MARKERS if marker in value}
        if any(form in text for form in forms):
            found.append(name)
    return found


def test_the_search_finds_each_secret_in_any_form() -> None:
    for name, value in SECRETS.items():
        assert leaks(f"POST /api Authorization: Bearer {value}", SECRETS) == [name]
        assert leaks(json.dumps({"b64": base64.b64encode(value.encode()).decode()}), SECRETS) == [name]
        assert leaks(f"...{value[5:-3]}...", SECRETS) == [name], "a cut value is still found"
    assert leaks("xoxb-1-nothing-to-see and a signing secret of ****", SECRETS) == []


@pytest.fixture
async def local_slack() -> AsyncIterator[LocalSlack]:
    """The local Slack, with the distinctive tokens (overrides the usual fixture in this module)."""
    slack = LocalSlack(bot_token=BOT_TOKEN, app_token=APP_TOKEN)
    await slack.start()
    try:
        yield slack
    finally:
        await slack.stop()


def _env(backend: Backend) -> dict[str, str]:
    env = {"SLACK_SIGNING_SECRET": SIGNING_SECRET, "LOG_LEVEL": "DEBUG"}
    if "DYNAMODB_TABLE" in backend.env:
        env["AWS_SECRET_ACCESS_KEY"] = AWS_SECRET  # moto takes any key; a real one would sign every request
    return env


def _finals(slack: LocalSlack) -> int:
    return sum(
        1
        for m in slack.messages(CHANNEL)
        if ((m.get("metadata") or {}).get("event_payload") or {}).get("what") == FINAL
    )


class Session:
    """One person's worth of traffic through every kind of request the bot answers."""

    def __init__(self, slack: LocalSlack, user: LocalSlackUser) -> None:
        self.slack = slack
        self.user = user
        self.answers: list[Any] = []

    async def command(self, text: str, user_id: str = "U0ALICE") -> None:
        response = await self.user.slash_command(text=text, user_id=user_id, channel_id=CHANNEL)
        assert response.status == 200, (text, response.status)
        self.answers.append(response.body)

    async def new_card(self, text: str) -> dict[str, Any]:
        before = len(cards(self.slack))
        await self.command(text)
        found = await self.slack.wait_for(lambda: cards(self.slack)[before:], timeout=30, what=f"a card for {text}")
        return dict(found[0])

    async def ended(self, count: int) -> None:
        await self.slack.wait_for(lambda: _finals(self.slack) >= count, timeout=30, what=f"{count} runs ended")

    async def modal(self, card: dict[str, Any], label: str, value: str) -> None:
        await self.user.click(message=card, label=label, user_id="U0BOB", channel_id=CHANNEL)
        views = await self.slack.wait_for(lambda: self.slack.open_views("U0BOB"), timeout=10, what=f"the {label} modal")
        answer = await self.user.submit_view(
            view=views[-1], values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: value}}, user_id="U0BOB"
        )
        self.answers.append(answer.body)


def _everything_slack_saw(slack: LocalSlack, answers: Iterable[Any]) -> str:
    seen: list[Any] = [list(slack.calls), slack.responses, slack.messages(CHANNEL), list(answers)]
    seen += [slack.home(user) for user in ("U0ALICE", "U0BOB")]
    return json.dumps(seen, default=str)


def _assert_nothing_leaked(bots: Iterable[BotProcess], slack: LocalSlack, answers: Iterable[Any]) -> None:
    for bot in bots:
        log = bot.output()
        assert "DEBUG" in log, "the session really ran at DEBUG"
        assert "Traceback" not in log and " ERROR " not in log and '"level":"ERROR"' not in log, log[-3000:]
        hits = [(n, line) for n, line in enumerate(log.splitlines(), 1) if leaks(line, SECRETS)]
        assert hits == [], f"secrets in {bot.log.name}: {hits[:3]}"
    slack_side = _everything_slack_saw(slack, answers)
    assert "set_replicas" in slack_side and "Approved" in slack_side, "the search covered the session"
    assert leaks(slack_side, SECRETS) == []


async def test_a_full_session_at_debug_logs_and_posts_no_secret(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    local_slack: LocalSlack,
    slack_user: Any,
    user_for: UserFor,
) -> None:
    bot = await start_bot(backend=dynamodb_backend, extra_env=_env(dynamodb_backend), args=["--sweep-seconds", "1"])
    session = Session(local_slack, slack_user(bot_url=bot.url + "/slack/events", signing_secret=SIGNING_SECRET))

    await session.command("help")
    approved = await session.new_card("run guarded-write hello")
    await session.user.click(message=approved, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await session.ended(1)
    rejected = await session.new_card("run guarded-write second")
    await session.modal(rejected, "Reject", "not on a Friday")
    await session.ended(2)
    edited = await session.new_card("run tool-gate-test billing")
    await session.modal(edited, "Edit", json.dumps({"service": "billing-canary", "replicas": 5}))
    await session.ended(3)
    replied = await session.new_card("run tool-gate-test payments")
    await session.modal(replied, "Reply", "scale payments to 2 replicas instead")
    await session.ended(4)
    await session.new_card("run guarded-write from-home")
    assert (await session.user.open_home(user_id="U0BOB")).status == 200
    await local_slack.wait_for(lambda: "Approve" in json.dumps(local_slack.home("U0BOB")), timeout=10, what="Home")
    clicked = await session.user.click_home(user_id="U0BOB", label="Approve")
    assert clicked.status == 200
    await session.ended(5)
    for text in ("pending", "runs", "run no-such-graph x", "status nosuchrun"):
        await session.command(text)
    opened = await session.user.open_home(user_id="U0BOB")
    assert opened.status == 200
    forged = await session.user.send_raw(body=b"command=%2Fgraph&text=help", sign=False)
    assert forged.status == 401
    await eventually(lambda: "sweep round" in bot.output(), timeout=10, what="the sweeper to go round")

    # Socket Mode: the app token opens the socket, so it is the one this half is about.
    # ... and with the JSON log lines and the metrics on: Powertools' formatter logs no more.
    structured = {**_env(dynamodb_backend), "LOG_FORMAT": "json", "METRICS": "on"}
    socket = await start_bot(backend=dynamodb_backend, extra_env=structured, mode="socket")
    over_socket = Session(local_slack, user_for(socket))
    card = await over_socket.new_card("run guarded-write over-the-socket")
    await over_socket.user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await over_socket.ended(6)

    _assert_nothing_leaked([bot, socket], local_slack, [*session.answers, *over_socket.answers])


def test_botocore_debug_logs_hold_no_aws_secret_key(
    aws_env: dict[str, str], dynamodb_table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot holds botocore at INFO even at DEBUG (``bot.logs``); should someone lower it by
    hand, its wire log still carries no AWS secret key: requests are signed, not sent the key.

    A store round trip (create, load, save) against moto with botocore's own loggers at DEBUG,
    every record captured and searched like the bot's log.
    """
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    records: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Capture(level=logging.DEBUG)
    wire = [logging.getLogger(name) for name in ("botocore", "boto3", "urllib3")]
    levels = [logger.level for logger in wire]
    for logger in wire:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        store = DynamoRunStore(dynamodb_table)
        run = _a_run()
        store.create(run)
        assert store.load(run.run_id) is not None
    finally:
        for logger, level in zip(wire, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
    log = "\n".join(records)
    assert "Authorization" in log and "AWS4-HMAC-SHA256" in log, "the wire log was really captured, headers and all"
    assert [line for line in log.splitlines() if leaks(line, {"AWS secret key": AWS_SECRET})] == []


def _a_run() -> Run:
    now = time.time()
    return Run(
        run_id="r0secrets",
        graph="guarded-write",
        task="t",
        started_by="U0ALICE",
        status=RunStatus.RUNNING,
        version=0,
        created_at=now,
        updated_at=now,
        asks={},
        channel=CHANNEL,
    )
