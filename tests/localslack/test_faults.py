"""Injected 429s and 5xx: answered over HTTP exactly as Slack answers them, and nothing posted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from localslack import LOCAL_BOT_TOKEN, LocalSlack, contains

CHANNEL = "C0FAULT"
AUTH = {"Authorization": f"Bearer {LOCAL_BOT_TOKEN}"}


@pytest.fixture
async def client(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    """A plain client (slack_sdk's default: connection errors only), so every fault surfaces."""
    web = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield web
    if web.session is not None:
        await web.session.close()


async def raw_post(local_slack: LocalSlack, method: str, body: dict[str, Any]) -> tuple[int, dict[str, str], str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{local_slack.api_url}{method}", json=body, headers=AUTH) as response,
    ):
        return response.status, dict(response.headers), await response.text()


async def test_429_is_slacks_rate_limit_answer(local_slack: LocalSlack) -> None:
    fault = local_slack.inject_failures(method="chat.postMessage", status=429, retry_after=7)
    status, headers, text = await raw_post(local_slack, "chat.postMessage", {"channel": CHANNEL, "text": "hi"})
    assert (status, headers["Retry-After"], text) == (429, "7", '{"ok": false, "error": "ratelimited"}')
    assert headers["Content-Type"].startswith("application/json")
    assert fault.served == 1 and fault.remaining == 0
    assert local_slack.messages(CHANNEL) == [] and local_slack.calls == [] and local_slack.rejected == []
    assert local_slack.faults_served == [
        {"method": "chat.postMessage", "status": 429, "params": {"channel": CHANNEL, "text": "hi"}}
    ]
    status, _, _ = await raw_post(local_slack, "chat.postMessage", {"channel": CHANNEL, "text": "hi"})
    assert status == 200 and [m["text"] for m in local_slack.messages(CHANNEL)] == ["hi"]


@pytest.mark.parametrize("status", [500, 503])
async def test_5xx_is_not_json(local_slack: LocalSlack, status: int) -> None:
    local_slack.inject_failures(method="chat.postMessage", status=status)
    got, headers, text = await raw_post(local_slack, "chat.postMessage", {"channel": CHANNEL, "text": "hi"})
    assert got == status and headers["Content-Type"].startswith("text/html")
    assert text.startswith("<html>") and "Retry-After" not in headers
    assert local_slack.messages(CHANNEL) == []


async def test_plain_client_raises_on_each_fault(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    local_slack.inject_failures(method="chat.postMessage", status=429, times=1)
    local_slack.inject_failures(method="chat.postMessage", status=500, times=1)
    with pytest.raises(SlackApiError) as limited:
        await client.chat_postMessage(channel=CHANNEL, text="hi")
    assert limited.value.response.status_code == 429 and limited.value.response["error"] == "ratelimited"
    assert limited.value.response.headers["Retry-After"] == "1"
    with pytest.raises(SlackApiError) as broken:
        await client.chat_postMessage(channel=CHANNEL, text="hi")
    assert broken.value.response.status_code == 500
    assert [f["status"] for f in local_slack.faults_served] == [429, 500]
    await client.chat_postMessage(channel=CHANNEL, text="hi")
    assert len(local_slack.messages(CHANNEL)) == 1


async def test_only_the_method_and_requests_asked_for(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    update = local_slack.inject_failures(method="chat.update", status=500)
    summary = local_slack.inject_failures(method="chat.postMessage", status=429, when=contains("run finished"))
    card = await client.chat_postMessage(channel=CHANNEL, text="card", blocks=[{"type": "divider"}])
    with pytest.raises(SlackApiError):
        await client.chat_update(channel=CHANNEL, ts=card["ts"], text="decided")
    await client.chat_update(channel=CHANNEL, ts=card["ts"], text="decided")
    section = {"type": "section", "text": {"type": "mrkdwn", "text": ":white_check_mark: run finished"}}
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel=CHANNEL, text="done", blocks=[section])
    assert (update.served, summary.served) == (1, 1)
    assert [m["text"] for m in local_slack.messages(CHANNEL)] == ["decided"]
    assert [method for method, _ in local_slack.calls] == ["chat.postMessage", "chat.update"]


async def test_unlimited_until_cleared_and_waitable(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    fault = local_slack.inject_failures(method="chat.postMessage", status=503, times=None)
    for _ in range(3):
        with pytest.raises(SlackApiError):
            await client.chat_postMessage(channel=CHANNEL, text="hi")
    assert await local_slack.wait_for(lambda: fault.served >= 3, timeout=1) and fault.remaining is None
    local_slack.clear_failures()
    await client.chat_postMessage(channel=CHANNEL, text="hi")
    assert fault.served == 3 and len(local_slack.faults_served) == 3


async def test_refused_token_is_refused_before_any_fault(local_slack: LocalSlack) -> None:
    fault = local_slack.inject_failures(method="auth.test", status=429)
    anonymous = AsyncWebClient(base_url=local_slack.api_url)
    with pytest.raises(SlackApiError) as raised:
        await anonymous.auth_test()
    assert raised.value.response["error"] == "not_authed" and fault.served == 0
    assert [method for method, _ in local_slack.calls] == ["auth.test"]


def test_bad_plans_are_refused(local_slack: LocalSlack) -> None:
    with pytest.raises(ValueError, match="429 or a 5xx"):
        local_slack.inject_failures(method="chat.postMessage", status=404)
    with pytest.raises(ValueError, match="times"):
        local_slack.inject_failures(method="chat.postMessage", status=500, times=0)


async def test_a_broken_predicate_fails_nothing(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    def broken(params: Any) -> bool:
        raise KeyError("oops")

    fault = local_slack.inject_failures(method="chat.postMessage", status=500, when=broken)
    await client.chat_postMessage(channel=CHANNEL, text="hi")
    assert fault.served == 0 and len(local_slack.messages(CHANNEL)) == 1
