"""``bot.listeners.forms.open_view``: one short try at ``views.open``, and the clicker told when it fails.

Against the local Slack over real HTTP, with its failures planned the way real Slack fails:
an expired or reused trigger, a rate limit with a long ``Retry-After``, a server error, an
answer that comes too late, nobody answering at all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from slack_bolt.async_app import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners import forms
from bot.listeners.forms import OPEN_BUDGET, open_view, say
from bot.render.modals import reply_modal
from bot.slack_client import web_client
from engine.records import Verdict
from localslack import LOCAL_BOT_TOKEN, LocalSlack

VIEW = reply_modal(run_id="run1", ask_key="a1", verdict=Verdict.REPLY, channel="C0FORM", message_ts="1.2")


class Respond:
    """Stands in for Bolt's ``respond``: records what the clicker would be told."""

    def __init__(self, *, fails: bool = False) -> None:
        self.said: list[dict[str, Any]] = []
        self.fails = fails

    async def __call__(self, **kwargs: Any) -> None:
        self.said.append(kwargs)
        if self.fails:
            raise ConnectionError("response_url unreachable")

    @property
    def respond(self) -> AsyncRespond:
        return cast(AsyncRespond, self)

    def text(self) -> str:
        (said,) = self.said
        assert said["response_type"] == "ephemeral" and said["replace_original"] is False, said
        return str(said["text"])


@pytest.fixture
async def client(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    """The bot's own client: it waits out 429s and retries 5xx, which ``open_view`` must not do."""
    made = web_client(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield made
    if made.session is not None:
        await made.session.close()


def _opened(slack: LocalSlack) -> list[dict[str, Any]]:
    return [p for m, p in slack.calls if m == "views.open"]


async def test_an_open_that_works_says_nothing(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    told = Respond()
    trigger = local_slack.new_trigger_id(user_id="U0BOB")
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is True
    assert told.said == []
    (view,) = local_slack.open_views("U0BOB")
    assert view["callback_id"] == "ask:reply"


@pytest.mark.parametrize("trigger", [None, "", 12, ["1.2.3"], {"id": "1.2.3"}])
async def test_a_click_without_a_trigger_is_told_so_and_slack_is_not_called(
    local_slack: LocalSlack, client: AsyncWebClient, trigger: object
) -> None:
    told = Respond()
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is False
    assert "without a way to open a form" in told.text() and "nothing was decided" in told.text()
    assert _opened(local_slack) == []


async def test_an_expired_trigger(
    local_slack: LocalSlack, client: AsyncWebClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    local_slack.trigger_ttl = 0.0
    told = Respond()
    trigger = local_slack.new_trigger_id(user_id="U0BOB")
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is False
    text = told.text()
    assert "could not open in time" in text and "3 seconds" in text and "Click the button again" in text
    assert [r["error"] for r in local_slack.rejected] == ["expired_trigger_id"]
    assert local_slack.open_views() == []
    assert [r.getMessage() for r in caplog.records if r.name == "bot.listeners.forms"] == [
        "views.open failed (expired_trigger_id); the clicker was told"
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


async def test_a_trigger_used_twice(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    trigger = local_slack.new_trigger_id(user_id="U0BOB")
    assert await open_view(client, respond=Respond().respond, trigger_id=trigger, view=VIEW) is True
    told = Respond()
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is False
    assert "`exchanged_trigger_id`" in told.text() and "nothing was decided" in told.text()


async def test_a_trigger_slack_never_issued(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    told = Respond()
    assert await open_view(client, respond=told.respond, trigger_id="1.2.forged", view=VIEW) is False
    assert "`invalid_arguments`" in told.text()


async def test_a_rate_limit_is_not_waited_out(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    limited = local_slack.inject_failures(method="views.open", status=429, retry_after=30)
    told = Respond()
    started = time.monotonic()
    trigger = local_slack.new_trigger_id(user_id="U0BOB")
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is False
    assert time.monotonic() - started < OPEN_BUDGET + 1, "a trigger lives 3 s; Retry-After: 30 is not waited"
    assert limited.served == 1, "one try, no retry"
    assert "rate-limiting" in told.text() and "Click the button again" in told.text()


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_server_error_is_not_retried(local_slack: LocalSlack, client: AsyncWebClient, status: int) -> None:
    broken = local_slack.inject_failures(method="views.open", status=status, times=None)
    told = Respond()
    trigger = local_slack.new_trigger_id(user_id="U0BOB")
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is False
    assert broken.served == 1, "one try, no retry"
    assert f"(`{status}`)" in told.text() and "nothing was decided" in told.text()


async def test_an_answer_too_late_counts_as_none(
    local_slack: LocalSlack, client: AsyncWebClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forms, "OPEN_BUDGET", 0.3)

    async def slow(event: str, details: dict[str, Any]) -> None:
        if event == "views.open":
            await asyncio.sleep(1.5)

    local_slack.on_change.append(slow)
    told = Respond()
    started = time.monotonic()
    trigger = local_slack.new_trigger_id(user_id="U0BOB")
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is False
    assert time.monotonic() - started < 1.2
    assert "did not open the form in time" in told.text()


async def test_nobody_answering(client: AsyncWebClient) -> None:
    nowhere = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url="http://127.0.0.1:9/api/")
    told = Respond()
    assert await open_view(nowhere, respond=told.respond, trigger_id="1.2.3", view=VIEW) is False
    assert "nothing was decided" in told.text() and "Click the button again" in told.text()


async def test_a_failing_note_is_logged_not_raised(
    local_slack: LocalSlack, client: AsyncWebClient, caplog: pytest.LogCaptureFixture
) -> None:
    local_slack.trigger_ttl = 0.0
    told = Respond(fails=True)
    trigger = local_slack.new_trigger_id(user_id="U0BOB")
    assert await open_view(client, respond=told.respond, trigger_id=trigger, view=VIEW) is False
    assert len(told.said) == 1
    assert "could not send an ephemeral note: ConnectionError" in caplog.text
    local_slack.rejected.clear()


async def test_say_is_ephemeral_and_leaves_the_card() -> None:
    told = Respond()
    await say(told.respond, "hello")
    assert told.said == [{"text": "hello", "response_type": "ephemeral", "replace_original": False}]
