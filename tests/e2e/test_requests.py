"""What reaches the bot that should not: unsigned, forged, stale and malformed requests,
and commands people get wrong. Never a 5xx, never a crash, never a started run."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from urllib.parse import urlencode

import pytest

from bot.services import NO_GRAPHS_WARNING
from localslack import LOCAL_SIGNING_SECRET, LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, cards

COMMAND_FORM = {
    "command": "/graph",
    "text": "run guarded-write hello",
    "user_id": "U0ALICE",
    "channel_id": CHANNEL,
    "team_id": "T0LOCAL",
    "response_url": "http://127.0.0.1:9/nowhere",
    "trigger_id": "1.2.3",
}


@pytest.mark.parametrize(
    ("case", "kwargs"),
    [
        ("unsigned", {"sign": False}),
        ("wrong signature", {"signature": "v0=" + "0" * 64}),
        ("stale", {"timestamp": str(int(time.time()) - 6 * 60)}),
    ],
)
async def test_unverified_requests_get_401_and_start_nothing(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for, case: str, kwargs: dict
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    response = await user.send_raw(
        body=urlencode(COMMAND_FORM).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        **kwargs,
    )
    assert response.status == 401, case
    await _settle()
    assert [m for m, _ in local_slack.calls if m.startswith("chat.")] == [], "nothing was posted"


async def test_a_correctly_signed_copy_of_the_same_request_is_accepted(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    """The control for the test above: the same body, signed properly, starts a run."""
    bot = await start_bot(backend=sqlite_backend)
    response = await user_for(bot).send_raw(
        body=urlencode(COMMAND_FORM).encode(), headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status == 200
    await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "/graph run"),  # empty: the help
        ("help", "/graph run"),
        ("frobnicate", "Unknown subcommand `frobnicate`"),
        ("run", "Name the graph"),
        ("run guarded-write", "Give `guarded-write` a task"),
        ("list extra", "`list` takes no arguments"),
        ("run guarded-write " + "x" * 5000, "The task is too long"),
    ],
)
async def test_bad_commands_get_an_ephemeral_usage_message(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for, text: str, expected: str
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    response = await user_for(bot).slash_command(text=text, user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200
    assert expected in str(response.body), response.body
    # Bolt acks with plain text, which Slack shows only to the person who typed the command.
    assert isinstance(response.body, str) or response.body.get("response_type", "ephemeral") == "ephemeral"
    await _settle()
    assert [m for m, _ in local_slack.calls if m == "chat.postMessage"] == []


async def test_an_unknown_graph_is_named_with_the_known_ones(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    await user_for(bot).slash_command(text="run nope do it", user_id="U0ALICE", channel_id=CHANNEL)
    reply = await local_slack.wait_for(lambda: local_slack.responses, timeout=30, what="the ephemeral answer")
    text = str(reply[0]["body"])
    # Nothing like it, and too many graphs to name in one line: where to see them.
    assert "There is no graph called `nope`. `/graph list` shows the" in text and "\n" not in text
    assert reply[0]["body"]["response_type"] == "ephemeral"
    assert [m for m, _ in local_slack.calls if m == "chat.postMessage"] == []


async def test_list_names_the_graphs(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    await user_for(bot).slash_command(text="list", user_id="U0ALICE", channel_id=CHANNEL)
    reply = await local_slack.wait_for(lambda: local_slack.responses, timeout=30, what="the list")
    for name in ("deploy", "release-check", "cleanup", "guarded-write"):
        assert name in str(reply[0]["body"])


async def test_a_bot_without_graphs_says_how_to_add_them(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for
) -> None:
    """Outside the demo the examples are opt-in: a bare install lists none and says why."""
    bot = await start_bot(backend=sqlite_backend, extra_env={"EXAMPLE_GRAPHS": "false", "GRAPH_MODULES": ""})
    user = user_for(bot)
    await user.slash_command(text="list", user_id="U0ALICE", channel_id=CHANNEL)
    await user.slash_command(text="run deploy billing 1.2.3", user_id="U0ALICE", channel_id=CHANNEL)
    replies = await local_slack.wait_for(
        lambda: local_slack.responses if len(local_slack.responses) >= 2 else None, timeout=30, what="two replies"
    )
    listing, refusal = (str(reply["body"]) for reply in replies[:2])
    assert "No graphs are registered" in listing and "EXAMPLE_GRAPHS=true" in listing
    assert "deploy" not in listing
    assert "no graphs are registered yet" in refusal and "GRAPH_MODULES" in refusal
    assert local_slack.messages(CHANNEL) == [], "nothing started"
    assert bot.log.read_text().count(NO_GRAPHS_WARNING) == 1, "the operator is told once, at start-up"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"payload=%7Bnot+json", 400),
        (b"payload=" + json.dumps({"type": "block_actions", "actions": []}).encode(), 400),
        (b"payload=" + json.dumps({"type": "view_submission", "user": {"id": "U1"}}).encode(), 400),
        # Well-formed, but the button value is not ids: acked, then answered "malformed".
        (
            urlencode(
                {
                    "payload": json.dumps(
                        {
                            "type": "block_actions",
                            "user": {"id": "U1"},
                            "actions": [{"action_id": "ask:approve", "value": '{"r":"../x","a":1}'}],
                            "response_url": "http://127.0.0.1:9/x",
                        }
                    )
                }
            ).encode(),
            200,
        ),
        (b"\xff\xfe garbage", 400),
        (b"", 400),
    ],
)
async def test_malformed_payloads_never_get_a_5xx(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for, body: bytes, status: int
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    # Signed over the raw bytes (slack_sdk's signer only takes text), so the body gets past
    # the signature check and reaches the parsing it is meant to break.
    timestamp = str(int(time.time()))
    digest = hmac.new(LOCAL_SIGNING_SECRET.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256)
    response = await user_for(bot).send_raw(
        body=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        timestamp=timestamp,
        signature="v0=" + digest.hexdigest(),
    )
    assert response.status == status, (response.status, response.text)
    await _settle()
    assert bot.process.poll() is None, "the bot is still up"
    assert "Traceback" not in bot.output()


async def _settle() -> None:
    """Give background work a moment to (wrongly) happen before asserting it did not."""
    await asyncio.sleep(0.5)
