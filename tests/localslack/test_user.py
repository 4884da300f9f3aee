"""LocalSlackUser against a raw echo server (signatures, encoding) and a real Bolt AsyncApp."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from localslack import LOCAL_BOT_TOKEN, LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser
from tests.support.slack import SlackUserFactory

CHANNEL = "C0TEST"
CARD = [
    {"type": "section", "block_id": "question", "text": {"type": "mrkdwn", "text": "Delete the prod table?"}},
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {
                "type": "button",
                "text": {"type": "plain_text", "text": label},
                "action_id": label.lower(),
                "value": f"run-1:{label.lower()}",
            }
            for label in ("Approve", "Reject", "Reply")
        ],
    },
]
REPLY_MODAL = {
    "type": "modal",
    "callback_id": "reply",
    "private_metadata": "run-1",
    "title": {"type": "plain_text", "text": "Reply"},
    "submit": {"type": "plain_text", "text": "Send"},
    "blocks": [
        {
            "type": "input",
            "block_id": "answer",
            "label": {"type": "plain_text", "text": "Your answer"},
            "element": {"type": "plain_text_input", "action_id": "text", "max_length": 500},
        }
    ],
}


async def serve(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/slack/events"
    await runner.cleanup()


@pytest.fixture
async def echo() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An app that records each request and answers whether its Slack signature verifies."""
    received: list[dict[str, Any]] = []
    verifier = SignatureVerifier(LOCAL_SIGNING_SECRET)

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        valid = verifier.is_valid(
            body=body,
            timestamp=request.headers.get("X-Slack-Request-Timestamp"),
            signature=request.headers.get("X-Slack-Signature"),
        )
        received.append({"body": body, "headers": dict(request.headers), "valid": valid})
        return web.json_response({"valid": valid})

    app = web.Application()
    app.router.add_post("/slack/events", handle)
    async for url in serve(app):
        yield url, received


async def test_signatures_verify(echo: tuple[str, list[dict[str, Any]]], slack_user: SlackUserFactory) -> None:
    url, received = echo
    user = slack_user(bot_url=url)
    response = await user.slash_command(text="run demo hello", user_id="U1", channel_id=CHANNEL)
    assert response.status == 200 and response.body == {"valid": True}
    form = {k: v[0] for k, v in parse_qs(received[0]["body"].decode()).items()}
    assert form["command"] == "/graph" and form["text"] == "run demo hello" and form["user_id"] == "U1"
    assert form["response_url"].startswith(user.slack.base_url) and form["trigger_id"]
    assert received[0]["headers"]["Content-Type"] == "application/x-www-form-urlencoded"

    assert (await user.send_raw(body=b"x=1", sign=False)).body == {"valid": False}
    assert (await user.send_raw(body=b"x=1", signature="v0=" + "0" * 64)).body == {"valid": False}
    stale = str(int(time.time()) - 600)
    assert (await user.send_raw(body=b"x=1", timestamp=stale)).body == {"valid": False}
    assert (await user.send_raw(body=b"x=1")).body == {"valid": True}


async def test_wrong_secret_does_not_verify(echo: tuple[str, list[dict[str, Any]]], local_slack: LocalSlack) -> None:
    url, _ = echo
    async with LocalSlackUser(bot_url=url, signing_secret="other", slack=local_slack) as user:
        assert (await user.send_raw(body=b"x=1")).body == {"valid": False}


async def test_click_payload_shape(
    echo: tuple[str, list[dict[str, Any]]], local_slack: LocalSlack, slack_user: SlackUserFactory
) -> None:
    url, received = echo
    message = local_slack.post_message(channel=CHANNEL, params={"text": "card", "blocks": CARD})
    await slack_user(bot_url=url).click(message=message, label="Reject", user_id="U1")
    payload = json.loads(parse_qs(received[0]["body"].decode())["payload"][0])
    assert payload["type"] == "block_actions"
    assert payload["container"] == {
        "type": "message",
        "message_ts": message["ts"],
        "channel_id": CHANNEL,
        "is_ephemeral": False,
    }
    [action] = payload["actions"]
    assert (action["action_id"], action["block_id"], action["value"]) == ("reject", "decide", "run-1:reject")
    assert payload["message"]["blocks"] == CARD and payload["user"]["id"] == "U1"


async def test_click_needs_a_shown_button(local_slack: LocalSlack, slack_user: SlackUserFactory) -> None:
    message = local_slack.post_message(channel=CHANNEL, params={"text": "card", "blocks": CARD})
    user = slack_user(bot_url="http://127.0.0.1:9/unused")
    with pytest.raises(LookupError, match="buttons shown: \\['Approve', 'Reject', 'Reply'\\]"):
        await user.click(message=message, label="Maybe", user_id="U1")
    local_slack.edit_message(channel=CHANNEL, ts=message["ts"], user=None, params={"blocks": []}, replace=False)
    with pytest.raises(LookupError, match="no button"):
        await user.click(message=message, label="Approve", user_id="U1")


# -- through a real Bolt app ---------------------------------------------------------------------


@pytest.fixture
async def bolt(local_slack: LocalSlack) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """A minimal Bolt AsyncApp: the approval flow in miniature, served over HTTP."""
    got: dict[str, Any] = {}
    client = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    app = AsyncApp(signing_secret=LOCAL_SIGNING_SECRET, client=client)  # token comes from the client

    @app.command("/graph")
    async def command(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        await ack(text=f"Starting {command['text']}")
        await respond(text="posted in channel", response_type="in_channel")

    @app.action("approve")
    async def approve(ack: AsyncAck, action: dict[str, Any], body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        got["approve"] = (action["value"], body["user"]["id"])
        await respond(replace_original=True, text=f"Approved by <@{body['user']['id']}>")

    @app.action("reply")
    async def reply(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=REPLY_MODAL)

    @app.view("reply")
    async def submitted(ack: AsyncAck, view: dict[str, Any], body: dict[str, Any]) -> None:
        text = view["state"]["values"]["answer"]["text"]["value"]
        if text == "bad":
            await ack(response_action="errors", errors={"answer": "Say more"})
            return
        await ack()
        got["reply"] = (text, view["private_metadata"], body["user"]["id"])

    async for url in serve(app.web_app(path="/slack/events")):
        yield url, got
    await client.session.close() if client.session else None


Clicker = Callable[..., Awaitable[Any]]


async def test_bolt_command_and_click(
    bolt: tuple[str, dict[str, Any]], local_slack: LocalSlack, slack_user: SlackUserFactory
) -> None:
    url, got = bolt
    user = slack_user(bot_url=url)
    ack = await user.slash_command(text="run demo", user_id="U1", channel_id=CHANNEL)
    assert local_slack.calls[0][0] == "auth.test"  # Bolt's single-workspace authorization
    assert (ack.status, ack.body) == (200, "Starting run demo")  # Bolt acks a command as text/plain
    assert [e["text"] for e in local_slack.ephemerals("U1")] == ["Starting run demo"]
    assert [m["text"] for m in local_slack.messages(CHANNEL)] == ["posted in channel"]

    card = local_slack.post_message(channel=CHANNEL, params={"text": "card", "blocks": CARD})
    response = await user.click(message=card, label="Approve", user_id="U2")
    assert response.status == 200
    assert got["approve"] == ("run-1:approve", "U2")
    edited = local_slack.message(CHANNEL, card["ts"])
    assert edited is not None and edited["text"] == "Approved by <@U2>" and edited["blocks"] == []
    assert local_slack.rejected == []


async def test_bolt_reply_modal_submission(
    bolt: tuple[str, dict[str, Any]], local_slack: LocalSlack, slack_user: SlackUserFactory
) -> None:
    url, got = bolt
    user = slack_user(bot_url=url)
    card = local_slack.post_message(channel=CHANNEL, params={"text": "card", "blocks": CARD})
    await user.click(message=card, label="Reply", user_id="U3")
    [view] = await local_slack.wait_for(lambda: local_slack.open_views("U3"), what="the reply modal")
    assert view["callback_id"] == "reply"

    with pytest.raises(ValueError, match="required"):
        await user.submit_view(view=view, values={}, user_id="U3")
    refused = await user.submit_view(view=view, values={"answer": {"text": "bad"}}, user_id="U3")
    assert refused.body == {"response_action": "errors", "errors": {"answer": "Say more"}}
    assert local_slack.open_views("U3") != []

    await user.submit_view(view=view, values={"answer": {"text": "use staging"}}, user_id="U3")
    assert got["reply"] == ("use staging", "run-1", "U3")
    assert local_slack.open_views("U3") == []
    assert local_slack.view(view["id"])["state"]["values"]["answer"]["text"] == {
        "type": "plain_text_input",
        "value": "use staging",
    }
    assert local_slack.rejected == []


async def test_bolt_rejects_unsigned(bolt: tuple[str, dict[str, Any]], slack_user: SlackUserFactory) -> None:
    url, _ = bolt
    user = slack_user(bot_url=url)
    body = b"command=%2Fgraph&text=help&user_id=U1&channel_id=C1"
    assert (await user.send_raw(body=body, sign=False)).status == 401
    assert (await user.send_raw(body=body, timestamp=str(int(time.time()) - 600))).status == 401


async def test_click_on_ephemeral(
    echo: tuple[str, list[dict[str, Any]]], local_slack: LocalSlack, slack_user: SlackUserFactory
) -> None:
    url, received = echo
    shown = local_slack.post_ephemeral(channel=CHANNEL, user="U1", params={"text": "card", "blocks": CARD})
    await slack_user(bot_url=url).click(message=shown, label="approve", user_id="U1")
    payload = json.loads(parse_qs(received[0]["body"].decode())["payload"][0])
    assert payload["container"]["is_ephemeral"] is True and "message" not in payload
    assert payload["actions"][0]["text"]["text"] == "Approve"


async def test_view_ack_actions(local_slack: LocalSlack) -> None:
    """What Slack does with the bot's answer to a submission: close, update, errors for real inputs only."""
    opened = local_slack.open_view(view=REPLY_MODAL, user="U1", push=False)
    assert (
        local_slack.apply_view_ack(
            view_id=opened["id"], status=200, body={"response_action": "errors", "errors": {"nope": "x"}}
        )
        == "errors"
    )
    assert local_slack.rejected[-1]["method"] == "view_submission_ack"
    done = REPLY_MODAL | {"blocks": [], "submit": {"type": "plain_text", "text": "OK"}}
    assert (
        local_slack.apply_view_ack(view_id=opened["id"], status=200, body={"response_action": "update", "view": done})
        == "updated"
    )
    assert local_slack.view(opened["id"])["blocks"] == []
    assert local_slack.apply_view_ack(view_id=opened["id"], status=200, body="") == "closed"
    assert local_slack.open_views() == []
