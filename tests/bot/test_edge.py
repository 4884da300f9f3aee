"""``bot.edge.SlackEdge`` in-process, in front of the real app (``bot.app.build_edge``).

Bytes and headers go in as the HTTP server (or Lambda) hands them over, parsed payloads as
Socket Mode hands them over; the real listeners run against the embedded store and the
local Slack. Every rule of the edge is checked, including that what it ignores or refuses
leaves no warning and no traceback in the log: Slack counts errors, and so do people
reading the log.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from pydantic import SecretStr

import tests.support.graphs as test_graphs
from bot.app import build_edge
from bot.edge import MAX_BODY_BYTES, EdgeReply, SlackEdge
from bot.handoff import InProcessHandoff
from bot.render.cards import encode_action_value
from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID, ModalTarget, encode_modal_metadata
from bot.services import Services, build_services
from bot.settings import Settings
from bot.work import StartRun, Work, run_id_for
from engine.records import Ask, AskStatus, Run, RunStatus, ToolCall, Verdict
from localslack import LOCAL_BOT_TOKEN, LocalSlack

SECRET = "edge-test-secret"
CHANNEL = "C0EDGE"
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
INJECTED_USER = "U123><!channel> <https://evil.example|x>"


@dataclass
class Bot:
    edge: SlackEdge
    services: Services
    handoff: InProcessHandoff
    slack: LocalSlack
    now: float = field(default_factory=time.time)

    async def post(
        self,
        body: bytes,
        *,
        content_type: str = FORM,
        timestamp: str | None = None,
        signature: str | None = None,
        sign: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> EdgeReply:
        sent = {"Content-Type": content_type, **(headers or {})}
        if sign:
            ts = timestamp if timestamp is not None else str(int(time.time()))
            sent["X-Slack-Request-Timestamp"] = ts
            sent["X-Slack-Signature"] = signature if signature is not None else sign_bytes(body, ts)
        return await self.edge.http(body=body, headers=sent)

    async def interaction(self, payload: object) -> EdgeReply:
        return await self.post(urlencode({"payload": json.dumps(payload)}).encode())

    async def command(self, text: str, **changes: str) -> EdgeReply:
        return await self.post(urlencode(command_form(self.slack, text) | changes).encode())

    async def settle(self) -> None:
        """Let what runs after an ack finish: Bolt's listener past its ``ack()`` and the work it
        handed off, both tasks of this loop."""
        current = asyncio.current_task()
        for _ in range(100):
            await self.handoff.drain(timeout=30)
            others = [t for t in asyncio.all_tasks() if t is not current and "slack_bolt" in repr(t.get_coro())]
            if not others:
                break
            await asyncio.wait(others, timeout=0.1)
        await asyncio.sleep(0.05)


def sign_bytes(body: bytes, timestamp: str, secret: str = SECRET) -> str:
    """Slack's signature over the raw bytes (slack_sdk's signer takes text only)."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def command_form(slack: LocalSlack, text: str) -> dict[str, str]:
    return {
        "token": "verification_token",
        "team_id": "T0LOCAL",
        "team_domain": "local",
        "channel_id": CHANNEL,
        "channel_name": "edge",
        "user_id": "U0ALICE",
        "user_name": "alice",
        "command": "/graph",
        "text": text,
        "api_app_id": "A0LOCAL",
        "is_enterprise_install": "false",
        "response_url": slack.new_response_url(channel=CHANNEL, user="U0ALICE"),
        "trigger_id": slack.new_trigger_id(user_id="U0ALICE"),
    }


def click(slack: LocalSlack, action_id: str, *, run_id: str = "run1", ask_key: str = "a1") -> dict[str, Any]:
    """A click on a card's button, as Slack posts it (the card's message left out for brevity)."""
    return {
        "type": "block_actions",
        "user": {"id": "U0BOB", "username": "bob", "name": "bob", "team_id": "T0LOCAL"},
        "api_app_id": "A0LOCAL",
        "token": "verification_token",
        "container": {"type": "message", "message_ts": "1712345678.000100", "channel_id": CHANNEL},
        "trigger_id": slack.new_trigger_id(user_id="U0BOB"),
        "team": {"id": "T0LOCAL", "domain": "local"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": CHANNEL, "name": "edge"},
        "state": {"values": {}},
        "response_url": slack.new_response_url(channel=CHANNEL, message_ts="1712345678.000100", user="U0BOB"),
        "actions": [
            {
                "action_id": action_id,
                "block_id": f"card:{ask_key}",
                "text": {"type": "plain_text", "text": "Button"},
                "value": encode_action_value(run_id=run_id, ask_key=ask_key),
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def submission(callback_id: str, text: str | None, *, run_id: str = "run1", ask_key: str = "a1") -> dict[str, Any]:
    target = ModalTarget(run_id=run_id, ask_key=ask_key, channel=CHANNEL, message_ts="1712345678.000100")
    return {
        "type": "view_submission",
        "team": {"id": "T0LOCAL", "domain": "local"},
        "user": {"id": "U0BOB", "username": "bob", "name": "bob", "team_id": "T0LOCAL"},
        "api_app_id": "A0LOCAL",
        "token": "verification_token",
        "trigger_id": "1.2.3",
        "view": {
            "id": "V0EDGE",
            "team_id": "T0LOCAL",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": encode_modal_metadata(target),
            "state": {"values": {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": text}}}},
            "hash": "1.x",
        },
        "response_urls": [],
        "is_enterprise_install": False,
    }


@pytest.fixture
async def bot(local_slack: LocalSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    monkeypatch.setenv("APPROVAL_BOT_TEST_MARKERS", str(tmp_path / "markers.txt"))
    settings = Settings(
        SLACK_BOT_TOKEN=SecretStr(LOCAL_BOT_TOKEN),
        SLACK_SIGNING_SECRET=SecretStr(SECRET),
        SLACK_API_URL=local_slack.api_url,
        SQLITE_PATH=str(tmp_path / "runs.sqlite3"),
        DYNAMODB_TABLE=None,
        GRAPH_MODULES=["tests.support.graphs"],
    )
    services = build_services(settings)
    handoff = InProcessHandoff(services=services)
    try:
        edge = build_edge(services, handoff=handoff, ack_first=handoff.ack_first)
        yield Bot(edge=edge, services=services, handoff=handoff, slack=local_slack)
        await handoff.drain(timeout=30)
    finally:
        close = getattr(services.store, "close", None)
        if close is not None:
            close()


@pytest.fixture
def quiet(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Capture everything; afterwards nothing at WARNING or above and no traceback may be in the log."""
    caplog.set_level(logging.DEBUG)
    yield caplog
    # At teardown ``caplog.records`` is the teardown's (empty) list: read the test's own.
    records = caplog.get_records("setup") + caplog.get_records("call")
    loud = [r for r in records if r.levelno >= logging.WARNING or r.exc_info or "Traceback" in r.getMessage()]
    assert loud == [], [f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud]


def _error(reply: EdgeReply) -> str:
    assert reply.headers.get("content-type", "").startswith(JSON), reply
    problem = json.loads(reply.body)["error"]
    assert isinstance(problem, str) and "\n" not in problem and len(problem) <= 200, problem
    return problem


def _runs(bot: Bot) -> int:
    """Runs in the store, counted with SQL: the store has no listing of its own."""
    path = Path(bot.services.settings.sqlite_path)
    if not path.exists():
        return 0
    with closing(sqlite3.connect(path)) as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE name = 'runs'").fetchall()
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]) if tables else 0


# -- ssl_check and the signature ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [b"ssl_check=1&token=verification_token", b"token=x&ssl_check=1", b"ssl_check=1"],
)
async def test_ssl_check_is_answered_200_unsigned(bot: Bot, quiet: pytest.LogCaptureFixture, body: bytes) -> None:
    for reply in (
        await bot.post(body, sign=False),
        await bot.post(body, signature="v0=" + "0" * 64),
        await bot.post(body, timestamp="abc", signature="junk"),
    ):
        assert (reply.status, reply.body) == (200, ""), reply
    assert bot.slack.calls == [] and bot.handoff.pending == 0


async def test_an_unsigned_body_is_never_parsed(bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the signing secret nobody gets the JSON parser's time, only the 401."""

    def parse(*_: object) -> object:
        raise AssertionError("parsed before the signature was checked")

    monkeypatch.setattr(SlackEdge, "_parse", staticmethod(parse))
    deep = b"[" * 100_000 + b"]" * 100_000
    for body, content_type in (
        (deep, JSON),
        (b"payload=" + deep, FORM),
        (urlencode(command_form(bot.slack, "run guarded-write x")).encode(), FORM),
        (b"ssl_check=1&" + b"x=1&" * 200, FORM),  # too long to be Slack's check
    ):
        for reply in (
            await bot.post(body, content_type=content_type, sign=False),
            await bot.post(body, content_type=content_type, signature="v0=" + "0" * 64),
        ):
            assert reply.status == 401, reply
    assert (await bot.post(b"ssl_check=1&token=x", sign=False)).status == 200


async def test_ssl_check_does_not_excuse_a_slash_command_from_its_signature(
    bot: Bot, quiet: pytest.LogCaptureFixture
) -> None:
    form = command_form(bot.slack, "run guarded-write x") | {"ssl_check": "1"}
    reply = await bot.post(urlencode(form).encode(), sign=False)
    assert reply.status == 401 and _error(reply) == "invalid signature"
    assert bot.handoff.pending == 0


BAD_TIMESTAMPS = [
    "abc",
    "1e9",
    "0x10",
    " 123",
    "-5",
    "\uff11\uff12\uff13",
    "",
    "1" * 13,
    "12.5",
    "+123",
    "123 ",
    "1_000",
]


@pytest.mark.parametrize("timestamp", BAD_TIMESTAMPS, ids=repr)
async def test_a_timestamp_that_is_not_digits_is_401(bot: Bot, quiet: pytest.LogCaptureFixture, timestamp: str) -> None:
    body = urlencode(command_form(bot.slack, "help")).encode()
    # Signed over that very timestamp, so only its shape is wrong.
    reply = await bot.post(body, timestamp=timestamp, signature=sign_bytes(body, timestamp))
    assert reply.status == 401 and _error(reply) == "invalid signature"


def _signatures(body: bytes, timestamp: str) -> dict[str, str]:
    good = sign_bytes(body, timestamp)
    return {
        "empty": "",
        "no prefix": good.removeprefix("v0="),
        "v1": "v1=" + good.removeprefix("v0="),
        "upper-case hex": "v0=" + good.removeprefix("v0=").upper(),
        "63 hex": good[:-1],
        "65 hex": good + "0",
        "not hex": good[:-1] + "g",
        "trailing space": good + " ",
        "another secret": sign_bytes(body, timestamp, secret="not-the-secret"),
        "another body": sign_bytes(body + b"&x=1", timestamp),
        "another time": sign_bytes(body, str(int(timestamp) - 1)),
        "zeros": "v0=" + "0" * 64,
    }


async def test_a_wrong_or_misshapen_signature_is_401(bot: Bot, quiet: pytest.LogCaptureFixture) -> None:
    body = urlencode(command_form(bot.slack, "help")).encode()
    timestamp = str(int(time.time()))
    for name, signature in _signatures(body, timestamp).items():
        reply = await bot.post(body, timestamp=timestamp, signature=signature)
        assert reply.status == 401, name
    assert (await bot.post(body, sign=False)).status == 401
    only_timestamp = await bot.edge.http(
        body=body, headers={"Content-Type": FORM, "X-Slack-Request-Timestamp": timestamp}
    )
    assert only_timestamp.status == 401
    control = await bot.post(body, timestamp=timestamp)
    assert control.status == 200 and "/graph run" in control.body, "the same body, signed right, is answered"


@pytest.mark.parametrize(("offset", "status"), [(301, 401), (-301, 401), (299, 200), (-299, 200), (86_400, 401)])
async def test_a_timestamp_more_than_five_minutes_off_is_401(
    bot: Bot, quiet: pytest.LogCaptureFixture, offset: int, status: int
) -> None:
    signed_at = 1_700_000_000
    edge = SlackEdge(app=bot.edge.app, signing_secret=SECRET, command="/graph", clock=lambda: signed_at + offset)
    body = urlencode(command_form(bot.slack, "help")).encode()
    headers = {
        "content-type": FORM,
        "x-slack-request-timestamp": str(signed_at),
        "x-slack-signature": sign_bytes(body, str(signed_at)),
    }
    reply = await edge.http(body=body, headers=headers)
    assert reply.status == status, reply


async def test_header_names_are_read_in_any_case(bot: Bot, quiet: pytest.LogCaptureFixture) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "abc"}).encode()
    timestamp = str(int(time.time()))
    headers = {
        "CONTENT-TYPE": JSON,
        "x-SLACK-request-TIMESTAMP": timestamp,
        "X-Slack-Signature": sign_bytes(body, timestamp),
    }
    reply = await bot.edge.http(body=body, headers=headers)
    assert (reply.status, json.loads(reply.body)) == (200, {"challenge": "abc"})


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"\xff\xfe\x00garbage", FORM),
        (b"payload=%7B%22type%22%3A" + bytes([0xC3, 0x28]), FORM),
        (b"\xc3\x28", JSON),
    ],
)
async def test_bytes_that_are_not_utf8_are_refused_before_anything_else(
    bot: Bot, quiet: pytest.LogCaptureFixture, body: bytes, content_type: str
) -> None:
    signed = await bot.post(body, content_type=content_type)
    assert signed.status == 400, signed
    assert bot.slack.calls == []


async def test_an_unsigned_body_that_is_not_utf8_is_401_like_any_unsigned_body(
    bot: Bot, quiet: pytest.LogCaptureFixture
) -> None:
    """ "Anything about the signature gets 401, before the body is parsed" (bot.edge): an unsigned
    request learns nothing about how its body would have been read."""
    for body in (b"\xff\xfe garbage", b"payload=\xff"):
        reply = await bot.post(body, sign=False)
        assert reply.status == 401, (body, reply)


async def test_a_body_over_a_megabyte_is_413(bot: Bot, quiet: pytest.LogCaptureFixture) -> None:
    body = b"token=x&text=" + b"a" * MAX_BODY_BYTES
    assert (await bot.post(body)).status == 413
    assert (await bot.post(body, sign=False)).status == 413


# -- what the edge answers itself --------------------------------------------------------------


async def test_url_verification_gets_its_challenge(bot: Bot, quiet: pytest.LogCaptureFixture) -> None:
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    body = json.dumps({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": challenge, "type": "url_verification"})
    reply = await bot.post(body.encode(), content_type=JSON + "; charset=utf-8")
    assert reply.status == 200 and json.loads(reply.body) == {"challenge": challenge}
    assert reply.headers["content-type"].startswith(JSON)
    unsigned = await bot.post(body.encode(), content_type=JSON, sign=False)
    assert unsigned.status == 401, "the challenge is only answered to Slack"
    over_socket = await bot.edge.payload(json.loads(body))
    assert over_socket.payload == {"challenge": challenge}


def _event(kind: str, **event: Any) -> dict[str, Any]:
    return {
        "token": "verification_token",
        "team_id": "T0LOCAL",
        "api_app_id": "A0LOCAL",
        "event": {"type": kind, **event},
        "type": "event_callback",
        "event_id": "Ev0EDGE",
        "event_time": 1599616881,
        "authorizations": [{"enterprise_id": None, "team_id": "T0LOCAL", "user_id": "U0LOCALBOT", "is_bot": True}],
        "is_ext_shared_channel": False,
    }


UNHANDLED: list[Any] = [
    pytest.param(JSON, _event("app_home_opened", user="U0ALICE", channel="D0ALICE", tab="messages"), id="messages_tab"),
    pytest.param(JSON, _event("app_mention", user="U0ALICE", text="<@U0LOCALBOT> hi", channel=CHANNEL), id="mention"),
    pytest.param(JSON, _event("message", user="U0ALICE", text="hi", channel=CHANNEL, ts="1.2"), id="message"),
    pytest.param(JSON, {"type": "app_rate_limited", "minute_rate_limited": 1518467820, "team_id": "T1"}, id="limited"),
    pytest.param(
        "payload",
        {"type": "view_closed", "user": {"id": "U0BOB"}, "view": {"id": "V1", "callback_id": "ask:reply"}},
        id="view_closed",
    ),
    pytest.param(
        "payload",
        {
            "type": "shortcut",
            "callback_id": "some-shortcut",
            "trigger_id": "1.2.3",
            "user": {"id": "U0BOB", "team_id": "T0LOCAL"},
            "team": {"id": "T0LOCAL", "domain": "local"},
        },
        id="shortcut",
    ),
    pytest.param(
        "payload",
        {
            "type": "message_action",
            "callback_id": "some-action",
            "trigger_id": "1.2.3",
            "user": {"id": "U0BOB"},
            "channel": {"id": CHANNEL},
            "message": {"ts": "1.2", "text": "hi"},
            "response_url": "https://hooks.slack.com/app/x",
        },
        id="message_action",
    ),
    pytest.param(
        "payload",
        {"type": "block_suggestion", "action_id": "pick", "block_id": "b", "value": "ab", "user": {"id": "U0BOB"}},
        id="block_suggestion",
    ),
    pytest.param(
        "payload",
        {"type": "block_actions", "user": {"id": "U0BOB"}, "actions": [{"action_id": "x"}], "event": {"type": "x"}},
        id="workflow-ish block_actions",
    ),
    pytest.param("form", {"command": "/other", "text": "run guarded-write x", "user_id": "U0ALICE"}, id="/other"),
]


@pytest.mark.parametrize(("encoding", "payload"), UNHANDLED)
async def test_kinds_the_bot_does_not_handle_get_an_empty_200_and_one_debug_line(
    bot: Bot, quiet: pytest.LogCaptureFixture, encoding: str, payload: dict[str, Any]
) -> None:
    if encoding == JSON:
        reply = await bot.post(json.dumps(payload).encode(), content_type=JSON)
    elif encoding == "payload":
        reply = await bot.interaction(payload)
    else:
        reply = await bot.post(urlencode(payload).encode())
    assert (reply.status, reply.body) == (200, ""), reply
    over_socket = await bot.edge.payload(payload)
    assert (over_socket.status, over_socket.payload) == (200, None)
    ignored = [r for r in quiet.records if r.name == "bot.edge" and "ignored" in r.getMessage()]
    assert [r.levelno for r in ignored] == [logging.DEBUG, logging.DEBUG], [r.getMessage() for r in quiet.records]
    await bot.settle()
    assert bot.slack.calls == [] and bot.slack.responses == [] and _runs(bot) == 0


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param({"action_id": "some:other"}, id="an action of no listener"),
        pytest.param({"action_id": "ask:frobnicate", "value": '{"r":"run1","a":"a1"}'}, id="an unknown verdict"),
        pytest.param({"action_id": "ask:approve-old"}, id="a button from an older card"),
    ],
)
async def test_a_click_no_listener_handles_is_acked_quietly(
    bot: Bot, quiet: pytest.LogCaptureFixture, payload: dict[str, Any]
) -> None:
    body = click(bot.slack, "ask:approve") | {"actions": [payload]}
    reply = await bot.interaction(body)
    assert (reply.status, reply.body) == (200, "")
    await bot.settle()
    assert bot.slack.calls == [] and bot.slack.responses == []


async def test_a_submission_of_another_modal_is_acked_quietly(bot: Bot, quiet: pytest.LogCaptureFixture) -> None:
    reply = await bot.interaction(submission("someone-elses-modal", "hi"))
    assert (reply.status, reply.body) == (200, "")


# -- refused shapes ------------------------------------------------------------------------------


def _refusals() -> list[Any]:
    deep = "[" * 10_000 + "]" * 10_000
    deep_object = '{"a":' * 10_000 + "1" + "}" * 10_000
    click_fields = {"type": "block_actions", "user": {"id": "U0BOB"}, "actions": [{"action_id": "ask:approve"}]}
    cases: list[tuple[str, str, bytes | object]] = [
        ("a JSON list", JSON, [{"type": "url_verification", "challenge": "x"}]),
        ("a JSON string", JSON, "url_verification"),
        ("a JSON number", JSON, 1),
        ("JSON null", JSON, None),
        ("JSON without a type", JSON, {"challenge": "x"}),
        ("payload= a list", "payload", [click_fields]),
        ("payload= a string", "payload", "block_actions"),
        ("payload= a number", "payload", 3.5),
        ("payload= null", "payload", None),
        ("user injection", "payload", click_fields | {"user": {"id": INJECTED_USER}}),
        ("channel injection", "payload", click_fields | {"channel": {"id": "C1;DROP"}}),
        ("team a list", "payload", click_fields | {"team": ["T0LOCAL"]}),
        ("authorizations a string", "payload", click_fields | {"authorizations": "all of them"}),
        ("enterprise a list", "payload", click_fields | {"enterprise": ["E1"]}),
        ("actions empty", "payload", click_fields | {"actions": []}),
        ("actions not a list", "payload", click_fields | {"actions": {"action_id": "ask:approve"}}),
        ("action not an object", "payload", click_fields | {"actions": ["ask:approve"]}),
        ("view without callback_id", "payload", {"type": "view_submission", "user": {"id": "U0BOB"}, "view": {}}),
        ("view a string", "payload", {"type": "view_submission", "user": {"id": "U0BOB"}, "view": "V1"}),
        ("command user injection", "form", {"command": "/graph", "user_id": INJECTED_USER, "channel_id": CHANNEL}),
        ("command channel injection", "form", {"command": "/graph", "user_id": "U0ALICE", "channel_id": "C1;DROP"}),
        ("command with a team", JSON, {"command": "/graph", "user_id": "U0A", "channel_id": CHANNEL, "team": "T"}),
        ("command text a list", JSON, {"command": "/graph", "user_id": "U0A", "channel_id": CHANNEL, "text": []}),
        ("deep JSON", JSON, deep.encode()),
        ("deep JSON object", JSON, deep_object.encode()),
        ("deep payload=", "raw", b"payload=" + deep.encode()),
        ("payload= not JSON", "raw", b"payload=%7Bnot+json"),
        ("payload= NaN", "raw", b"payload=NaN"),
        ("JSON Infinity", JSON, b'{"type": "url_verification", "challenge": Infinity}'),
        ("a form as JSON", JSON, b"command=%2Fgraph&text=help"),
        ("an empty body", "raw", b""),
        ("an empty JSON body", JSON, b""),
        ("too many form fields", "raw", "&".join(f"f{i}=x" for i in range(150)).encode()),
    ]
    return [pytest.param(encoding, body, id=name) for name, encoding, body in cases]


@pytest.mark.parametrize(("encoding", "payload"), _refusals())
async def test_signed_bodies_of_the_wrong_shape_are_400_with_a_reason(
    bot: Bot, quiet: pytest.LogCaptureFixture, encoding: str, payload: object
) -> None:
    if isinstance(payload, bytes):
        body, content_type = payload, (JSON if encoding == JSON else FORM)
    elif encoding == JSON:
        body, content_type = json.dumps(payload).encode(), JSON
    elif encoding == "payload":
        body, content_type = urlencode({"payload": json.dumps(payload)}).encode(), FORM
    else:
        assert isinstance(payload, dict)
        body, content_type = urlencode(payload).encode(), FORM
    reply = await bot.post(body, content_type=content_type)
    assert reply.status == 400, reply
    assert _error(reply).startswith(("malformed payload", "malformed body")), reply.body
    if not isinstance(payload, bytes):
        over_socket = await bot.edge.payload(payload)
        assert over_socket.status == 400 and over_socket.payload is not None and "error" in over_socket.payload
    await bot.settle()
    assert bot.slack.calls == [] and bot.slack.responses == [] and bot.handoff.pending == 0


async def test_the_same_refusals_without_a_signature_are_401(bot: Bot, quiet: pytest.LogCaptureFixture) -> None:
    for param in _refusals():
        encoding, payload = param.values
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        reply = await bot.post(body, content_type=JSON if encoding == JSON else FORM, sign=False)
        assert reply.status == 401, (param.id, reply)


@pytest.mark.parametrize(
    "view",
    [
        pytest.param({"state": None}, id="state null"),
        pytest.param({"state": {"values": None}}, id="values null"),
        pytest.param({"private_metadata": "[" * 1500}, id="metadata nested 1500 deep"),
        pytest.param({"type": None}, id="view without a type"),
        pytest.param({"callback_id": "ask:edit", "private_metadata": "[" * 1500}, id="edit metadata nested"),
        pytest.param({"callback_id": "ask:edit", "state": None}, id="edit state null"),
        pytest.param(
            {"callback_id": "ask:reject", "state": {"values": {TEXT_BLOCK_ID: {TEXT_ACTION_ID: []}}}},
            id="reject value a list",
        ),
    ],
)
async def test_a_submission_of_the_wrong_shape_is_never_a_5xx_nor_a_traceback(
    bot: Bot, quiet: pytest.LogCaptureFixture, view: dict[str, Any]
) -> None:
    """Shapes ``inspect`` lets through must not break the listeners either: refused (400) or
    answered inline (200 with errors), and nothing recorded."""
    body = submission("ask:reply", "hello")
    body["view"] = {k: v for k, v in (body["view"] | view).items() if v is not None or k == "state"}
    for reply in (await bot.interaction(body), await bot.edge.payload(body)):
        assert reply.status in (200, 400), reply
        if reply.status == 200:
            assert reply.payload is not None and reply.payload.get("response_action") == "errors", reply
    await bot.settle()
    assert _runs(bot) == 0


@pytest.mark.parametrize("kind", ["block_actions", "view_submission"])
async def test_a_null_event_beside_a_click_or_a_submission_is_never_a_5xx(
    bot: Bot, quiet: pytest.LogCaptureFixture, kind: str
) -> None:
    """Bolt's own middleware reads ``body.get("event", {}).get(...)``: ``"event": null`` must not reach it."""
    body = (click(bot.slack, "ask:approve") if kind == "block_actions" else submission("ask:reply", "hi")) | {
        "event": None
    }
    for reply in (await bot.interaction(body), await bot.edge.payload(body)):
        assert reply.status < 500, reply
    await bot.settle()
    assert _runs(bot) == 0


# -- what the listeners answer ---------------------------------------------------------------------


async def test_a_reply_over_3000_characters_is_refused_inline_and_nothing_is_recorded(
    bot: Bot, quiet: pytest.LogCaptureFixture, editable_run: Run
) -> None:
    for text in ("x" * 3001, "word " * 1000):
        reply = await bot.interaction(submission("ask:reply", text, run_id=editable_run.run_id))
        assert reply.status == 200, reply
        assert reply.payload is not None and reply.payload["response_action"] == "errors"
        assert "too long" in reply.payload["errors"][TEXT_BLOCK_ID]
    just_enough = await bot.edge.payload(submission("ask:reject", "y" * 3001, run_id=editable_run.run_id))
    assert just_enough.payload is not None and just_enough.payload["response_action"] == "errors"
    await bot.settle()
    assert bot.services.store.load(editable_run.run_id) == editable_run, "nothing recorded"


TOOL = ToolCall(
    name="pay",
    input={"amount": 80, "currency": "EUR"},
    input_schema={"type": "object", "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}}},
)


@pytest.fixture
def editable_run(bot: Bot) -> Run:
    """A run waiting on a gated tool call whose input may be edited, stored as the engine stores one."""
    ask = Ask(
        key="a1",
        interrupt_id="v1:before_tool_call:tu1:x",
        name="approve_call",
        reason=None,
        node_id="ops",
        status=AskStatus.PENDING,
        created_at=0.0,
        verdicts=(Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.EDIT),
        tool=TOOL,
    )
    run = Run(
        run_id="run1",
        graph="tool-gate-test",
        task="t",
        started_by="U0ALICE",
        status=RunStatus.WAITING,
        version=0,
        created_at=0.0,
        updated_at=0.0,
        asks={ask.key: ask},
        channel=CHANNEL,
    )
    bot.slack.set_members(CHANNEL, ["U0ALICE", "U0BOB"])  # an ask open to the run's channel
    bot.services.store.create(run)
    stored = bot.services.store.load(run.run_id)
    assert stored is not None
    return stored


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"amount": 1e999, "currency": "EUR"}', "too large a number"),
        ('{"amount": -1e999, "currency": "EUR"}', "too large a number"),
        ('{"amount": NaN, "currency": "EUR"}', "not a JSON number"),
        ('{"amount": Infinity}', "not a JSON number"),
        ('{"amount": 1E400}', "too large a number"),
    ],
)
async def test_an_edit_to_a_number_json_cannot_hold_is_refused_inline(
    bot: Bot, quiet: pytest.LogCaptureFixture, editable_run: Run, text: str, problem: str
) -> None:
    reply = await bot.interaction(submission("ask:edit", text, run_id=editable_run.run_id))
    assert reply.status == 200 and reply.payload is not None, reply
    assert reply.payload["response_action"] == "errors" and problem in reply.payload["errors"][TEXT_BLOCK_ID]
    await bot.settle()
    assert bot.services.store.load(editable_run.run_id) == editable_run, "nothing recorded"
    assert bot.slack.calls == []


@pytest.mark.parametrize(
    "state",
    [
        None,
        {},
        {"values": None},
        {"values": {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": None}}}},
    ],
)
async def test_an_edit_without_its_input_is_refused_inline(
    bot: Bot, quiet: pytest.LogCaptureFixture, editable_run: Run, state: object
) -> None:
    body = submission("ask:edit", "{}", run_id=editable_run.run_id)
    body["view"]["state"] = state
    reply = await bot.interaction(body)
    assert reply.status == 200 and reply.payload is not None, reply
    assert (
        reply.payload["response_action"] == "errors"
        and "Write the tool input" in reply.payload["errors"][TEXT_BLOCK_ID]
    )
    await bot.settle()
    assert bot.services.store.load(editable_run.run_id) == editable_run, "nothing recorded"


async def test_the_control_edit_is_recorded(
    bot: Bot, editable_run: Run, recorded: tuple[SlackEdge, RecordingHandoff]
) -> None:
    """The tests above would pass on a bot that records nothing: this one records an edit."""
    edge, _ = recorded
    reply = await edge.payload(submission("ask:edit", '{"amount": 1e3, "currency": "EUR"}', run_id="run1"))
    assert (reply.status, reply.payload) == (200, None)
    stored = bot.services.store.load("run1")
    assert stored is not None and stored.asks["a1"].decision is not None
    assert stored.asks["a1"].decision.edited_input == {"amount": 1000.0, "currency": "EUR"}


class RecordingHandoff:
    """Keeps the work instead of doing it: what a listener handed off, exactly."""

    budget = 0.0

    def __init__(self) -> None:
        self.work: list[Work] = []

    async def submit(self, work: Work) -> None:
        self.work.append(work)


@pytest.fixture
def recorded(bot: Bot) -> tuple[SlackEdge, RecordingHandoff]:
    handoff = RecordingHandoff()
    return build_edge(bot.services, handoff=handoff), handoff


@pytest.mark.parametrize(
    ("text", "task"),
    [
        ("run guarded-write &lt;b&gt; &amp; payload", "<b> & payload"),
        ("run guarded-write deliver the payload=1 &amp;&amp; more", "deliver the payload=1 && more"),
        ("run guarded-write &amp;lt; stays an entity", "&lt; stays an entity"),
        ("run guarded-write payload", "payload"),
        ('run guarded-write {"payload": "x"}', '{"payload": "x"}'),
    ],
)
async def test_command_text_is_decoded_once_and_may_say_payload(
    bot: Bot, quiet: pytest.LogCaptureFixture, recorded: tuple[SlackEdge, RecordingHandoff], text: str, task: str
) -> None:
    edge, handoff = recorded
    form = command_form(bot.slack, text)
    body = urlencode(form).encode()
    timestamp = str(int(time.time()))
    headers = {"content-type": FORM, "x-slack-request-timestamp": timestamp}
    reply = await edge.http(body=body, headers=headers | {"x-slack-signature": sign_bytes(body, timestamp)})
    assert (reply.status, reply.body) == (200, ""), reply
    (work,) = handoff.work
    assert isinstance(work, StartRun)
    assert (work.graph, work.task, work.user, work.channel) == ("guarded-write", task, "U0ALICE", CHANNEL)
    assert work.run_id == run_id_for(form["trigger_id"])


async def test_the_same_command_delivered_twice_is_handed_off_as_the_same_run(
    bot: Bot, quiet: pytest.LogCaptureFixture, recorded: tuple[SlackEdge, RecordingHandoff]
) -> None:
    edge, handoff = recorded
    form = command_form(bot.slack, "run guarded-write hello")
    body = urlencode(form).encode()
    timestamp = str(int(time.time()))
    headers = {
        "content-type": FORM,
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": sign_bytes(body, timestamp),
    }
    first = await edge.http(body=body, headers=headers)
    retried = await edge.http(
        body=body, headers=headers | {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}
    )
    assert first.status == retried.status == 200
    ids = [w.run_id for w in handoff.work if isinstance(w, StartRun)]
    assert ids == [run_id_for(form["trigger_id"])] * 2
    other = await edge.payload(command_form(bot.slack, "run guarded-write hello"))
    assert other.status == 200
    assert len({w.run_id for w in handoff.work if isinstance(w, StartRun)}) == 2, "another command, another run"


async def test_the_same_command_delivered_twice_starts_one_run(bot: Bot) -> None:
    """With the real handoff and the real engine: one run recorded, one announcement posted."""
    form = command_form(bot.slack, "run guarded-write hello")
    body = urlencode(form).encode()
    first = await bot.post(body)
    retried = await bot.post(body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert first.status == retried.status == 200
    await bot.settle()
    run = bot.services.store.load(run_id_for(form["trigger_id"]) or "")
    assert run is not None and run.status is RunStatus.WAITING and run.task == "hello"
    assert _runs(bot) == 1
    posts = [p for m, p in bot.slack.calls if m == "chat.postMessage"]
    assert sum("started" in str(p.get("text", "")) for p in posts) == 1, posts


async def test_handed_off_work_starts_once_no_request_is_being_acked(bot: Bot) -> None:
    """``bot.ack_first`` through the real edge and handoff: a start acked while another
    request is still being acked waits for that one, then runs."""
    gate = bot.handoff.ack_first
    gate.longest_wait = 30.0
    form = command_form(bot.slack, "run guarded-write hello")
    with gate.request():  # another request, still on its way to its ack
        reply = await bot.post(urlencode(form).encode())
        assert reply.status == 200 and gate.acking == 1
        await asyncio.sleep(0.3)
        assert bot.handoff.pending == 1 and _runs(bot) == 0, "the work started before the other ack"
    await bot.settle()
    run = bot.services.store.load(run_id_for(form["trigger_id"]) or "")
    assert run is not None and run.status is RunStatus.WAITING


async def test_a_click_is_recorded_at_once_and_only_its_resume_waits_for_the_acks(bot: Bot) -> None:
    """An acked decision never waits in memory: were the process killed while the resume
    waits for other acks, the store already holds the decision for the sweeper."""
    form = command_form(bot.slack, "run guarded-write hello")
    assert (await bot.post(urlencode(form).encode())).status == 200
    await bot.settle()
    run_id = run_id_for(form["trigger_id"]) or ""
    waiting = bot.services.store.load(run_id, snapshot=False)
    assert waiting is not None and waiting.status is RunStatus.WAITING
    (ask,) = waiting.pending_asks()
    gate = bot.handoff.ack_first
    gate.longest_wait = 30.0
    with gate.request():  # another request, still on its way to its ack
        reply = await bot.interaction(click(bot.slack, "ask:approve", run_id=run_id, ask_key=ask.key))
        assert reply.status == 200
        await asyncio.sleep(0.3)  # well past DECISION_WAIT: recorded, though the other ack is still out
        decided = bot.services.store.load(run_id, snapshot=False)
        assert decided is not None and decided.asks[ask.key].decision is not None, "the decision waited in memory"
        assert bot.handoff.pending == 1 and decided.status is not RunStatus.COMPLETED
        assert test_graphs.markers() == [], "the run resumed before the other ack"
    await bot.settle()
    done = bot.services.store.load(run_id, snapshot=False)
    assert done is not None and done.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["writer:hello"]


async def test_handed_off_work_waits_no_longer_than_its_limit(bot: Bot) -> None:
    """Steady traffic delays work by at most ``longest_wait``, never starves it."""
    gate = bot.handoff.ack_first
    gate.longest_wait = 0.2
    form = command_form(bot.slack, "run guarded-write hello")
    with gate.request():  # a request that never finishes being acked
        assert (await bot.post(urlencode(form).encode())).status == 200
        await bot.settle()
        run = bot.services.store.load(run_id_for(form["trigger_id"]) or "")
        assert run is not None and run.status is RunStatus.WAITING


async def test_a_start_whose_announcement_slack_rate_limits_goes_on_and_says_so(bot: Bot) -> None:
    """Rate-limited beyond the retries, Slack gave no verdict: the run is not failed, and
    the requester is told it is unconfirmed, not to /invite the bot."""
    fault = bot.slack.inject_failures(method="chat.postMessage", status=429, retry_after=0, times=None)
    form = command_form(bot.slack, "run guarded-write hello")
    assert (await bot.post(urlencode(form).encode())).status == 200
    await bot.settle()
    run = bot.services.store.load(run_id_for(form["trigger_id"]) or "", snapshot=False)
    assert run is not None and run.status is RunStatus.WAITING and run.thread is None and run.owes_slack
    assert fault.served >= 2, "the start tried, and the pass looked and tried again"
    (told,) = [str(r["body"].get("text", "")) for r in bot.slack.responses]
    assert "has not confirmed the announcement" in told and "/invite" not in told, told


async def test_help_is_answered_in_the_ack(bot: Bot, quiet: pytest.LogCaptureFixture) -> None:
    reply = await bot.command("help")
    assert reply.status == 200 and "/graph run" in reply.body
    reply = await bot.command("frobnicate &lt;x&gt;")
    assert reply.status == 200 and "Unknown subcommand `frobnicate`" in reply.body


@pytest.mark.parametrize("action_id", ["ask:edit", "ask:reply", "ask:reject", "ask:approve", "some:other"])
@pytest.mark.parametrize("value", ["ids of an ask the run lacks", "not ids"])
async def test_a_click_without_a_response_url_is_acked_without_a_traceback(
    bot: Bot, caplog: pytest.LogCaptureFixture, editable_run: Run, action_id: str, value: str
) -> None:
    """Slack leaves ``response_url`` out of some clicks (in a modal, in App Home): whatever the bot
    would tell the clicker, it cannot, and that is not an error (a warning that it could not is)."""
    body = click(bot.slack, action_id, run_id=editable_run.run_id, ask_key="zz")
    if value == "not ids":
        body["actions"][0]["value"] = "<not ids>"
    del body["response_url"]
    reply = await bot.interaction(body)
    assert (reply.status, reply.body) == (200, ""), reply
    await bot.settle()
    bot.slack.rejected.clear()  # a modal for an ask the run lacks may open; that is not the point here
    assert bot.services.store.load(editable_run.run_id) == editable_run
    broken = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert broken == [], [f"{r.levelname} {r.name}: {r.getMessage()}" for r in broken]


# -- a modal that cannot open ------------------------------------------------------------------------


async def test_a_reply_click_whose_modal_cannot_open_is_acked_and_the_clicker_told(
    bot: Bot, quiet: pytest.LogCaptureFixture, editable_run: Run
) -> None:
    bot.slack.trigger_ttl = 0.0  # every trigger has expired by the time views.open arrives
    for action_id in ("ask:reply", "ask:reject", "ask:edit"):
        reply = await bot.interaction(click(bot.slack, action_id))
        assert (reply.status, reply.body) == (200, ""), (action_id, reply)
    await bot.slack.wait_for(lambda: len(bot.slack.responses) == 3, timeout=10, what="three ephemeral notes")
    for response in bot.slack.responses:
        assert response["effect"] == "ephemeral" and response["user"] == "U0BOB"
        assert (
            "could not open in time" in response["body"]["text"] and "nothing was decided" in response["body"]["text"]
        )
    assert [r["error"] for r in bot.slack.rejected] == ["expired_trigger_id"] * 3
    bot.slack.rejected.clear()  # refused on purpose
    assert bot.slack.open_views() == []
    assert bot.services.store.load(editable_run.run_id) == editable_run, "nothing recorded"


async def test_a_rate_limited_views_open_is_not_waited_out(
    bot: Bot, quiet: pytest.LogCaptureFixture, editable_run: Run
) -> None:
    bot.slack.inject_failures(method="views.open", status=429, retry_after=30)
    started = time.monotonic()
    reply = await bot.interaction(click(bot.slack, "ask:reply"))
    assert (reply.status, reply.body) == (200, "")
    (response,) = await bot.slack.wait_for(lambda: bot.slack.responses, timeout=10, what="the ephemeral note")
    assert time.monotonic() - started < 5, "a 429's Retry-After outlives the trigger: no waiting"
    assert "rate-limiting" in response["body"]["text"]
    assert bot.services.store.load(editable_run.run_id) == editable_run
