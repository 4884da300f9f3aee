"""The bot's Web API clients retry Slack's 429s and 5xx, through real HTTP against LocalSlack."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import SecretStr
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry import async_handler, builtin_async_handlers
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_client import RATE_LIMIT_RETRIES, SERVER_ERROR_RETRIES, CountedFailures, web_client
from localslack import LOCAL_BOT_TOKEN, LocalSlack, contains
from tests.support.meters import RecordingMeter

CHANNEL = "C0RETRY"
HANDLER_TYPES = [
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
    CountedFailures,
]


def kinds(client: AsyncWebClient) -> list[type]:
    """The client's retry handlers, each as the slack_sdk handler it counts the retries of."""
    return [type(getattr(h, "handler", h)) for h in client.retry_handlers]


@pytest.fixture
async def retrying(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    client = web_client(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield client
    if client.session is not None:
        await client.session.close()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Record the retry handlers' waits instead of sleeping them (only theirs: the server keeps real time)."""
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    fake = SimpleNamespace(sleep=sleep)
    monkeypatch.setattr(builtin_async_handlers, "asyncio", fake)
    monkeypatch.setattr(async_handler, "asyncio", fake)
    yield waited


async def test_rate_limits_then_server_error_deliver_once(
    local_slack: LocalSlack, retrying: AsyncWebClient, sleeps: list[float]
) -> None:
    limited = local_slack.inject_failures(method="chat.postMessage", status=429, times=2, retry_after=1)
    broken = local_slack.inject_failures(method="chat.postMessage", status=500, times=1)
    posted = await retrying.chat_postMessage(channel=CHANNEL, text="run started")
    assert posted["ok"] and (limited.served, broken.served) == (2, 1)
    assert [f["status"] for f in local_slack.faults_served] == [429, 429, 500]
    assert [m["ts"] for m in local_slack.messages(CHANNEL)] == [posted["ts"]]
    assert [method for method, _ in local_slack.calls] == ["chat.postMessage"]
    # Retry-After 1 (plus up to 1 s jitter) twice, then the backoff for the third attempt: 0.5 * 2**2.
    assert [int(s) for s in sleeps] == [1, 1, 2]


async def test_without_the_handlers_the_same_call_raises(local_slack: LocalSlack) -> None:
    local_slack.inject_failures(method="chat.postMessage", status=429, times=2, retry_after=1)
    local_slack.inject_failures(method="chat.postMessage", status=500, times=1)
    plain = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    with pytest.raises(SlackApiError) as raised:
        await plain.chat_postMessage(channel=CHANNEL, text="run started")
    assert raised.value.response.status_code == 429
    assert len(local_slack.faults_served) == 1 and local_slack.messages(CHANNEL) == []


async def test_retry_after_is_really_waited(local_slack: LocalSlack, retrying: AsyncWebClient) -> None:
    local_slack.inject_failures(method="chat.update", status=429, retry_after=1)
    card = await retrying.chat_postMessage(channel=CHANNEL, text="card")
    started = time.monotonic()
    await retrying.chat_update(channel=CHANNEL, ts=card["ts"], text="approved")
    assert time.monotonic() - started >= 1.0
    assert local_slack.message(CHANNEL, card["ts"])["text"] == "approved"  # type: ignore[index]


@pytest.mark.parametrize(("status", "retries"), [(429, RATE_LIMIT_RETRIES), (503, SERVER_ERROR_RETRIES)])
async def test_gives_up_after_its_retries(
    local_slack: LocalSlack, retrying: AsyncWebClient, sleeps: list[float], status: int, retries: int
) -> None:
    fault = local_slack.inject_failures(method="chat.postMessage", status=status, times=None)
    with pytest.raises(SlackApiError) as raised:
        await retrying.chat_postMessage(channel=CHANNEL, text="done")
    assert raised.value.response.status_code == status
    assert fault.served == 1 + retries and len(sleeps) == retries
    assert local_slack.messages(CHANNEL) == []


async def test_only_the_failing_post_is_retried(
    local_slack: LocalSlack, retrying: AsyncWebClient, sleeps: list[float]
) -> None:
    local_slack.inject_failures(method="chat.postMessage", status=500, when=contains("finished"))
    await retrying.chat_postMessage(channel=CHANNEL, text="card")
    await retrying.chat_postMessage(channel=CHANNEL, text="run finished")
    assert [m["text"] for m in local_slack.messages(CHANNEL)] == ["card", "run finished"]
    assert len(sleeps) == 1


async def test_each_retry_and_each_call_that_failed_after_them_is_counted(
    local_slack: LocalSlack, retrying: AsyncWebClient, sleeps: list[float], meter: RecordingMeter
) -> None:
    local_slack.inject_failures(method="chat.postMessage", status=429, times=1, retry_after=1)
    await retrying.chat_postMessage(channel=CHANNEL, text="card")  # one retry, then delivered
    local_slack.inject_failures(method="chat.update", status=503, times=None)
    with pytest.raises(SlackApiError):
        await retrying.chat_update(channel=CHANNEL, ts="1.0", text="x")  # every retry, then the error
    with pytest.raises(SlackApiError):
        await retrying.chat_delete(channel=CHANNEL, ts="9.9")  # Slack's ok: false, retried by nobody
    assert meter.of("SlackRetries") == [1.0] * (1 + SERVER_ERROR_RETRIES)
    assert meter.of("SlackErrors") == [1.0, 1.0]


def test_each_client_gets_its_own_handlers() -> None:
    first = web_client(token=None, base_url="http://127.0.0.1:1/api/")
    second = web_client(token="xoxb-x", base_url="http://127.0.0.1:1/api/")
    assert kinds(first) == HANDLER_TYPES
    assert [h.max_retry_count for h in first.retry_handlers[:3]] == [1, RATE_LIMIT_RETRIES, SERVER_ERROR_RETRIES]
    assert not set(map(id, first.retry_handlers)) & set(map(id, second.retry_handlers))


def test_the_bots_clients_come_from_the_factory(local_slack: LocalSlack, tmp_path: Path) -> None:
    from bot.app import build_app
    from bot.handoff import InProcessHandoff
    from bot.services import build_services
    from bot.settings import Settings

    settings = Settings(
        SLACK_BOT_TOKEN=SecretStr(LOCAL_BOT_TOKEN),
        SLACK_SIGNING_SECRET=SecretStr("local-secret"),
        SLACK_API_URL=local_slack.api_url,
        SQLITE_PATH=str(tmp_path / "runs.sqlite3"),
        DYNAMODB_TABLE=None,
    )
    services = build_services(settings)
    try:
        app = build_app(services, handoff=InProcessHandoff(services=services))
        for client in (services.client, app.client):
            assert kinds(client) == HANDLER_TYPES
            assert client.base_url == local_slack.api_url
        assert services.client.token == LOCAL_BOT_TOKEN and app.client.token is None
    finally:
        close = getattr(services.store, "close", None)
        if close is not None:
            close()
