"""usergroups.list, users.conversations, channel membership, auth.test's url and chat.getPermalink over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from localslack import LOCAL_BOT_TOKEN, LocalSlack


@pytest.fixture
async def client(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    web = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield web
    if web.session is not None:
        await web.session.close()


async def api_error(call: Any) -> str:
    with pytest.raises(SlackApiError) as raised:
        await call
    return str(raised.value.response["error"])


# -- usergroups.list -------------------------------------------------------------------------------


async def test_usergroups_list_with_and_without_users(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    assert (await client.usergroups_list())["usergroups"] == []
    local_slack.set_usergroup("S0OPS", ["U0CAROL", "U0DAVE"], handle="ops-oncall", name="Ops on call")
    local_slack.set_usergroup("S0SRE", ["U0ERIN"])
    plain = (await client.usergroups_list())["usergroups"]
    assert [(g["id"], g["handle"], g["name"]) for g in plain] == [
        ("S0OPS", "ops-oncall", "Ops on call"),
        ("S0SRE", "s0sre", "s0sre"),
    ]
    assert all("users" not in g and "user_count" not in g and g["team_id"] == "T0LOCAL" for g in plain)

    full = (await client.usergroups_list(include_users=True, include_count=True))["usergroups"]
    assert [(g["id"], g["users"], g["user_count"]) for g in full] == [
        ("S0OPS", ["U0CAROL", "U0DAVE"], 2),
        ("S0SRE", ["U0ERIN"], 1),
    ]
    local_slack.set_usergroup("S0OPS", ["U0DAVE"])  # an admin edits it: the handle stays
    local_slack.remove_usergroup("S0SRE")
    again = (await client.usergroups_list(include_users=True))["usergroups"]
    assert [(g["handle"], g["users"]) for g in again] == [("ops-oncall", ["U0DAVE"])]
    assert (await client.usergroups_users_list(usergroup="S0OPS"))["users"] == ["U0DAVE"]
    assert [m for m, _ in local_slack.calls].count("usergroups.list") == 4


# -- users.conversations ---------------------------------------------------------------------------


async def test_users_conversations_follows_membership(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    for channel in ("C0A", "C0B", "C0C"):
        local_slack.post_message(channel=channel, params={"text": "hi"})
    local_slack.set_members("C0B", ["U0DAVE"])
    local_slack.set_members("G0SECRET", ["U0CAROL", "U0DAVE"])

    async def ids(**params: Any) -> list[str]:
        return [c["id"] for c in (await client.users_conversations(**params))["channels"]]

    assert await ids(user="U0CAROL") == ["C0A", "C0C"], "public channels only, by default"
    assert await ids(user="U0DAVE") == ["C0A", "C0B", "C0C"]
    both = await ids(user="U0CAROL", types="public_channel,private_channel")
    assert both == ["C0A", "C0C", "G0SECRET"]
    assert await ids(user="U0CAROL", types=["private_channel"]) == ["G0SECRET"]
    local_slack.set_members("C0A", [])
    assert await ids(user="U0CAROL") == ["C0C"]
    assert await ids() == ["C0C"], "without user: the bot's own channels"

    secret = (await client.users_conversations(user="U0DAVE", types="private_channel"))["channels"][0]
    assert secret["is_private"] is True and secret["is_group"] is True and secret["name"] == "channel-g0secret"
    dm = local_slack.dm_channel("U0CAROL")
    [im] = (await client.users_conversations(user="U0CAROL", types="im"))["channels"]
    assert (im["id"], im["is_im"], im["user"]) == (dm, True, "U0CAROL")
    assert await ids(user="U0DAVE", types="im") == []

    assert await api_error(client.users_conversations(user="nobody")) == "user_not_found"
    assert await api_error(client.users_conversations(user="U0CAROL", types="chats")) == "invalid_types"
    assert await api_error(client.users_conversations(user="U0CAROL", cursor="%%")) == "invalid_cursor"
    with pytest.raises(TypeError):
        local_slack.set_members("C0A", "U0CAROL")
    with pytest.raises(ValueError, match="not a conversation id"):
        local_slack.set_members("general", ["U0CAROL"])


async def test_users_conversations_pages_with_a_cursor(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    channels = [f"C0{i:02d}" for i in range(5)]
    for channel in channels:
        local_slack.set_members(channel, ["U0CAROL"])
    first = await client.users_conversations(user="U0CAROL", limit=2)
    assert [c["id"] for c in first["channels"]] == channels[:2] and first["response_metadata"]["next_cursor"]
    pages = [
        [c["id"] for c in page["channels"]] async for page in await client.users_conversations(user="U0CAROL", limit=2)
    ]
    assert pages == [channels[:2], channels[2:4], channels[4:]]
    whole = await client.users_conversations(user="U0CAROL")
    assert whole["response_metadata"]["next_cursor"] == "" and len(whole["channels"]) == 5


async def test_a_roster_limits_who_is_a_member_of_an_unset_channel() -> None:
    slack = LocalSlack(users={"U0CAROL": "carol"}, channels={"C0DEMO": "demo"})
    assert slack.is_member("C0DEMO", "U0CAROL") and not slack.is_member("C0DEMO", "U0STRANGER")
    assert slack.knows_user(slack.bot_user_id) and not slack.knows_user("nobody")
    slack.set_members("C0DEMO", ["U0NEW"])
    assert slack.knows_user("U0NEW") and not slack.is_member("C0DEMO", "U0CAROL")


# -- links -----------------------------------------------------------------------------------------


async def test_auth_test_url_and_permalinks(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    url = (await client.auth_test())["url"]
    assert url == "https://local.slack.com/"
    parent = await client.chat_postMessage(channel="C0LINK", text="run")
    reply = await client.chat_postMessage(channel="C0LINK", text="card", thread_ts=parent["ts"])
    top = await client.chat_getPermalink(channel="C0LINK", message_ts=parent["ts"])
    assert top["channel"] == "C0LINK"
    assert top["permalink"] == f"{url}archives/C0LINK/p{parent['ts'].replace('.', '')}"
    threaded = (await client.chat_getPermalink(channel="C0LINK", message_ts=reply["ts"]))["permalink"]
    assert threaded == f"{url}archives/C0LINK/p{reply['ts'].replace('.', '')}?thread_ts={parent['ts']}&cid=C0LINK"
    assert await api_error(client.chat_getPermalink(channel="C0LINK", message_ts="1.000001")) == "message_not_found"
    assert await api_error(client.chat_getPermalink(channel="nope", message_ts=parent["ts"])) == "channel_not_found"


async def test_the_url_follows_the_team_domain() -> None:
    slack = LocalSlack(team_domain="acme-ops")
    await slack.start()
    web = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=slack.api_url)
    try:
        assert (await web.auth_test())["url"] == "https://acme-ops.slack.com/"
        posted = await web.chat_postMessage(channel="C0X", text="x")
        link = (await web.chat_getPermalink(channel="C0X", message_ts=posted["ts"]))["permalink"]
        assert link.startswith("https://acme-ops.slack.com/archives/C0X/p")
    finally:
        await web.session.close() if web.session else None
        await slack.stop()
