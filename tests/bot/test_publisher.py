"""The Slack publisher against the local Slack over HTTP: metadata on every message, and
finding a message whose posting was never recorded (only this bot's messages count)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.publisher import EVENT_TYPE, SlackPublisher
from bot.slack_client import web_client
from engine.ports import FINAL
from engine.records import Ask, AskStatus, Run, RunStatus
from localslack import LOCAL_BOT_TOKEN, LocalSlack

CHANNEL = "C0PUBLISH"


@pytest.fixture
async def client(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    made = web_client(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield made
    if made.session is not None:
        await made.session.close()


def _run(**changes: object) -> Run:
    now = time.time()
    ask = Ask(
        key="k1", interrupt_id="i1", name="approve", reason="ok?", node_id="n", status=AskStatus.PENDING, created_at=now
    )
    run = Run(
        run_id="run1",
        graph="g",
        task="t",
        started_by="U0",
        channel=CHANNEL,
        status=RunStatus.WAITING,
        version=1,
        created_at=now,
        updated_at=now,
        asks={"k1": ask},
    )
    return run.evolve(**changes)


async def test_a_posted_card_is_found_by_its_metadata_and_a_look_alike_is_not(
    local_slack: LocalSlack, client: AsyncWebClient
) -> None:
    publisher = SlackPublisher(client=client)
    run = _run()
    thread = await publisher.run_started(run=run, channel=CHANNEL)
    run = run.evolve(thread=thread)
    assert await publisher.find_posted(run=run, what="") == thread, "the announcement, found in the channel"
    assert await publisher.find_posted(run=run, what="k1") is None, "nothing posted for the ask yet"

    # Another app posts a message with metadata that looks like ours, in the same thread.
    fake = local_slack.post_message(
        channel=CHANNEL,
        params={
            "text": "not a card",
            "thread_ts": thread.ts,
            "metadata": {"event_type": EVENT_TYPE, "event_payload": {"run_id": run.run_id, "what": "k1"}},
        },
    )
    local_slack._channels[CHANNEL][fake["ts"]]["bot_id"] = "B0SOMEONEELSE"  # type: ignore[attr-defined]
    assert await publisher.find_posted(run=run, what="k1") is None, "only this bot's messages count"

    card = await publisher.post_card(run=run, ask=run.asks["k1"])
    assert await publisher.find_posted(run=run, what="k1") == card
    assert await publisher.find_posted(run=run, what=FINAL) is None
    final = await publisher.post_final(run=run.evolve(status=RunStatus.COMPLETED, output="done"))
    assert await publisher.find_posted(run=run, what=FINAL) == final
    stored = local_slack.message(CHANNEL, card.ts)
    assert stored["metadata"]["event_payload"] == {"run_id": run.run_id, "what": "k1"}, "ids only"
