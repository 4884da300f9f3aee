"""Message metadata, conversations.replies/history and chat.delete, through slack_sdk over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.metadata import Metadata
from slack_sdk.web.async_client import AsyncWebClient

from localslack import LIMITS, LOCAL_BOT_TOKEN, LocalSlack

CHANNEL = "C0CONV"
STAMP = {"event_type": "approval_card", "event_payload": {"run_id": "r-1", "attempt": 2, "final": False}}


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


async def thread_of(client: AsyncWebClient, *, replies: int) -> tuple[str, list[str]]:
    parent = await client.chat_postMessage(channel=CHANNEL, text="run started")
    tss = [
        (await client.chat_postMessage(channel=CHANNEL, text=f"r{i}", thread_ts=parent["ts"]))["ts"]
        for i in range(replies)
    ]
    return parent["ts"], tss


# -- metadata ------------------------------------------------------------------------------------


async def test_metadata_round_trip_only_when_asked(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await client.chat_postMessage(channel=CHANNEL, text="run started")
    card = await client.chat_postMessage(channel=CHANNEL, text="card", thread_ts=parent["ts"], metadata=STAMP)
    plain = await client.conversations_replies(channel=CHANNEL, ts=parent["ts"])
    assert [m["text"] for m in plain["messages"]] == ["run started", "card"]
    assert all("metadata" not in m for m in plain["messages"])
    full = await client.conversations_replies(channel=CHANNEL, ts=card["ts"], include_all_metadata=True)
    assert [m.get("metadata") for m in full["messages"]] == [None, STAMP]
    assert local_slack.message(CHANNEL, card["ts"])["metadata"] == STAMP  # type: ignore[index]


async def test_metadata_model_and_form_encoding(client: AsyncWebClient) -> None:
    model = Metadata(event_type="run_done", event_payload={"run_id": "r-2"})
    await client.chat_postMessage(channel=CHANNEL, text="done", metadata=model)
    await client.api_call("chat.postMessage", data={"channel": CHANNEL, "text": "f", "metadata": json.dumps(STAMP)})
    history = await client.conversations_history(channel=CHANNEL, include_all_metadata=True)
    assert [m["metadata"]["event_type"] for m in history["messages"]] == ["approval_card", "run_done"]


async def test_update_keeps_replaces_or_removes_metadata(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="card", metadata=STAMP)
    ts = posted["ts"]
    await client.chat_update(channel=CHANNEL, ts=ts, text="edited")
    assert local_slack.message(CHANNEL, ts)["metadata"] == STAMP  # type: ignore[index]
    decided = {"event_type": "approval_card", "event_payload": {"run_id": "r-1", "verdict": "approve"}}
    await client.chat_update(channel=CHANNEL, ts=ts, text="approved", metadata=decided)
    assert local_slack.message(CHANNEL, ts)["metadata"] == decided  # type: ignore[index]
    await client.chat_update(channel=CHANNEL, ts=ts, text="approved", metadata={})
    assert "metadata" not in local_slack.message(CHANNEL, ts)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"event_type": "has space", "event_payload": {}}, "invalid_metadata_schema"),
        ({"event_type": "x" * (LIMITS["metadata.event_type"] + 1), "event_payload": {}}, "invalid_metadata_schema"),
        ({"event_type": "", "event_payload": {}}, "invalid_metadata_schema"),
        ({"event_type": "ok"}, "invalid_metadata_schema"),
        ({"event_type": "ok", "event_payload": ["not", "an", "object"]}, "invalid_metadata_schema"),
        ({"event_type": "ok", "event_payload": {}, "extra": 1}, "invalid_metadata_schema"),
        ("not json", "invalid_metadata_format"),
        (["a", "list"], "invalid_metadata_format"),
    ],
)
async def test_bad_metadata_is_refused(
    local_slack: LocalSlack, client: AsyncWebClient, metadata: Any, error: str
) -> None:
    data = {
        "channel": CHANNEL,
        "text": "x",
        "metadata": metadata if isinstance(metadata, str) else json.dumps(metadata),
    }
    assert await api_error(client.api_call("chat.postMessage", data=data)) == error
    posted = await client.chat_postMessage(channel=CHANNEL, text="ok")
    assert await api_error(client.api_call("chat.update", data={**data, "ts": posted["ts"]})) == error
    assert [m["text"] for m in local_slack.messages(CHANNEL)] == ["ok"]


async def test_longest_event_type_is_accepted(client: AsyncWebClient) -> None:
    event_type = "a_1" * (LIMITS["metadata.event_type"] // 3)
    await client.chat_postMessage(channel=CHANNEL, text="x", metadata={"event_type": event_type, "event_payload": {}})


# -- conversations.replies -----------------------------------------------------------------------


async def test_replies_paginate_oldest_first(client: AsyncWebClient) -> None:
    parent, replies = await thread_of(client, replies=4)
    first = await client.conversations_replies(channel=CHANNEL, ts=parent, limit=2)
    assert [m["ts"] for m in first["messages"]] == [parent, replies[0]]
    assert first["has_more"] is True and first["response_metadata"]["next_cursor"]
    second = await client.conversations_replies(
        channel=CHANNEL, ts=parent, limit=2, cursor=first["response_metadata"]["next_cursor"]
    )
    assert [m["ts"] for m in second["messages"]] == replies[1:3]
    pages = [
        [m["ts"] for m in page["messages"]]
        async for page in await client.conversations_replies(channel=CHANNEL, ts=parent, limit=2)
    ]
    assert pages == [[parent, replies[0]], replies[1:3], replies[3:]]


async def test_replies_by_reply_ts_window_and_unthreaded(client: AsyncWebClient) -> None:
    parent, replies = await thread_of(client, replies=3)
    whole = await client.conversations_replies(channel=CHANNEL, ts=replies[1])
    assert [m["ts"] for m in whole["messages"]] == [parent, *replies]
    assert whole["messages"][0]["reply_count"] == 3 and whole["has_more"] is False
    assert whole["response_metadata"]["next_cursor"] == ""
    since = await client.conversations_replies(channel=CHANNEL, ts=parent, oldest=replies[0])
    assert [m["ts"] for m in since["messages"]] == [parent, *replies[1:]]  # the parent always leads
    inclusive = await client.conversations_replies(channel=CHANNEL, ts=parent, oldest=replies[0], inclusive=True)
    assert [m["ts"] for m in inclusive["messages"]] == [parent, *replies]
    lone = await client.chat_postMessage(channel=CHANNEL, text="alone")
    only = await client.conversations_replies(channel=CHANNEL, ts=lone["ts"])
    assert [m["text"] for m in only["messages"]] == ["alone"] and "channel" not in only["messages"][0]


async def test_replies_errors(client: AsyncWebClient) -> None:
    parent, _ = await thread_of(client, replies=1)
    assert await api_error(client.conversations_replies(channel=CHANNEL, ts="1.000001")) == "thread_not_found"
    assert await api_error(client.conversations_replies(channel="nope", ts=parent)) == "channel_not_found"
    assert await api_error(client.conversations_replies(channel="C0OTHER", ts=parent)) == "thread_not_found"
    assert await api_error(client.conversations_replies(channel=CHANNEL, ts=parent, cursor="%%")) == "invalid_cursor"
    assert await api_error(client.conversations_replies(channel=CHANNEL, ts=parent, oldest="x")) == "invalid_ts_oldest"
    assert await api_error(client.conversations_replies(channel=CHANNEL, ts=parent, latest="y")) == "invalid_ts_latest"


# -- conversations.history -----------------------------------------------------------------------


async def test_history_is_top_level_newest_first(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent, replies = await thread_of(client, replies=2)
    await client.chat_postMessage(channel=CHANNEL, text="broadcast", thread_ts=parent, reply_broadcast=True)
    human = local_slack.add_user_message(channel=CHANNEL, user="U1", text="hi")
    later = await client.chat_postMessage(channel=CHANNEL, text="later")
    history = await client.conversations_history(channel=CHANNEL)
    assert [m["text"] for m in history["messages"]] == ["later", "hi", "broadcast", "run started"]
    assert history["has_more"] is False
    pages = [
        [m["text"] for m in page["messages"]]
        async for page in await client.conversations_history(channel=CHANNEL, limit=3)
    ]
    assert pages == [["later", "hi", "broadcast"], ["run started"]]
    window = await client.conversations_history(channel=CHANNEL, oldest=parent, latest=later["ts"])
    assert [m["text"] for m in window["messages"]] == ["hi", "broadcast"]
    assert human["ts"] not in replies
    assert (await client.conversations_history(channel="C0EMPTY"))["messages"] == []
    assert await api_error(client.conversations_history(channel="bad")) == "channel_not_found"


async def test_history_cursor_survives_a_delete_between_pages(client: AsyncWebClient) -> None:
    tss = [(await client.chat_postMessage(channel=CHANNEL, text=f"m{i}"))["ts"] for i in range(4)]
    first = await client.conversations_history(channel=CHANNEL, limit=2)
    assert [m["text"] for m in first["messages"]] == ["m3", "m2"]
    await client.chat_delete(channel=CHANNEL, ts=tss[1])  # the first message of the next page
    rest = await client.conversations_history(
        channel=CHANNEL, limit=2, cursor=first["response_metadata"]["next_cursor"]
    )
    assert [m["text"] for m in rest["messages"]] == ["m0"]


# -- chat.delete ---------------------------------------------------------------------------------


async def test_delete_removes_from_history_and_thread(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent, replies = await thread_of(client, replies=2)
    await client.chat_delete(channel=CHANNEL, ts=replies[0])
    thread = await client.conversations_replies(channel=CHANNEL, ts=parent)
    assert [m["ts"] for m in thread["messages"]] == [parent, replies[1]]
    assert thread["messages"][0]["reply_count"] == 1
    await client.chat_delete(channel=CHANNEL, ts=parent)
    assert (await client.conversations_history(channel=CHANNEL))["messages"] == []
    assert await api_error(client.chat_delete(channel=CHANNEL, ts=parent)) == "message_not_found"
    assert await api_error(client.conversations_replies(channel=CHANNEL, ts=parent)) == "thread_not_found"
    human = local_slack.add_user_message(channel=CHANNEL, user="U1", text="mine")
    assert await api_error(client.chat_delete(channel=CHANNEL, ts=human["ts"])) == "cant_delete_message"
