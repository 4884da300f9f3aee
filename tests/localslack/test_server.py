"""LocalSlack driven by slack_sdk's real AsyncWebClient, as the bot drives it."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from localslack import LOCAL_BOT_TOKEN, LocalSlack

CHANNEL = "C0TEST"


@pytest.fixture
async def client(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    web = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield web
    if web.session is not None:
        await web.session.close()


async def api_error(call: Any) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as raised:
        await call
    data = raised.value.response.data
    assert isinstance(data, dict)
    return data


def section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(text: str = "Approve", *, action_id: str = "approve", value: str = "v") -> dict[str, Any]:
    return {"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": action_id, "value": value}


def modal(blocks: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Reply"}, "blocks": blocks or []}
    view["submit"] = {"type": "plain_text", "text": "Send"}
    return view | extra


def text_input(*, label: str = "Answer", **element: Any) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": "answer",
        "label": {"type": "plain_text", "text": label},
        "element": {"type": "plain_text_input", "action_id": "text", **element},
    }


# -- messages ------------------------------------------------------------------------------------


async def test_post_message_is_stored_and_recorded(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    first = await client.chat_postMessage(channel=CHANNEL, text="hello", blocks=[section("*hi*")])
    second = await client.chat_postMessage(channel=CHANNEL, text="again")
    assert re.fullmatch(r"\d{10}\.\d{6}", first["ts"])
    assert float(second["ts"]) > float(first["ts"])
    assert first["channel"] == CHANNEL and first["message"]["blocks"] == [section("*hi*")]
    assert [m["text"] for m in local_slack.messages(CHANNEL)] == ["hello", "again"]
    assert [method for method, _ in local_slack.calls] == ["chat.postMessage", "chat.postMessage"]
    assert "token" not in local_slack.calls[0][1]
    assert local_slack.rejected == []


async def test_form_encoded_blocks_are_decoded(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    data = {"channel": CHANNEL, "text": "t", "blocks": json.dumps([section("x")]), "reply_broadcast": "false"}
    await client.api_call("chat.postMessage", data=data)
    assert local_slack.messages(CHANNEL)[0]["blocks"] == [section("x")]


async def test_threads_and_broadcast(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await client.chat_postMessage(channel=CHANNEL, text="run started")
    reply = await client.chat_postMessage(channel=CHANNEL, text="card", thread_ts=parent["ts"])
    await client.chat_postMessage(channel=CHANNEL, text="done", thread_ts=reply["ts"], reply_broadcast=True)
    thread = local_slack.thread(CHANNEL, parent["ts"])
    assert [m["text"] for m in thread] == ["run started", "card", "done"]
    assert thread[0]["reply_count"] == 2 and thread[2]["thread_ts"] == parent["ts"]
    assert [m["text"] for m in local_slack.messages(CHANNEL, top_level=True)] == ["run started", "done"]


async def test_update_edits_and_keeps_blocks_not_given(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="card", blocks=[section("pending")])
    await client.chat_update(channel=CHANNEL, ts=posted["ts"], text="fallback only")
    assert local_slack.messages(CHANNEL)[0]["blocks"] == [section("pending")]
    updated = await client.chat_update(channel=CHANNEL, ts=posted["ts"], text="done", blocks=[section("ok")])
    assert updated["message"]["blocks"] == [section("ok")]
    [message] = local_slack.messages(CHANNEL)
    assert (message["text"], message["blocks"], message["ts"]) == ("done", [section("ok")], posted["ts"])
    assert "edited" in message


async def test_update_errors(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    error = await api_error(client.chat_update(channel=CHANNEL, ts="1.000001", text="x"))
    assert error["error"] == "message_not_found"
    human = local_slack.add_user_message(channel=CHANNEL, user="U1", text="mine")
    error = await api_error(client.chat_update(channel=CHANNEL, ts=human["ts"], text="x"))
    assert error["error"] == "cant_update_message"
    assert [r["error"] for r in local_slack.rejected] == ["message_not_found", "cant_update_message"]


async def test_delete(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="bye")
    await client.chat_delete(channel=CHANNEL, ts=posted["ts"])
    assert local_slack.messages(CHANNEL) == []
    assert (await api_error(client.chat_delete(channel=CHANNEL, ts=posted["ts"])))["error"] == "message_not_found"


async def test_ephemeral_is_per_user(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    sent = await client.chat_postEphemeral(channel=CHANNEL, user="U1", text="only you")
    assert sent["message_ts"]
    assert [e["text"] for e in local_slack.ephemerals("U1")] == ["only you"]
    assert local_slack.ephemerals("U2") == [] and local_slack.messages(CHANNEL) == []


async def test_users_and_conversations_info(client: AsyncWebClient) -> None:
    user = await client.users_info(user="U1")
    assert user["user"]["id"] == "U1" and user["user"]["profile"]["display_name"]
    channel = await client.conversations_info(channel=CHANNEL)
    assert channel["channel"]["id"] == CHANNEL
    assert (await api_error(client.users_info(user="nobody")))["error"] == "user_not_found"


async def test_auth(local_slack: LocalSlack) -> None:
    wrong = AsyncWebClient(token="xoxb-wrong", base_url=local_slack.api_url)
    assert (await api_error(wrong.chat_postMessage(channel=CHANNEL, text="x")))["error"] == "invalid_auth"
    anonymous = AsyncWebClient(base_url=local_slack.api_url)
    assert (await api_error(anonymous.auth_test()))["error"] == "not_authed"
    right = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    assert (await right.auth_test())["user_id"] == local_slack.bot_user_id
    assert (await api_error(right.api_call("files.upload")))["error"] == "unknown_method"
    assert local_slack.messages(CHANNEL) == []


# -- modals --------------------------------------------------------------------------------------


async def test_views_open_update_push(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    opened = await client.views_open(
        trigger_id=local_slack.new_trigger_id(user_id="U1"), view=modal([text_input()], callback_id="reply")
    )
    view = opened["view"]
    assert view["id"] and view["callback_id"] == "reply" and view["state"] == {"values": {}}
    assert [v["id"] for v in local_slack.open_views("U1")] == [view["id"]]
    updated = await client.views_update(view_id=view["id"], hash=view["hash"], view=modal([section("thanks")]))
    assert updated["view"]["id"] == view["id"] and local_slack.view(view["id"])["blocks"] == [section("thanks")]
    stale = await api_error(client.views_update(view_id=view["id"], hash=view["hash"], view=modal()))
    assert stale["error"] == "hash_conflict"
    pushed = await client.views_push(trigger_id=local_slack.new_trigger_id(user_id="U1"), view=modal())
    assert pushed["view"]["root_view_id"] == view["id"]
    assert len(local_slack.views) == 2


async def test_trigger_rules(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    unknown = await api_error(client.views_open(trigger_id="123.456.abc", view=modal()))
    assert unknown["error"] == "invalid_arguments"
    trigger = local_slack.new_trigger_id()
    await client.views_open(trigger_id=trigger, view=modal())
    assert (await api_error(client.views_open(trigger_id=trigger, view=modal())))["error"] == "exchanged_trigger_id"
    local_slack.trigger_ttl = 0.05
    late = local_slack.new_trigger_id()
    await asyncio.sleep(0.1)
    assert (await api_error(client.views_open(trigger_id=late, view=modal())))["error"] == "expired_trigger_id"


# -- response URLs -------------------------------------------------------------------------------


async def test_response_url_replace_original(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    card = await client.chat_postMessage(channel=CHANNEL, text="card", blocks=[section("approve?")])
    url = local_slack.new_response_url(channel=CHANNEL, message_ts=card["ts"], user="U1")
    sent = await AsyncWebhookClient(url).send(replace_original=True, text="Approved by <@U1>")
    assert sent.status_code == 200
    [message] = local_slack.messages(CHANNEL)
    assert (message["ts"], message["text"], message["blocks"]) == (card["ts"], "Approved by <@U1>", [])
    assert local_slack.responses[0]["effect"] == "replace_original"


async def test_response_url_ephemeral_in_channel_delete(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    card = await client.chat_postMessage(channel=CHANNEL, text="card")
    url = local_slack.new_response_url(channel=CHANNEL, message_ts=card["ts"], user="U1")
    webhook = AsyncWebhookClient(url)
    await webhook.send(text="just for you")
    await webhook.send(text="for everyone", response_type="in_channel")
    assert [e["text"] for e in local_slack.ephemerals("U1")] == ["just for you"]
    await webhook.send(delete_original=True)
    assert [m["text"] for m in local_slack.messages(CHANNEL)] == ["for everyone"]
    assert [r["effect"] for r in local_slack.responses] == ["ephemeral", "in_channel", "delete_original"]
    for _ in range(2):
        await webhook.send(text="more")
    assert (await webhook.send(text="sixth")).status_code == 404
    assert local_slack.rejected[-1]["error"] == "used_url"


async def test_response_url_validates_blocks(local_slack: LocalSlack) -> None:
    url = local_slack.new_response_url(channel=CHANNEL, user="U1")
    sent = await AsyncWebhookClient(url).send(text="x", blocks=[{"type": "nonsense"}])
    assert sent.status_code == 400 and json.loads(sent.body)["error"] == "invalid_blocks"
    assert local_slack.ephemerals() == []


# -- validation: each limit passes at the limit and fails one past it ----------------------------

MessageCase = Callable[[int], dict[str, Any]]


def actions(*elements: dict[str, Any], block_id: str = "a") -> dict[str, Any]:
    return {"type": "actions", "block_id": block_id, "elements": list(elements)}


MESSAGE_LIMITS: dict[str, tuple[int, MessageCase, str]] = {
    "blocks": (50, lambda n: {"blocks": [{"type": "divider"}] * n}, "/blocks]"),
    "section text": (3000, lambda n: {"blocks": [section("x" * n)]}, "/blocks/0/text/text"),
    "section fields": (
        10,
        lambda n: {"blocks": [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * n}]},
        "/blocks/0/fields]",
    ),
    "section field": (
        2000,
        lambda n: {"blocks": [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * n}]}]},
        "/blocks/0/fields/0/text",
    ),
    "header": (
        150,
        lambda n: {"blocks": [{"type": "header", "text": {"type": "plain_text", "text": "h" * n}}]},
        "/blocks/0/text/text",
    ),
    "context": (
        10,
        lambda n: {"blocks": [{"type": "context", "elements": [{"type": "mrkdwn", "text": "c"}] * n}]},
        "/blocks/0/elements]",
    ),
    "actions": (
        25,
        lambda n: {"blocks": [actions(*(button(action_id=f"b{i}") for i in range(n)))]},
        "/blocks/0/elements]",
    ),
    "button text": (75, lambda n: {"blocks": [actions(button("b" * n))]}, "/blocks/0/elements/0/text/text"),
    "button value": (2000, lambda n: {"blocks": [actions(button(value="v" * n))]}, "/blocks/0/elements/0/value"),
    "action_id": (255, lambda n: {"blocks": [actions(button(action_id="a" * n))]}, "/blocks/0/elements/0/action_id"),
    "block_id": (255, lambda n: {"blocks": [section("x", block_id="b" * n)]}, "/blocks/0/block_id"),
}


@pytest.mark.parametrize("rule", MESSAGE_LIMITS)
async def test_message_limits(local_slack: LocalSlack, client: AsyncWebClient, rule: str) -> None:
    limit, build, pointer = MESSAGE_LIMITS[rule]
    await client.chat_postMessage(channel=CHANNEL, text="fallback", **build(limit))
    assert local_slack.rejected == []
    error = await api_error(client.chat_postMessage(channel=CHANNEL, text="fallback", **build(limit + 1)))
    assert error["error"] == "invalid_blocks"
    assert len(error["errors"]) == 1 and f"[json-pointer:{pointer}" in error["errors"][0], error["errors"]
    assert [r["error"] for r in local_slack.rejected] == ["invalid_blocks"]
    assert len(local_slack.messages(CHANNEL)) == 1


INVALID_BLOCKS: dict[str, list[dict[str, Any]]] = {
    "unknown block type": [{"type": "carousel"}],
    "unknown element type": [actions({"type": "slider", "action_id": "s"})],
    "header needs plain_text": [{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}],
    "button text needs plain_text": [actions(button() | {"text": {"type": "mrkdwn", "text": "b"}})],
    "bad text type": [{"type": "section", "text": {"type": "html", "text": "x"}}],
    "empty text": [section("")],
    "duplicate action_id in a block": [actions(button(action_id="same"), button(action_id="same"))],
    "duplicate block_id": [section("a", block_id="same"), section("b", block_id="same")],
}


@pytest.mark.parametrize("case", INVALID_BLOCKS)
async def test_invalid_blocks(local_slack: LocalSlack, client: AsyncWebClient, case: str) -> None:
    error = await api_error(client.chat_postMessage(channel=CHANNEL, text="t", blocks=INVALID_BLOCKS[case]))
    assert error["error"] == "invalid_blocks"
    assert "json-pointer:/blocks/" in error["errors"][0]
    assert local_slack.rejected[0]["method"] == "chat.postMessage"


async def test_same_action_id_in_different_blocks_is_fine(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    blocks = [actions(button(), block_id="one"), actions(button(), block_id="two")]
    await client.chat_postMessage(channel=CHANNEL, text="t", blocks=blocks)
    assert local_slack.rejected == []


async def test_text_limits(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    await client.chat_postMessage(channel=CHANNEL, text="x" * 40_000)
    assert (await api_error(client.chat_postMessage(channel=CHANNEL, text="x" * 40_001)))["error"] == "msg_too_long"
    with pytest.warns(UserWarning, match="top-level `text`"):
        assert (await api_error(client.chat_postMessage(channel=CHANNEL)))["error"] == "no_text"
        assert (await api_error(client.chat_postEphemeral(channel=CHANNEL, user="U1")))["error"] == "no_text"
    assert [r["error"] for r in local_slack.rejected] == ["msg_too_long", "no_text", "no_text"]


ViewCase = Callable[[int], dict[str, Any]]
VIEW_LIMITS: dict[str, tuple[int, ViewCase, str]] = {
    "blocks": (100, lambda n: modal([{"type": "divider"}] * n), "/view/blocks]"),
    "title": (24, lambda n: modal(title={"type": "plain_text", "text": "t" * n}), "/view/title/text"),
    "submit": (24, lambda n: modal(submit={"type": "plain_text", "text": "s" * n}), "/view/submit/text"),
    "close": (24, lambda n: modal(close={"type": "plain_text", "text": "c" * n}), "/view/close/text"),
    "private_metadata": (3000, lambda n: modal(private_metadata="m" * n), "/view/private_metadata"),
    "callback_id": (255, lambda n: modal(callback_id="c" * n), "/view/callback_id"),
    "max_length": (3000, lambda n: modal([text_input(max_length=n)]), "/view/blocks/0/element/max_length"),
    "min_length": (
        3000,
        lambda n: modal([text_input(min_length=n, max_length=3000)]),
        "/view/blocks/0/element/min_length",
    ),
    "input label": (2000, lambda n: modal([text_input(label="l" * n)]), "/view/blocks/0/label/text"),
}


@pytest.mark.parametrize("rule", VIEW_LIMITS)
async def test_view_limits(local_slack: LocalSlack, client: AsyncWebClient, rule: str) -> None:
    limit, build, pointer = VIEW_LIMITS[rule]
    await client.views_open(trigger_id=local_slack.new_trigger_id(), view=build(limit))
    assert local_slack.rejected == []
    error = await api_error(client.views_open(trigger_id=local_slack.new_trigger_id(), view=build(limit + 1)))
    assert error["error"] == "invalid_arguments"
    assert len(error["errors"]) == 1 and f"[json-pointer:{pointer}" in error["errors"][0], error["errors"]
    assert error["response_metadata"]["messages"][0].startswith("[ERROR] ")
    assert len(local_slack.views) == 1


async def test_input_modal_needs_submit(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    view = modal([text_input()])
    del view["submit"]
    error = await api_error(client.views_open(trigger_id=local_slack.new_trigger_id(), view=view))
    assert "submit is required" in error["errors"][0]


# -- waiting and hooks ---------------------------------------------------------------------------


async def test_wait_for_wakes_on_new_calls(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    async def later() -> None:
        await asyncio.sleep(0.05)
        await client.chat_postMessage(channel=CHANNEL, text="first")
        await client.chat_postMessage(channel=CHANNEL, text="second")

    task = asyncio.create_task(later())
    found = await local_slack.wait_for(
        lambda: [m for m in local_slack.messages(CHANNEL) if m["text"] == "second"], timeout=5
    )
    assert found[0]["text"] == "second"
    await task


async def test_wait_for_timeout_says_what(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    await client.chat_postMessage(channel=CHANNEL, text="other")
    with pytest.raises(TimeoutError, match=r"the approval card did not happen within 0.1s.*chat.postMessage"):
        await local_slack.wait_for(lambda: None, timeout=0.1, what="the approval card")


async def test_on_change_hooks(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    seen: list[str] = []

    async def async_hook(event: str, details: dict[str, Any]) -> None:
        seen.append(f"async:{event}")

    def broken_hook(event: str, details: dict[str, Any]) -> None:
        raise RuntimeError("a broken renderer must not break the fake Slack")

    local_slack.on_change += [lambda event, details: seen.append(event), broken_hook, async_hook]
    await client.chat_postMessage(channel=CHANNEL, text="x")
    assert seen == ["chat.postMessage", "async:chat.postMessage"]


async def test_unparseable_form_blocks(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    data = {"channel": CHANNEL, "text": "t", "blocks": "[{not json"}
    assert (await api_error(client.api_call("chat.postMessage", data=data)))["error"] == "invalid_blocks_format"
    assert local_slack.calls[0][0] == "chat.postMessage" and local_slack.messages(CHANNEL) == []


def test_blocks_whose_texts_add_up_past_12k_are_refused_like_slack_does() -> None:
    from localslack.limits import check_message

    section = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 2999}}
    assert check_message({"blocks": [section] * 4}) is None  # 11,996 characters: accepted
    refused = check_message({"blocks": [section] * 5})  # 14,995: every block is fine, the sum is not
    assert refused is not None and refused[0] == "msg_blocks_too_long"
