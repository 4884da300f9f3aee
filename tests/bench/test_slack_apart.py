"""The load bench's Slack runs in a process of its own and still answers what the bench asks.

The bench moved the local Slack out of the servers' process so that its work no longer
holds the acks' interpreter lock (``bench/_slack_apart.py``). These tests hold the process
to what the bench relies on: a real Web API at the address it gives, the bodies of a
person's commands and of clicks on its pending cards (in order, each card once), the cards
still pending, its count of calls, and surviving a request it cannot answer.
"""

from __future__ import annotations

import json
import os
from urllib.parse import parse_qs

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bench._slack_apart import SlackApart
from bench.ack_latency import CHANNEL

LABEL = {"type": "plain_text", "text": "Approve"}
APPROVE = {"type": "button", "action_id": "ask:approve", "text": LABEL, "value": "a"}
CARD = [{"type": "actions", "elements": [APPROVE]}]


async def test_the_slack_process_serves_the_web_api_and_builds_what_a_person_sends() -> None:
    slack = await SlackApart.start()
    try:
        client = AsyncWebClient(token=slack.bot_token, base_url=slack.api_url)
        assert await slack.calls() == 0
        posted = await client.chat_postMessage(channel=CHANNEL, text="hello")
        assert posted["ok"] and await slack.calls() == 1, "the bot's call reached the process"
        assert await slack.pending() == set(), "a message without Approve is no card"

        first = await client.chat_postMessage(channel=CHANNEL, text="card 1", blocks=CARD)
        second = await client.chat_postMessage(channel=CHANNEL, text="card 2", blocks=CARD)
        assert await slack.pending() == {first["ts"], second["ts"]}

        # One card iterator for the whole call: the second burst's click takes the next card.
        bursts, clicked = await slack.bodies(
            [[{"kind": "run", "text": "run bench-ask x"}, {"kind": "click"}], [{"kind": "click"}]]
        )
        assert clicked == [first["ts"], second["ts"]]
        command = parse_qs(bursts[0][0].decode())
        assert command["command"] == ["/graph"] and command["text"] == ["run bench-ask x"]
        clicks = [json.loads(parse_qs(body.decode())["payload"][0]) for body in (bursts[0][1], bursts[1][0])]
        assert [c["message"]["ts"] for c in clicks] == clicked
        assert all(c["actions"][0]["action_id"] == "ask:approve" for c in clicks)

        with pytest.raises(RuntimeError, match="no pending card"):
            await slack.bodies([[{"kind": "click"}] * 3])
        assert await slack.rejected() == []
    finally:
        await slack.stop()


async def test_a_round_larger_than_asyncio_s_line_limit_and_a_bad_request_leave_it_serving() -> None:
    slack = await SlackApart.start()
    try:
        many = [{"kind": "run", "text": f"run bench-ask {'x' * 900} {i}"} for i in range(80)]
        (bodies,), _ = await slack.bodies([many])
        assert len(bodies) == 80 and sum(len(b) for b in bodies) > 64 * 1024, "one answer line over 64 KB"

        with pytest.raises(RuntimeError, match="KeyError"):
            await slack.bodies([[{"kind": "run"}]])  # no text: the process answers with an error
        assert await slack.calls() == 0, "and still serves"
    finally:
        await slack.stop()


async def test_the_slack_process_runs_at_the_bench_s_own_priority() -> None:
    """Never below it: a Slack that yields the CPU to ours would flatter ours."""
    slack = await SlackApart.start()
    try:
        with open(f"/proc/{slack._process.pid}/stat") as stat:
            nice = int(stat.read().rsplit(")", 1)[1].split()[16])
        assert nice == os.nice(0)
    finally:
        await slack.stop()
