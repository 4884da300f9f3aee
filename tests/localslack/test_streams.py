"""Streamed replies (chat.startStream/appendStream/stopStream) through slack_sdk's real client over HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import pairwise
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import DividerBlock
from slack_sdk.models.messages.chunk import MarkdownTextChunk, PlanUpdateChunk, TaskUpdateChunk
from slack_sdk.web.async_client import AsyncWebClient

from localslack import LIMITS, LOCAL_BOT_TOKEN, LocalSlack

CHANNEL = "C0STREAM"
DM = "D0CAROL"
TO: dict[str, Any] = {"recipient_user_id": "U0CAROL", "recipient_team_id": "T0LOCAL"}
STAMP = {"event_type": "run_answer", "event_payload": {"run_id": "r-1"}}


@asynccontextmanager
async def started(**options: Any) -> AsyncIterator[tuple[LocalSlack, AsyncWebClient]]:
    slack = LocalSlack(**options)
    await slack.start()
    web = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=slack.api_url)
    try:
        yield slack, web
    finally:
        if web.session is not None:
            await web.session.close()
        await slack.stop()


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


async def parent_in(client: AsyncWebClient, channel: str = CHANNEL) -> str:
    return str((await client.chat_postMessage(channel=channel, text="what changed in prod?"))["ts"])


def stream_of(slack: LocalSlack, ts: str, channel: str = CHANNEL) -> dict[str, Any]:
    message = slack.message(channel, ts)
    assert message is not None
    return dict(message["stream"])


# -- the happy path --------------------------------------------------------------------------------


async def test_a_stream_grows_a_thread_reply_then_becomes_an_ordinary_message(
    local_slack: LocalSlack, client: AsyncWebClient
) -> None:
    parent = await parent_in(client)
    start = await client.chat_startStream(channel=CHANNEL, thread_ts=parent, markdown_text="Looking", **TO)
    ts = str(start["ts"])
    assert start["channel"] == CHANNEL
    await client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text=" at the deploy log.")
    assert local_slack.message(CHANNEL, ts)["text"] == "Looking at the deploy log."  # type: ignore[index]
    assert stream_of(local_slack, ts)["state"] == "streaming"
    assert [m["ts"] for m in local_slack.thread(CHANNEL, parent)] == [parent, ts]

    stopped = await client.chat_stopStream(
        channel=CHANNEL, ts=ts, markdown_text=" Nothing changed.", blocks=[DividerBlock()], metadata=STAMP
    )
    assert stopped["message"]["text"] == "Looking at the deploy log. Nothing changed."
    assert "stream" not in stopped["message"]
    stream = stream_of(local_slack, ts)
    assert (stream["state"], stream["ended_by"], stream["recipient_user_id"]) == ("stopped", "stop", "U0CAROL")

    replies = await client.conversations_replies(channel=CHANNEL, ts=parent, include_all_metadata=True)
    shown = replies["messages"][1]
    assert (shown["ts"], shown["metadata"], shown["blocks"]) == (ts, STAMP, [{"type": "divider"}])
    assert "stream" not in shown, "the stream record is for tests; Slack shows no such field"
    assert replies["messages"][0]["reply_count"] == 1

    await client.chat_update(channel=CHANNEL, ts=ts, text="Nothing changed (edited).")
    assert local_slack.message(CHANNEL, ts)["text"] == "Nothing changed (edited)."  # type: ignore[index]
    assert local_slack.rejected == []


async def test_tasks_and_plan_accumulate(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await parent_in(client)
    start = await client.chat_startStream(
        channel=CHANNEL,
        thread_ts=parent,
        task_display_mode="plan",
        chunks=[
            PlanUpdateChunk(title="Check the deploy"),
            TaskUpdateChunk(id="fetch", title="Fetch logs", status="in_progress", details="from S3"),
        ],
        **TO,
    )
    ts = str(start["ts"])
    source = {"type": "url", "url": "https://example.com/log", "text": "the log"}
    await client.chat_appendStream(
        channel=CHANNEL,
        ts=ts,
        chunks=[
            TaskUpdateChunk(id="fetch", title="Fetched logs", status="complete", details=", 3 files", output="ok"),
            {"type": "task_update", "id": "diff", "title": "Diff", "status": "pending", "sources": [source]},
            MarkdownTextChunk(text="Two changes found."),
        ],
    )
    stream = stream_of(local_slack, ts)
    assert (stream["display"], stream["plan"], stream["markdown"]) == ("plan", "Check the deploy", "Two changes found.")
    assert stream["tasks"] == {
        "fetch": {"title": "Fetched logs", "status": "complete", "details": "from S3, 3 files", "output": "ok"},
        "diff": {"title": "Diff", "status": "pending", "details": "", "output": "", "sources": [source]},
    }
    text = local_slack.message(CHANNEL, ts)["text"]  # type: ignore[index]
    assert text.splitlines() == ["Check the deploy", "✓ Fetched logs", "○ Diff", "Two changes found."]
    await client.chat_stopStream(
        channel=CHANNEL, ts=ts, chunks=[TaskUpdateChunk(id="diff", title="Diff", status="error", output="timeout")]
    )
    assert stream_of(local_slack, ts)["tasks"]["diff"]["status"] == "error"


async def test_slack_sdks_chat_stream_helper(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await parent_in(client)
    streamer = await client.chat_stream(channel=CHANNEL, thread_ts=parent, buffer_size=6, **TO)
    for word in ("Deploy ", "looks ", "fine."):
        await streamer.append(markdown_text=word)
    await streamer.stop(blocks=[DividerBlock()])
    assert streamer.ts is not None
    assert [m for m, _ in local_slack.calls if m.startswith("chat.")][1:] == [
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    ]
    message = local_slack.message(CHANNEL, streamer.ts)
    assert message is not None and message["text"] == "Deploy looks fine." and message["stream"]["state"] == "stopped"


async def test_in_a_dm_no_recipient_is_needed(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await parent_in(client, DM)
    start = await client.chat_startStream(channel=DM, thread_ts=parent, markdown_text="hi")
    assert stream_of(local_slack, str(start["ts"]), DM)["recipient_user_id"] is None


# -- what Slack refuses ------------------------------------------------------------------------------


async def test_start_refusals(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await parent_in(client)
    reply = str((await client.chat_postMessage(channel=CHANNEL, text="r", thread_ts=parent))["ts"])
    elsewhere = await parent_in(client, "C0OTHER")
    start = client.chat_startStream
    longest = "x" * LIMITS["stream.markdown_text"]

    assert await api_error(start(channel="nope", thread_ts=parent, **TO)) == "channel_not_found"
    assert await api_error(client.api_call("chat.startStream", json={"channel": CHANNEL, **TO})) == "invalid_thread_ts"
    for bad in ("1.000001", reply, elsewhere):
        assert await api_error(start(channel=CHANNEL, thread_ts=bad, **TO)) == "invalid_thread_ts", bad
    only_team = start(channel=CHANNEL, thread_ts=parent, recipient_team_id="T0LOCAL")
    assert await api_error(only_team) == "missing_recipient_user_id"
    only_user = start(channel=CHANNEL, thread_ts=parent, recipient_user_id="U0CAROL")
    assert await api_error(only_user) == "missing_recipient_team_id"
    assert (
        await api_error(start(channel=CHANNEL, thread_ts=parent, markdown_text=longest + "x", **TO)) == "msg_too_long"
    )
    both = start(channel=CHANNEL, thread_ts=parent, markdown_text="a", chunks=[MarkdownTextChunk(text="b")], **TO)
    assert await api_error(both) == "invalid_arguments"
    timeline = start(channel=CHANNEL, thread_ts=parent, task_display_mode="gantt", **TO)
    assert await api_error(timeline) == "invalid_arguments"

    assert [m["ts"] for m in local_slack.thread(CHANNEL, parent)] == [parent, reply], "nothing was posted"
    await start(channel=CHANNEL, thread_ts=parent, markdown_text=longest, **TO)


@pytest.mark.parametrize(
    "chunks",
    [
        "not a list",
        ["not an object"],
        [{"type": "poem", "text": "x"}],
        [{"text": "no type"}],
        [{"type": "markdown_text"}],
        [{"type": "markdown_text", "text": "x" * (LIMITS["stream.markdown_text"] + 1)}],
        [{"type": "markdown_text", "text": "x", "bold": True}],
        [{"type": "task_update", "title": "no id", "status": "pending"}],
        [{"type": "task_update", "id": "t", "status": "pending"}],
        [{"type": "task_update", "id": "t", "title": "x" * (LIMITS["stream.task_title"] + 1), "status": "pending"}],
        [{"type": "task_update", "id": "t", "title": "T", "status": "done"}],
        [{"type": "task_update", "id": "t", "title": "T", "status": "pending", "details": 3}],
        [{"type": "task_update", "id": "t", "title": "T", "status": "pending", "sources": [{"url": "u"}]}],
        [{"type": "plan_update", "title": ""}],
        [{"type": "plan_update", "title": "x" * (LIMITS["stream.plan_title"] + 1)}],
        [{"type": "blocks", "blocks": [{"type": "section"}]}],
        [{"type": "blocks", "blocks": "not blocks"}],
    ],
)
async def test_bad_chunks_are_invalid_chunks(local_slack: LocalSlack, client: AsyncWebClient, chunks: Any) -> None:
    parent = await parent_in(client)
    body = {"channel": CHANNEL, "thread_ts": parent, "chunks": chunks, **TO}
    assert await api_error(client.api_call("chat.startStream", json=body)) == "invalid_chunks"
    ts = str((await client.chat_startStream(channel=CHANNEL, thread_ts=parent, **TO))["ts"])
    for method in ("chat.appendStream", "chat.stopStream"):
        answer = await api_error(client.api_call(method, json={"channel": CHANNEL, "ts": ts, "chunks": chunks}))
        assert answer == "invalid_chunks", method
    if not isinstance(chunks, str):  # a string is not even JSON: nothing more to say
        assert local_slack.rejected[0]["errors"], "each refusal says what was wrong"
    assert stream_of(local_slack, ts)["state"] == "streaming"


async def test_longest_titles_and_form_encoded_chunks(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await parent_in(client)
    title = "t" * LIMITS["stream.task_title"]
    chunks = [{"type": "task_update", "id": "t", "title": title, "status": "in_progress"}]
    form = {"channel": CHANNEL, "thread_ts": parent, "chunks": json.dumps(chunks), **TO}
    ts = str((await client.api_call("chat.startStream", data=form))["ts"])
    assert stream_of(local_slack, ts)["tasks"]["t"]["title"] == title
    bad = {"channel": CHANNEL, "ts": ts, "chunks": "[not json"}
    assert await api_error(client.api_call("chat.appendStream", data=bad)) == "invalid_chunks"


async def test_append_and_stop_need_a_live_stream_of_this_app(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await parent_in(client)
    ts = str((await client.chat_startStream(channel=CHANNEL, thread_ts=parent, **TO))["ts"])
    human = local_slack.add_user_message(channel=CHANNEL, user="U0CAROL", text="mine", thread_ts=parent)
    for method in (client.chat_appendStream, client.chat_stopStream):
        for channel, named in ((CHANNEL, "1.000001"), (CHANNEL, parent), (CHANNEL, human["ts"]), ("C0OTHER", ts)):
            assert await api_error(method(channel=channel, ts=named, markdown_text="x")) == "message_not_found"
    assert await api_error(client.chat_appendStream(channel=CHANNEL, ts=ts)) == "invalid_arguments"

    assert await api_error(client.chat_update(channel=CHANNEL, ts=ts, text="early")) == "streaming_state_conflict"
    bad_blocks = client.chat_stopStream(channel=CHANNEL, ts=ts, blocks=[{"type": "section"}])
    assert await api_error(bad_blocks) == "invalid_blocks"
    too_many = client.chat_stopStream(channel=CHANNEL, ts=ts, blocks=[{"type": "divider"}] * 51)
    assert await api_error(too_many) == "invalid_blocks"
    bad_stamp = client.chat_stopStream(channel=CHANNEL, ts=ts, metadata={"event_type": "has space"})
    assert await api_error(bad_stamp) == "invalid_metadata_schema"
    assert stream_of(local_slack, ts)["state"] == "streaming", "a refused stop stops nothing"

    await client.chat_stopStream(channel=CHANNEL, ts=ts)
    assert await api_error(client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="x")) == (
        "message_not_in_streaming_state"
    )
    assert await api_error(client.chat_stopStream(channel=CHANNEL, ts=ts)) == "message_not_in_streaming_state"


async def test_a_stream_ends_by_itself_after_its_lifetime() -> None:
    async with started(stream_lifetime=0.2) as (slack, client):
        parent = await parent_in(client)
        ts = str((await client.chat_startStream(channel=CHANNEL, thread_ts=parent, markdown_text="slow", **TO))["ts"])
        await client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text=" still")
        events: list[str] = []
        slack.on_change.append(lambda event, details: events.append(event))
        await slack.wait_for(lambda: stream_of(slack, ts)["state"] == "stopped", timeout=2, what="the stream's end")
        assert events == ["stream_expired"], "Slack ended it, with no call from anyone"
        assert stream_of(slack, ts) | {"markdown": ""} == stream_of(slack, ts) | {
            "state": "stopped",
            "ended_by": "lifetime",
            "markdown": "",
        }
        late = client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text=" more")
        assert await api_error(late) == "message_not_in_streaming_state"
        await client.chat_update(channel=CHANNEL, ts=ts, text="slow still (finished by update)")
        assert slack.message(CHANNEL, ts)["text"] == "slow still (finished by update)"  # type: ignore[index]


async def test_a_workspace_without_streaming_makes_the_bot_fall_back() -> None:
    async with started(streaming=False) as (slack, client):
        parent = await parent_in(client)
        assert await api_error(client.chat_startStream(channel=CHANNEL, thread_ts=parent, **TO)) == (
            "feature_not_enabled"
        )
        assert await api_error(client.chat_appendStream(channel=CHANNEL, ts=parent, markdown_text="x")) == (
            "feature_not_enabled"
        )
        assert await api_error(client.chat_stopStream(channel=CHANNEL, ts=parent)) == "feature_not_enabled"
        reply = await client.chat_postMessage(channel=CHANNEL, thread_ts=parent, text="Looking")
        await client.chat_update(channel=CHANNEL, ts=reply["ts"], text="Looking... done")
        assert [m["text"] for m in slack.thread(CHANNEL, parent)] == ["what changed in prod?", "Looking... done"]
        assert [r["error"] for r in slack.rejected] == ["feature_not_enabled"] * 3


# -- pacing ----------------------------------------------------------------------------------------


async def test_calls_carry_when_they_came_and_what_they_got(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    parent = await parent_in(client)
    ts = str((await client.chat_startStream(channel=CHANNEL, thread_ts=parent, **TO))["ts"])
    for word in ("a", "b"):
        await client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text=word)
        await asyncio.sleep(0.05)
    await client.chat_stopStream(channel=CHANNEL, ts=ts)
    await api_error(client.chat_stopStream(channel=CHANNEL, ts=ts))
    await client.chat_update(channel=CHANNEL, ts=ts, text="ab")

    writes = local_slack.message_calls(CHANNEL, ts)
    assert [c.method for c in writes] == [
        "chat.startStream",
        "chat.appendStream",
        "chat.appendStream",
        "chat.stopStream",
        "chat.stopStream",
        "chat.update",
    ]
    assert [c.ok for c in writes] == [True, True, True, True, False, True]
    assert writes[4].result == {"ok": False, "error": "message_not_in_streaming_state"}
    gaps = [b.at - a.at for a, b in pairwise(writes)]
    assert all(gap >= 0 for gap in gaps) and gaps[1] >= 0.04
    assert [c.method for c in local_slack.message_calls(CHANNEL, parent)] == ["chat.postMessage"]
    method, params = local_slack.calls[0]  # still a (method, params) pair
    assert (
        (method, params) == local_slack.calls[0] == ("chat.postMessage", {"channel": CHANNEL, "text": params["text"]})
    )


async def test_a_deleted_stream_is_gone_and_update_answers_show_no_stream(
    local_slack: LocalSlack, client: AsyncWebClient
) -> None:
    parent = await parent_in(client)
    ts = str((await client.chat_startStream(channel=CHANNEL, thread_ts=parent, markdown_text="x", **TO))["ts"])
    await client.chat_delete(channel=CHANNEL, ts=ts)
    assert await api_error(client.chat_update(channel=CHANNEL, ts=ts, text="y")) == "message_not_found"
    assert await api_error(client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="y")) == "message_not_found"
    assert local_slack.thread(CHANNEL, parent)[0]["reply_count"] == 0

    ts = str((await client.chat_startStream(channel=CHANNEL, thread_ts=parent, markdown_text="x", **TO))["ts"])
    await client.chat_stopStream(channel=CHANNEL, ts=ts)
    updated = await client.chat_update(channel=CHANNEL, ts=ts, text="final")
    assert updated["message"]["text"] == "final" and "stream" not in updated["message"]
