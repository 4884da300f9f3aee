"""The Slack publisher against the local Slack over HTTP: metadata on every message, and
finding a message whose posting was never recorded (only this bot's messages count)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.publisher import EVENT_TYPE, SlackPublisher
from bot.slack_client import web_client
from engine.policy import AskRules
from engine.ports import FINAL
from engine.records import Ask, AskStatus, Decision, Run, RunStatus, Verdict
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


def _stored(local_slack: LocalSlack, ts: str) -> dict[str, Any]:
    message = local_slack.message(CHANNEL, ts)
    assert message is not None, f"no message {ts} in {CHANNEL}"
    return message


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
    stored = _stored(local_slack, card.ts)
    assert stored["metadata"]["event_payload"] == {"run_id": run.run_id, "what": "k1"}, "ids only"


async def test_notices_are_posted_in_the_thread_and_found_by_their_metadata(
    local_slack: LocalSlack, client: AsyncWebClient
) -> None:
    publisher = SlackPublisher(client=client)
    rules = AskRules(
        approvers=("U0ALICE",), quorum=2, expires_at=time.time() + 3600, escalate_at=1.0, escalate_to=("S0LEADS",)
    )
    run = _run()
    ask = replace(run.asks["k1"], rules=rules, notices=("skip", "remind", "escalate"), escalated=True)
    thread = await publisher.run_started(run=run, channel=CHANNEL)
    run = run.evolve(thread=thread, asks={"k1": ask})
    card = await publisher.post_card(run=run, ask=ask)
    ask = replace(ask, card=card)
    run = run.evolve(asks={"k1": ask})

    assert await publisher.find_posted(run=run, what="k1:notice:1") is None
    reminder = await publisher.post_notice(run=run, ask=ask, index=1)
    escalation = await publisher.post_notice(run=run, ask=ask, index=2)
    assert reminder.channel == CHANNEL
    assert await publisher.find_posted(run=run, what="k1:notice:1") == reminder
    assert await publisher.find_posted(run=run, what="k1:notice:2") == escalation
    assert await publisher.find_posted(run=run, what="k1") == card, "a notice is not taken for the card"

    stored = _stored(local_slack, reminder.ts)
    assert stored["thread_ts"] == thread.ts
    assert stored["metadata"]["event_payload"] == {"run_id": run.run_id, "what": "k1:notice:1"}
    assert stored["text"].startswith(":bell: Reminder: <@U0ALICE>")
    assert "<!subteam^S0LEADS> may now decide" in _stored(local_slack, escalation.ts)["text"]


async def test_a_card_with_a_vote_is_updated_live_and_a_cancellation_names_who(
    local_slack: LocalSlack, client: AsyncWebClient
) -> None:
    publisher = SlackPublisher(client=client)
    run = _run()
    thread = await publisher.run_started(run=run, channel=CHANNEL)
    run = run.evolve(thread=thread)
    card = await publisher.post_card(run=run, ask=run.asks["k1"])
    voted = replace(
        run.asks["k1"],
        card=card,
        rules=AskRules(quorum=2),
        votes={"U0ALICE": Decision(verdict=Verdict.APPROVE, user="U0ALICE", at=1.0)},
    )
    assert voted.view == "live:1"
    await publisher.update_card(run=run.evolve(asks={"k1": voted}), ask=voted)
    blocks = _stored(local_slack, card.ts)["blocks"]
    assert any(b["type"] == "actions" for b in blocks), "a card still waiting keeps its buttons"
    assert "Approvals: 1 of 2 — <@U0ALICE>" in str(blocks)

    cancelled = run.evolve(status=RunStatus.CANCELLED, cancelled_by="U0CANCEL")
    final = await publisher.post_final(run=cancelled)
    assert "was cancelled by <@U0CANCEL>" in _stored(local_slack, final.ts)["text"]
