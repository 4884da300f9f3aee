"""``usergroups.users.list`` and ``users.info`` of the local Slack, through slack_sdk's real client."""

from __future__ import annotations

from collections.abc import AsyncIterator

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


async def test_a_group_lists_the_members_a_test_gave_it(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL", "U0DAVE"])
    answer = await client.usergroups_users_list(usergroup="S0OPS")
    assert answer["ok"] is True and answer["users"] == ["U0CAROL", "U0DAVE"]
    local_slack.set_usergroup("S0OPS", ["U0DAVE"])
    assert (await client.usergroups_users_list(usergroup="S0OPS"))["users"] == ["U0DAVE"]
    local_slack.set_usergroup("S0OPS", [])
    assert (await client.usergroups_users_list(usergroup="S0OPS"))["users"] == []
    assert ("usergroups.users.list", {"usergroup": "S0OPS"}) in local_slack.calls


async def test_an_unknown_group_is_no_such_subteam(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    local_slack.remove_usergroup("S0OPS")
    for group in ("S0OPS", "S0NOBODY"):
        with pytest.raises(SlackApiError) as raised:
            await client.usergroups_users_list(usergroup=group)
        assert raised.value.response.data == {"ok": False, "error": "no_such_subteam"}


async def test_groups_can_be_given_up_front() -> None:
    slack = LocalSlack(usergroups={"S0SRE": ("U0ERIN",)})
    assert slack.usergroup_members("S0SRE") == ["U0ERIN"]
    assert slack.usergroup_members("S0OPS") is None
    with pytest.raises(TypeError):
        slack.set_usergroup("S0OPS", "U0CAROL")


async def test_users_info_knows_any_member_id(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    for user in ("U0CAROL", "U0DAVE", "W0ENTERPRISE"):
        answer = await client.users_info(user=user)
        assert answer["user"]["id"] == user and answer["user"]["name"] == f"user-{user.lower()}"
