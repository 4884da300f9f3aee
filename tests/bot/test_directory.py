"""``SlackDirectory`` against the local Slack over HTTP: members, channels, caching, shared lookups, failing closed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.directory import SlackDirectory
from bot.services import build_services
from bot.settings import load_settings
from localslack import LOCAL_BOT_TOKEN, LocalSlack

METHOD = "usergroups.users.list"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def client(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    # No retry handlers: a 5xx fails at once instead of after slack_sdk's backoff.
    web = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield web
    if web.session is not None:
        await web.session.close()


def lookups(slack: LocalSlack, group: str | None = None) -> int:
    return sum(1 for m, p in slack.calls if m == METHOD and group in (None, p.get("usergroup")))


async def test_members_are_the_groups_users(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL", "U0DAVE"])
    local_slack.set_usergroup("S0SRE", [])
    directory = SlackDirectory(client)
    assert await directory.members("S0OPS") == frozenset({"U0CAROL", "U0DAVE"})
    assert await directory.members("S0SRE") == frozenset()


async def test_members_are_cached_for_ttl_then_fetched_again(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    clock = Clock()
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    directory = SlackDirectory(client, ttl=60, clock=clock)
    assert await directory.members("S0OPS") == {"U0CAROL"}
    local_slack.set_usergroup("S0OPS", ["U0CAROL", "U0DAVE"])
    clock.now += 59
    assert await directory.members("S0OPS") == {"U0CAROL"}
    assert lookups(local_slack) == 1
    clock.now += 1
    assert await directory.members("S0OPS") == {"U0CAROL", "U0DAVE"}
    assert lookups(local_slack) == 2


async def test_concurrent_lookups_of_one_group_share_one_call(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    local_slack.set_usergroup("S0SRE", ["U0ERIN"])
    directory = SlackDirectory(client)
    got = await asyncio.gather(*[directory.members(g) for g in ["S0OPS"] * 5 + ["S0SRE"] * 3])
    assert got == [{"U0CAROL"}] * 5 + [{"U0ERIN"}] * 3
    assert (lookups(local_slack, "S0OPS"), lookups(local_slack, "S0SRE")) == (1, 1)


async def test_a_caller_giving_up_does_not_cancel_the_shared_lookup(
    local_slack: LocalSlack, client: AsyncWebClient
) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    directory = SlackDirectory(client)
    impatient = asyncio.ensure_future(directory.members("S0OPS"))
    patient = asyncio.ensure_future(directory.members("S0OPS"))
    await asyncio.sleep(0)
    impatient.cancel()
    assert await patient == {"U0CAROL"}
    assert lookups(local_slack) == 1


async def test_a_failed_refresh_fails_closed_with_one_warning_per_outage(
    local_slack: LocalSlack, client: AsyncWebClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Someone removed from a group loses its rights once the ttl has passed, however long
    Slack fails: members are never served staler than the ttl."""
    clock = Clock()
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    directory = SlackDirectory(client, ttl=60, clock=clock)
    assert await directory.members("S0OPS") == {"U0CAROL"}
    local_slack.set_usergroup("S0OPS", ["U0DAVE"])
    fault = local_slack.inject_failures(method=METHOD, status=500, times=None)
    clock.now += 59
    assert await directory.members("S0OPS") == {"U0CAROL"}, "within the ttl: cached"
    with caplog.at_level(logging.WARNING, logger="bot.directory"):
        for _ in range(3):
            clock.now += 61
            with pytest.raises(SlackApiError):
                await directory.members("S0OPS")
    assert fault.served == 3
    warnings = [r.getMessage() for r in caplog.records if r.name == "bot.directory"]
    assert len(warnings) == 1, warnings
    local_slack.clear_failures()
    assert await directory.members("S0OPS") == {"U0DAVE"}  # back, and up to date


async def test_channel_membership_is_cached_for_ttl_and_fails_closed(
    local_slack: LocalSlack, client: AsyncWebClient
) -> None:
    clock = Clock()
    local_slack.set_members("C0RUNS", ["U0ALICE"])
    directory = SlackDirectory(client, ttl=60, clock=clock)
    assert await directory.in_channel("U0ALICE", "C0RUNS")
    assert not await directory.in_channel("U0MALLORY", "C0RUNS")
    local_slack.set_members("C0RUNS", ["U0BOB"])
    local_slack.inject_failures(method="users.conversations", status=500, times=None)
    assert await directory.in_channel("U0ALICE", "C0RUNS"), "within the ttl: cached"
    clock.now += 60
    with pytest.raises(SlackApiError):
        await directory.in_channel("U0ALICE", "C0RUNS")


def test_the_ttl_can_be_shortened_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.directory import DEFAULT_TTL, ttl_from_environment

    monkeypatch.setenv("DIRECTORY_TTL_SECONDS", "2.5")
    assert ttl_from_environment() == 2.5
    for bad in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv("DIRECTORY_TTL_SECONDS", bad)
        assert ttl_from_environment() == DEFAULT_TTL


async def test_a_group_never_fetched_has_no_fallback(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    directory = SlackDirectory(client)
    with pytest.raises(SlackApiError) as raised:
        await directory.members("S0NOBODY")
    assert raised.value.response["error"] == "no_such_subteam"
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    local_slack.inject_failures(method=METHOD, status=503)
    with pytest.raises(SlackApiError):
        await directory.members("S0OPS")
    assert await directory.members("S0OPS") == {"U0CAROL"}  # a failure is not cached


def test_the_engine_gets_the_directory_and_the_settings(tmp_path: Path) -> None:
    settings = load_settings(
        SLACK_BOT_TOKEN="xoxb-x",
        SLACK_SIGNING_SECRET="s",
        SQLITE_PATH=str(tmp_path / "runs.sqlite3"),
        ASK_EXPIRES_AFTER="3600",
    )
    services = build_services(settings)
    engine = services.engine
    assert isinstance(engine._directory, SlackDirectory)
    assert engine._default_wait == 3600.0
