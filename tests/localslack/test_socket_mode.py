"""LocalSlack's Socket Mode against slack_sdk's real aiohttp client, Bolt's handler and a raw WebSocket."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from localslack import LOCAL_APP_TOKEN, LOCAL_BOT_TOKEN, LocalSlack, SocketModeTransport
from tests.support.slack import SlackUserFactory

CHANNEL = "C0TEST"
CARD = [
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": "Approve"}, "action_id": "approve", "value": "v"}
        ],
    }
]


async def _error(call: Any) -> str:
    with pytest.raises(SlackApiError) as raised:
        await call
    return str(raised.value.response["error"])


@pytest.fixture
async def web(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    client = AsyncWebClient(base_url=local_slack.api_url)
    yield client
    if client.session is not None:
        await client.session.close()


@pytest.fixture
async def bolt(local_slack: LocalSlack) -> AsyncIterator[AsyncSocketModeHandler]:
    """A Bolt app connected over Socket Mode exactly as ``approval-bot socket`` connects."""
    app = AsyncApp(client=AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url))

    @app.command("/graph")
    async def command(ack: AsyncAck, command: dict[str, Any]) -> None:
        await ack(text=f"got {command['text']} from {command['user_id']}")

    @app.action("approve")
    async def approve(ack: AsyncAck) -> None:
        await ack()

    handler = AsyncSocketModeHandler(app, LOCAL_APP_TOKEN)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    await local_slack.wait_for(lambda: local_slack.socket_mode.connected, timeout=5, what="the connection")
    yield handler
    await handler.close_async()  # type: ignore[no-untyped-call]


async def test_connections_open_needs_the_app_token(local_slack: LocalSlack, web: AsyncWebClient) -> None:
    opened = await web.apps_connections_open(app_token=LOCAL_APP_TOKEN)
    assert str(opened["url"]).startswith(local_slack.base_url.replace("http://", "ws://") + "socket/")

    assert await _error(web.apps_connections_open(app_token="xapp-wrong")) == "invalid_auth"
    assert await _error(web.apps_connections_open(app_token=LOCAL_BOT_TOKEN)) == "not_allowed_token_type"
    assert await _error(web.auth_test(token=LOCAL_APP_TOKEN)) == "not_allowed_token_type"
    assert [r["error"] for r in local_slack.rejected] == ["invalid_auth"] + ["not_allowed_token_type"] * 2


async def test_a_websocket_needs_an_issued_url(local_slack: LocalSlack, web: AsyncWebClient) -> None:
    url = str((await web.apps_connections_open(app_token=LOCAL_APP_TOKEN))["url"])
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(url.rsplit("/", 1)[0] + "/made-up")
        assert refused.value.status == 401
        async with session.ws_connect(url) as ws:
            hello = await ws.receive_json(timeout=5)
    assert hello["type"] == "hello" and hello["connection_info"] == {"app_id": local_slack.app_id}
    assert hello["num_connections"] == 1


async def test_envelopes_are_acked_with_the_response_payload(
    local_slack: LocalSlack, bolt: AsyncSocketModeHandler, slack_user: SlackUserFactory
) -> None:
    user = slack_user(transport=SocketModeTransport(socket_mode=local_slack.socket_mode))

    answer = await user.slash_command(text="run demo hi", user_id="U1", channel_id=CHANNEL)

    assert answer.status == 200 and answer.body == {"text": "got run demo hi from U1"}
    [sent] = local_slack.socket_mode.envelopes
    assert sent["envelope"]["type"] == "slash_commands" and sent["envelope"]["accepts_response_payload"] is True
    assert sent["envelope"]["payload"]["command"] == "/graph", "the same form fields as over HTTP, as an object"
    assert sent["ack"] == {"envelope_id": sent["envelope"]["envelope_id"], "payload": answer.body}
    assert [e["text"] for e in local_slack.ephemerals("U1")] == ["got run demo hi from U1"]

    message = local_slack.post_message(channel=CHANNEL, params={"text": "card", "blocks": CARD})
    clicked = await user.click(message=message, label="Approve", user_id="U2")

    assert clicked.status == 200 and clicked.body == "", "a bare ack, like an empty HTTP 200"
    interactive = local_slack.socket_mode.envelopes[-1]["envelope"]
    assert interactive["type"] == "interactive" and interactive["payload"]["type"] == "block_actions"
    assert local_slack.socket_mode.stray == []
    with pytest.raises(TypeError, match="raw HTTP"):
        await user.send_raw(body=b"x=1")


async def test_slack_asks_for_a_reconnect(
    local_slack: LocalSlack, bolt: AsyncSocketModeHandler, slack_user: SlackUserFactory
) -> None:
    await local_slack.socket_mode.disconnect()
    socket = local_slack.socket_mode
    await local_slack.wait_for(lambda: socket.connections_opened == 2 and socket.connected == 1, what="a reconnect")

    user = slack_user(transport=SocketModeTransport(socket_mode=socket))
    answer = await user.slash_command(text="again", user_id="U1", channel_id=CHANNEL)
    assert answer.body == {"text": "got again from U1"}


async def test_a_client_that_never_acks_times_out(
    local_slack: LocalSlack, web: AsyncWebClient, slack_user: SlackUserFactory
) -> None:
    user = slack_user(transport=SocketModeTransport(socket_mode=local_slack.socket_mode, timeout=0.3))
    with pytest.raises(ConnectionError, match="no Socket Mode connection"):
        await user.slash_command(text="x", user_id="U1", channel_id=CHANNEL)

    async with aiohttp.ClientSession() as session:
        url = str((await web.apps_connections_open(app_token=LOCAL_APP_TOKEN))["url"])
        async with session.ws_connect(url) as ws:
            assert (await ws.receive_json(timeout=5))["type"] == "hello"
            with pytest.raises(TimeoutError, match=r"did not ack the slash_commands envelope \S+ within 0\.3s"):
                await user.slash_command(text="x", user_id="U1", channel_id=CHANNEL)
            envelope = await ws.receive_json(timeout=5)
            late = json.dumps({"envelope_id": envelope["envelope_id"]})
            await ws.send_str(late)
            await local_slack.wait_for(lambda: local_slack.socket_mode.stray, timeout=5, what="the late ack")
    assert local_slack.socket_mode.stray == [{"envelope_id": envelope["envelope_id"]}]
    assert local_slack.socket_mode.envelopes[-1]["ack"] is None


async def test_a_socket_closed_before_the_ack_fails_the_delivery(
    local_slack: LocalSlack, web: AsyncWebClient, slack_user: SlackUserFactory
) -> None:
    user = slack_user(transport=SocketModeTransport(socket_mode=local_slack.socket_mode, timeout=5))
    url = str((await web.apps_connections_open(app_token=LOCAL_APP_TOKEN))["url"])
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await ws.receive_json(timeout=5)  # hello

        async def hang_up() -> None:
            await ws.receive_json(timeout=5)  # the envelope, never acked
            await ws.close()

        with pytest.raises(ConnectionError, match="closed before it acked"):
            await asyncio.gather(user.slash_command(text="x", user_id="U1", channel_id=CHANNEL), hang_up())
    assert local_slack.socket_mode.connected == 0
