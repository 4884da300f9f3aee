"""App Home: views.publish over HTTP, and app_home_opened / Home tab clicks delivered to Bolt both ways."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from localslack import LOCAL_APP_TOKEN, LOCAL_BOT_TOKEN, LOCAL_SIGNING_SECRET, LocalSlack, SocketModeTransport
from tests.support.slack import SlackUserFactory

CAROL = "U0CAROL"


def button(text: str, *, action_id: str, value: str) -> dict[str, Any]:
    return {"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": action_id, "value": value}


def home(*runs: str, header: str = "Your approvals") -> dict[str, Any]:
    """A Home tab listing ``runs``, each with an Open button that shares one action_id."""
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": header}}]
    for run in runs:
        blocks.append(
            {
                "type": "section",
                "block_id": f"run-{run}",
                "text": {"type": "mrkdwn", "text": f"Run *{run}* waits for you"},
                "accessory": button("Open", action_id="open_run", value=run),
            }
        )
    blocks.append({"type": "actions", "elements": [button("Refresh", action_id="refresh", value="all")]})
    return {"type": "home", "callback_id": "home", "blocks": blocks}


MODAL = {"type": "modal", "title": {"type": "plain_text", "text": "Run"}, "blocks": []}


@pytest.fixture
async def client(local_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    web_client = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url)
    yield web_client
    if web_client.session is not None:
        await web_client.session.close()


async def api_error(call: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as raised:
        await call
    return raised.value


@asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/slack/events"
    await runner.cleanup()


# -- views.publish ---------------------------------------------------------------------------------


async def test_one_home_view_per_person_with_a_fresh_hash(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    assert local_slack.home(CAROL) is None
    first = (await client.views_publish(user_id=CAROL, view=home("r-1")))["view"]
    assert first["id"].startswith("V") and first["type"] == "home" and first["state"] == {"values": {}}
    assert local_slack.home(CAROL) == first
    second = (await client.views_publish(user_id=CAROL, view=home("r-1", "r-2"), hash=first["hash"]))["view"]
    assert second["id"] == first["id"] and second["hash"] != first["hash"]
    assert [b.get("block_id") for b in second["blocks"]][1:3] == ["run-r-1", "run-r-2"]

    stale = await api_error(client.views_publish(user_id=CAROL, view=home(), hash=first["hash"]))
    assert stale.response["error"] == "hash_conflict"
    assert local_slack.home(CAROL) == second, "a refused publish changes nothing"
    other = (await client.views_publish(user_id="U0DAVE", view=home()))["view"]
    assert other["id"] != first["id"] and local_slack.home("U0DAVE") == other
    assert [m for m, _ in local_slack.calls] == ["views.publish"] * 4
    assert local_slack.calls[0][1]["user_id"] == CAROL and local_slack.calls[0].result == {"ok": True, "view": first}


async def test_publish_refusals(local_slack: LocalSlack, client: AsyncWebClient) -> None:
    for nobody in ("nobody", "B0BOT", ""):
        refused = await api_error(client.api_call("views.publish", json={"user_id": nobody, "view": home()}))
        assert refused.response["error"] == "user_not_found", nobody
    divider = {"type": "divider"}
    too_long = await api_error(client.views_publish(user_id=CAROL, view={"type": "home", "blocks": [divider] * 101}))
    assert too_long.response["error"] == "invalid_arguments"
    assert too_long.response["errors"] == ["no more than 100 items allowed [json-pointer:/view/blocks]"]
    bad_block = await api_error(client.views_publish(user_id=CAROL, view={"type": "home", "blocks": [{"type": "x"}]}))
    assert bad_block.response["error"] == "invalid_arguments"
    as_modal = await api_error(client.views_publish(user_id=CAROL, view=MODAL))
    assert "must be home [json-pointer:/view/type]" in as_modal.response["errors"]
    assert local_slack.home(CAROL) is None
    await client.views_publish(user_id=CAROL, view={"type": "home", "blocks": [divider] * 100})


async def test_a_workspace_with_a_roster_knows_only_its_people() -> None:
    slack = LocalSlack(users={CAROL: "carol"}, usergroups={"S0OPS": ["U0ERIN"]})
    await slack.start()
    web_client = AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=slack.api_url)
    try:
        for known in (CAROL, "U0ERIN"):
            await web_client.views_publish(user_id=known, view=home())
        refused = await api_error(web_client.views_publish(user_id="U0STRANGER", view=home()))
        assert refused.response["error"] == "user_not_found"
    finally:
        await web_client.session.close() if web_client.session else None
        await slack.stop()


# -- what Slack sends the bot, seen raw --------------------------------------------------------------


@pytest.fixture
async def echo() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An app that records each request and whether its Slack signature verifies."""
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
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/slack/events", handle)
    async with serve(app) as url:
        yield url, received


async def test_app_home_opened_is_a_signed_json_event_callback(
    echo: tuple[str, list[dict[str, Any]]],
    local_slack: LocalSlack,
    slack_user: SlackUserFactory,
    client: AsyncWebClient,
) -> None:
    url, received = echo
    user = slack_user(bot_url=url)
    assert (await user.open_home(user_id=CAROL)).status == 200
    published = (await client.views_publish(user_id=CAROL, view=home("r-1")))["view"]
    await user.open_home(user_id=CAROL)

    first, second = (json.loads(r["body"]) for r in received)
    assert all(r["valid"] and r["headers"]["Content-Type"] == "application/json" for r in received)
    assert first["type"] == "event_callback" and first["team_id"] == "T0LOCAL" and first["api_app_id"] == "A0LOCAL"
    assert first["event_id"].startswith("Ev") and isinstance(first["event_time"], int) and first["token"]
    assert first["authorizations"] == [
        {
            "enterprise_id": None,
            "team_id": "T0LOCAL",
            "user_id": local_slack.bot_user_id,
            "is_bot": True,
            "is_enterprise_install": False,
        }
    ]
    event = first["event"]
    assert (event["type"], event["user"], event["tab"]) == ("app_home_opened", CAROL, "home")
    assert event["channel"] == local_slack.dm_channel(CAROL) and event["channel"].startswith("D")
    assert event["event_ts"] and "view" not in event, "before any publish Slack sends no view"
    assert second["event"]["view"] == published and second["event_id"] != first["event_id"]

    await user.send_event({"type": "app_mention", "user": CAROL, "text": "<@U0LOCALBOT> hi", "channel": "C0X"})
    mention = json.loads(received[-1]["body"])
    assert mention["event"]["type"] == "app_mention" and mention["event"]["event_ts"]


async def test_a_home_click_is_a_view_block_action(
    echo: tuple[str, list[dict[str, Any]]],
    local_slack: LocalSlack,
    slack_user: SlackUserFactory,
    client: AsyncWebClient,
) -> None:
    url, received = echo
    user = slack_user(bot_url=url)
    with pytest.raises(LookupError, match="no Home tab"):
        await user.click_home(user_id=CAROL, label="Open")
    view = (await client.views_publish(user_id=CAROL, view=home("r-1", "r-2")))["view"]

    await user.click_home(user_id=CAROL, label="open_run", value="r-2")
    payload = json.loads(_form(received[-1]["body"])["payload"])
    assert payload["type"] == "block_actions"
    assert payload["container"] == {"type": "view", "view_id": view["id"]}
    assert payload["view"] == view and payload["view"]["hash"] == view["hash"]
    assert not {"message", "channel", "response_url"} & set(payload)
    assert payload["user"]["id"] == CAROL and payload["team"]["id"] == "T0LOCAL"
    [action] = payload["actions"]
    assert (action["action_id"], action["block_id"], action["value"]) == ("open_run", "run-r-2", "r-2")
    opened = await client.views_open(trigger_id=payload["trigger_id"], view=MODAL)
    assert local_slack.view_user(opened["view"]["id"]) == CAROL

    await user.click_home(user_id=CAROL, label="Refresh")
    with pytest.raises(LookupError, match=r"2 buttons labelled 'Open'.*buttons shown: \['Open', 'Open', 'Refresh'\]"):
        await user.click_home(user_id=CAROL, label="Open")
    with pytest.raises(LookupError, match="no button labelled 'Open' with value 'r-3'"):
        await user.click_home(user_id=CAROL, label="Open", value="r-3")
    await client.views_publish(user_id=CAROL, view=home())
    with pytest.raises(LookupError, match="no button"):
        await user.click_home(user_id=CAROL, label="Open", value="r-1")
    assert len(received) == 2


def _form(body: bytes) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(body.decode()).items()}


async def test_message_clicks_can_pick_a_button_by_value(
    echo: tuple[str, list[dict[str, Any]]], local_slack: LocalSlack, slack_user: SlackUserFactory
) -> None:
    url, received = echo
    card = local_slack.post_message(channel="C0X", params={"text": "runs", "blocks": home("r-1", "r-2")["blocks"]})
    await slack_user(bot_url=url).click(message=card, label="Open", value="r-1", user_id=CAROL)
    payload = json.loads(_form(received[-1]["body"])["payload"])
    assert payload["actions"][0]["value"] == "r-1" and payload["container"]["type"] == "message"


# -- through a real Bolt app, over HTTP and over Socket Mode -----------------------------------------


def home_app(local_slack: LocalSlack, got: dict[str, Any], **options: Any) -> AsyncApp:
    """Bolt publishing a Home tab when it is opened, and opening a modal from its buttons."""
    app = AsyncApp(client=AsyncWebClient(token=LOCAL_BOT_TOKEN, base_url=local_slack.api_url), **options)

    @app.event("app_home_opened")
    async def opened(event: dict[str, Any], client: AsyncWebClient) -> None:
        got.setdefault("opened", []).append(event)
        view = event.get("view")
        await client.views_publish(
            user_id=event["user"], view=home("r-1", "r-2"), **({"hash": view["hash"]} if view else {})
        )

    @app.action("open_run")
    async def open_run(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        got["clicked"] = (action["value"], body["container"], body["view"]["id"], body["user"]["id"])
        await client.views_open(trigger_id=body["trigger_id"], view=MODAL | {"private_metadata": action["value"]})

    return app


async def test_bolt_over_http_handles_home_events_and_clicks(
    local_slack: LocalSlack, slack_user: SlackUserFactory
) -> None:
    got: dict[str, Any] = {}
    app = home_app(local_slack, got, signing_secret=LOCAL_SIGNING_SECRET)
    async with serve(app.web_app(path="/slack/events")) as url:
        user = slack_user(bot_url=url)
        assert (await user.open_home(user_id=CAROL)).status == 200
        shown = await local_slack.wait_for(lambda: local_slack.home(CAROL), what="the published Home tab")
        await user.open_home(user_id=CAROL)
        await local_slack.wait_for(lambda: len(got.get("opened", [])) == 2, what="the second app_home_opened")
        assert "view" not in got["opened"][0] and got["opened"][1]["view"]["id"] == shown["id"]
        republished = await local_slack.wait_for(
            lambda: (local_slack.home(CAROL) or shown)["hash"] != shown["hash"], what="a republish"
        )
        assert republished

        assert (await user.click_home(user_id=CAROL, label="Open", value="r-2")).status == 200
        assert got["clicked"] == ("r-2", {"type": "view", "view_id": shown["id"]}, shown["id"], CAROL)
        [modal] = await local_slack.wait_for(lambda: local_slack.open_views(CAROL), what="the run modal")
        assert modal["private_metadata"] == "r-2"
    await app.client.session.close() if app.client.session else None
    assert local_slack.rejected == []


async def test_bolt_over_socket_mode_handles_home_events_and_clicks(
    local_slack: LocalSlack, slack_user: SlackUserFactory
) -> None:
    got: dict[str, Any] = {}
    app = home_app(local_slack, got)
    handler = AsyncSocketModeHandler(app, LOCAL_APP_TOKEN)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    try:
        await local_slack.wait_for(lambda: local_slack.socket_mode.connected, timeout=5, what="the connection")
        user = slack_user(transport=SocketModeTransport(socket_mode=local_slack.socket_mode))
        answer = await user.open_home(user_id=CAROL)
        assert (answer.status, answer.body) == (200, "")
        sent = local_slack.socket_mode.envelopes[-1]
        assert sent["envelope"]["type"] == "events_api" and sent["envelope"]["accepts_response_payload"] is False
        assert sent["envelope"]["payload"]["event"]["type"] == "app_home_opened"
        assert sent["ack"] == {"envelope_id": sent["envelope"]["envelope_id"]}
        await local_slack.wait_for(lambda: local_slack.home(CAROL), what="the published Home tab")

        await user.click_home(user_id=CAROL, label="Open", value="r-1")
        assert local_slack.socket_mode.envelopes[-1]["envelope"]["type"] == "interactive"
        assert got["clicked"][0] == "r-1"
        await local_slack.wait_for(lambda: local_slack.open_views(CAROL), what="the run modal")
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]
        await app.client.session.close() if app.client.session else None
    assert local_slack.rejected == [] and local_slack.socket_mode.stray == []
