"""The load bench's Slack runs in a process of its own and still answers what the bench asks.

The bench moved the local Slack out of the servers' process so that its work no longer
takes the acks' turn of the interpreter (``bench/_slack_apart.py``). These tests hold the
process to what the bench relies on: a real Web API at the address it gives, the bodies of
a person's commands and clicks on its pending cards, and its count of calls.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bench._slack_apart import SlackApart
from bench.ack_latency import CHANNEL


async def test_the_slack_process_serves_the_web_api_and_builds_what_a_person_sends() -> None:
    slack = await SlackApart.start()
    try:
        client = AsyncWebClient(token=slack.bot_token, base_url=slack.api_url.rstrip("/") + "/")
        assert await slack.calls() == 0
        posted = await client.chat_postMessage(channel=CHANNEL, text="hello")
        assert posted["ok"] and await slack.calls() == 1, "the bot's call reached the process"
        assert await slack.pending() == 0, "a message without Approve is no card"

        [[body]] = await slack.bodies([[{"kind": "run", "text": "run bench-ask x"}]])
        form = parse_qs(body.decode())
        assert form["command"] == ["/graph"] and form["text"] == ["run bench-ask x"]
        assert form["channel_id"] == [CHANNEL]

        with pytest.raises(RuntimeError, match="no pending card"):
            await slack.bodies([[{"kind": "click"}]])
        assert await slack.rejected() == []
    finally:
        await slack.stop()


async def test_the_slack_process_runs_at_the_workers_low_priority() -> None:
    slack = await SlackApart.start()
    try:
        pid = slack._process.pid
        with open(f"/proc/{pid}/stat") as stat:
            nice = int(stat.read().rsplit(")", 1)[1].split()[16])
        assert nice == min(os.nice(0) + 19, 19)
    finally:
        await slack.stop()
