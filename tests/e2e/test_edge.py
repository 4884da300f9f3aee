"""The Slack edge through the real ``approval-bot serve`` and ``approval-bot socket`` processes.

What Slack may send and the bot does not act on (its URL check, its events, other apps'
shortcuts, malformed or forged requests) is answered the way Slack expects and leaves no
warning, no error and no traceback in the bot's log. What the bot does act on survives
Slack's own failures (a modal that cannot open), Slack's encoding (entities in command
text) and Slack's retries (a command delivered twice is one run).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from bot.work import run_id_for
from engine.records import AskStatus, Run, RunStatus
from localslack import LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser
from tests.e2e.conftest import CHANNEL, Backend, BotProcess, StartBot, UserFor, cards, eventually, run_of

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
JSON = {"Content-Type": "application/json"}
INJECTED_USER = "U123><!channel> <https://evil.example|x>"
_LOUD = re.compile(r" (WARNING|ERROR|CRITICAL) |Traceback")


class LogMark:
    """Where the bot's log was, so a test reads only what its own requests made the bot write."""

    def __init__(self, bot: BotProcess) -> None:
        self.bot = bot
        self.at = len(bot.output())

    def since(self) -> str:
        return self.bot.output()[self.at :]

    def assert_quiet(self) -> None:
        loud = [line for line in self.since().splitlines() if _LOUD.search(line)]
        assert loud == [], "\n".join(loud)


def _runs(backend: Backend) -> int:
    """Runs stored (the store has no listing of its own; the e2e edge tests run on SQLite)."""
    path = Path(backend.env["SQLITE_PATH"])
    if not path.exists():
        return 0
    with closing(sqlite3.connect(path)) as conn:
        if not conn.execute("SELECT name FROM sqlite_master WHERE name = 'runs'").fetchall():
            return 0
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


async def _settle(seconds: float = 0.5) -> None:
    """Give work after an ack a moment to (wrongly) happen before asserting that it did not."""
    await asyncio.sleep(seconds)


def _posted(slack: LocalSlack) -> list[str]:
    return [m for m, _ in slack.calls if m in ("chat.postMessage", "chat.update", "chat.postEphemeral")]


async def _waiting_run(slack: LocalSlack, user: LocalSlackUser, backend: Backend, graph: str) -> tuple[Run, Any]:
    response = await user.slash_command(text=f"run {graph} hello", user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200
    (card,) = await slack.wait_for(lambda: cards(slack), timeout=30, what="a card")
    store = backend.open_store()
    first = run_of(store, slack)

    def settled() -> Run | None:
        # The card is on Slack a moment before the store records where it is.
        run = store.load(first.run_id)
        return run if run is not None and run.status is RunStatus.WAITING and not run.owes_slack else None

    run: Run = await eventually(settled, timeout=30, what="the run waiting, its card recorded")
    return run, card


def _unchanged(backend: Backend, before: Run) -> None:
    after = backend.open_store().load(before.run_id)
    assert after is not None
    assert after.version == before.version and after.status is RunStatus.WAITING
    assert all(a.status is AskStatus.PENDING and a.decision is None for a in after.asks.values()), after.asks


# -- requests the edge answers itself ----------------------------------------------------------


async def test_slacks_ssl_check_is_answered_unsigned(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    mark = LogMark(bot)
    user = user_for(bot)
    for body in (b"ssl_check=1&token=verification_token", b"token=x&ssl_check=1"):
        response = await user.send_raw(body=body, headers=FORM, sign=False)
        assert (response.status, response.text) == (200, "")
    await _settle()
    mark.assert_quiet()
    assert local_slack.calls == []


@pytest.mark.parametrize("mode", ["serve", "socket"])
async def test_url_verification_and_kinds_the_bot_does_not_handle(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor, mode: str
) -> None:
    """Each is answered 200 (an empty ack over the socket) with nothing in the log above INFO."""
    bot = await start_bot(backend=sqlite_backend, mode=mode)
    mark = LogMark(bot)
    user = user_for(bot)
    events = [
        _event("app_home_opened", user="U0ALICE", channel="D0ALICE", tab="home"),
        _event("app_mention", user="U0ALICE", text="<@U0LOCALBOT> hello", channel=CHANNEL),
        _event("member_joined_channel", user="U0LOCALBOT", channel=CHANNEL, inviter="U0ALICE"),
    ]
    interactions: list[dict[str, Any]] = [
        {"type": "view_closed", "user": {"id": "U0BOB"}, "view": {"id": "V1", "type": "modal", "callback_id": "x"}},
        {
            "type": "shortcut",
            "callback_id": "another-apps-shortcut",
            "trigger_id": local_slack.new_trigger_id(user_id="U0BOB"),
            "user": {"id": "U0BOB", "team_id": "T0LOCAL"},
            "team": {"id": "T0LOCAL", "domain": "local"},
        },
        {
            "type": "message_action",
            "callback_id": "another-apps-action",
            "user": {"id": "U0BOB"},
            "channel": {"id": CHANNEL},
            "message": {"ts": "1.2", "text": "hi"},
        },
        {"type": "block_suggestion", "action_id": "pick", "block_id": "b", "value": "ab", "user": {"id": "U0BOB"}},
        {  # a button of no listener of ours, from an older card or another message
            "type": "block_actions",
            "user": {"id": "U0BOB"},
            "container": {"type": "message", "channel_id": CHANNEL, "message_ts": "1.2"},
            "actions": [{"action_id": "some:other", "value": "x", "type": "button"}],
        },
    ]
    if mode == "serve":
        challenge = await user.send_raw(
            body=json.dumps({"token": "t", "challenge": "ch4llenge", "type": "url_verification"}).encode(),
            headers=JSON,
        )
        assert (challenge.status, challenge.body) == (200, {"challenge": "ch4llenge"})
        for event in events:
            response = await user.send_raw(body=json.dumps(event).encode(), headers=JSON)
            assert (response.status, response.text) == (200, ""), event["event"]["type"]
        for interaction in interactions:
            response = await user.send_raw(body=urlencode({"payload": json.dumps(interaction)}).encode(), headers=FORM)
            assert (response.status, response.text) == (200, ""), interaction["type"]
    else:
        socket = local_slack.socket_mode
        for event in events:
            assert await socket.deliver(kind="events_api", payload=event) is None  # type: ignore[arg-type]
        for interaction in interactions:
            assert await socket.deliver(kind="interactive", payload=interaction) is None
        for kind in ("hello_world", "events_api"):  # an envelope type the bot has never heard of
            assert await socket.deliver(kind=kind, payload={"type": "nothing_we_know"}) is None  # type: ignore[arg-type]
    other = await user.slash_command(text="run guarded-write hi", user_id="U0ALICE", channel_id=CHANNEL, command="/x")
    assert (other.status, other.body) == (200, ""), "another app's command"
    await _settle()
    mark.assert_quiet()
    assert bot.process.poll() is None
    assert _posted(local_slack) == [] and local_slack.responses == [] and _runs(sqlite_backend) == 0


def _event(kind: str, **event: Any) -> dict[str, Any]:
    return {
        "token": "verification_token",
        "team_id": "T0LOCAL",
        "api_app_id": "A0LOCAL",
        "event": {"type": kind, "event_ts": "1.2", **event},
        "type": "event_callback",
        "event_id": "Ev0E2E",
        "event_time": 1599616881,
        "authorizations": [{"enterprise_id": None, "team_id": "T0LOCAL", "user_id": "U0LOCALBOT", "is_bot": True}],
        "is_ext_shared_channel": False,
        "event_context": "4-xxx",
    }


BAD_TIMESTAMPS = ["abc", "1e9", "0x10", " 123", "-5", "", "1" * 13, "12.5", "+1700000000", "\uff11\uff12\uff13"]


async def test_a_timestamp_that_is_not_digits_is_401(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    mark = LogMark(bot)
    form = {"command": "/graph", "text": "run guarded-write hi", "user_id": "U0ALICE", "channel_id": CHANNEL}
    body = urlencode(form).encode()
    for timestamp in BAD_TIMESTAMPS:
        signature = (
            "v0=" + hmac.new(LOCAL_SIGNING_SECRET.encode(), f"v0:{timestamp}:".encode() + body, "sha256").hexdigest()
        )
        headers = {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}
        status, answer = await _post_with_raw_headers(bot, body, headers)
        assert status == 401, (timestamp, status, answer)
    await _settle()
    mark.assert_quiet()
    assert _runs(sqlite_backend) == 0 and local_slack.calls == []


async def _post_with_raw_headers(bot: BotProcess, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST with header values sent as given (UTF-8, spaces kept): HTTP clients tidy them up."""
    host, port = bot.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        lines = [
            "POST /slack/events HTTP/1.1",
            f"Host: {host}:{port}",
            "Content-Type: application/x-www-form-urlencoded",
            f"Content-Length: {len(body)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
    status = int(raw.split(b" ", 2)[1])
    return status, raw.partition(b"\r\n\r\n")[2]


async def test_malformed_bodies_are_400_and_forged_ones_401(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    mark = LogMark(bot)
    user = user_for(bot)
    click = {"type": "block_actions", "user": {"id": "U0BOB"}, "actions": [{"action_id": "ask:approve"}]}
    for payload in (
        [click],
        "block_actions",
        None,
        click | {"user": {"id": INJECTED_USER}},
        click | {"channel": {"id": "C1;DROP"}},
        click | {"team": ["T0LOCAL"]},
        click | {"authorizations": "yes"},
        click | {"actions": []},
        click | {"actions": "ask:approve"},
        {"type": "view_submission", "user": {"id": "U0BOB"}, "view": {"type": "modal"}},
    ):
        body = urlencode({"payload": json.dumps(payload)}).encode()
        response = await user.send_raw(body=body, headers=FORM)
        assert response.status == 400 and "\n" not in response.body["error"], (payload, response.text)
        forged = await user.send_raw(body=body, headers=FORM, signature="v0=" + "0" * 64)
        assert forged.status == 401
    deep = "[" * 10_000 + "]" * 10_000
    for body, headers in ((deep.encode(), JSON), (b"payload=" + deep.encode(), FORM), (b"1", JSON)):
        assert (await user.send_raw(body=body, headers=headers)).status == 400
    await _settle()
    mark.assert_quiet()
    assert bot.process.poll() is None
    assert _posted(local_slack) == [] and local_slack.responses == []


# -- a modal that cannot open ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["serve", "socket"])
async def test_a_reply_click_whose_modal_cannot_open_is_acked_and_the_clicker_told(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor, mode: str
) -> None:
    bot = await start_bot(backend=sqlite_backend, mode=mode)
    user = user_for(bot)
    run, card = await _waiting_run(local_slack, user, sqlite_backend, "guarded-write")
    mark = LogMark(bot)
    failures = [
        ("expired", "could not open in time"),
        ("rate limited", "rate-limiting me"),
        ("server error", "Slack would not open the form (`500`)"),
    ]
    for failure, words in failures:
        if failure == "expired":
            local_slack.trigger_ttl = 0.0
        elif failure == "rate limited":
            local_slack.trigger_ttl = 3.0
            local_slack.inject_failures(method="views.open", status=429, retry_after=30)
        else:
            local_slack.inject_failures(method="views.open", status=500)
        told = len(local_slack.responses)
        started = time.monotonic()
        response = await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
        assert (response.status, response.body) == (200, ""), failure
        await local_slack.wait_for(lambda: len(local_slack.responses) > told, timeout=10, what=failure)  # noqa: B023
        (note,) = local_slack.responses[told:]
        assert time.monotonic() - started < 5, f"{failure}: told within the trigger's life, not after a Retry-After"
        assert note["user"] == "U0BOB" and note["effect"] == "ephemeral", note
        assert words in note["body"]["text"] and "nothing was decided" in note["body"]["text"], note
    assert [f["status"] for f in local_slack.faults_served] == [429, 500], "one try each"
    assert [r["error"] for r in local_slack.rejected] == ["expired_trigger_id"]
    local_slack.rejected.clear()  # refused on purpose
    assert local_slack.open_views() == []
    await _settle()
    _unchanged(sqlite_backend, run)
    assert local_slack.message(CHANNEL, card["ts"]) == card, "the card is still live"
    assert "Traceback" not in mark.since() and " ERROR " not in mark.since()


# -- what listeners refuse inline -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["serve", "socket"])
async def test_a_reply_over_3000_characters_is_refused_inline(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor, mode: str
) -> None:
    bot = await start_bot(backend=sqlite_backend, mode=mode)
    user = user_for(bot)
    run, card = await _waiting_run(local_slack, user, sqlite_backend, "guarded-write")
    await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")
    with pytest.raises(ValueError, match="3000"):  # the Slack client would not let anyone submit it...
        await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "x" * 4001}}, user_id="U0BOB")
    # ... but a forged submission can carry it.
    forged = _submission(view, "x" * 4001)
    response = await user.transport.deliver(kind="interactive", payload=forged)
    assert response.status == 200, response
    assert response.body["response_action"] == "errors", response.body
    assert "too long (4001 characters, at most 3000)" in response.body["errors"][TEXT_BLOCK_ID]
    await _settle()
    _unchanged(sqlite_backend, run)
    assert local_slack.message(CHANNEL, card["ts"]) == card


def _submission(view: dict[str, Any], text: str) -> dict[str, Any]:
    values = {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": text}}}
    return {
        "type": "view_submission",
        "team": {"id": "T0LOCAL", "domain": "local"},
        "user": {"id": "U0BOB", "username": "bob", "name": "bob", "team_id": "T0LOCAL"},
        "api_app_id": "A0LOCAL",
        "token": "local-verification-token",
        "trigger_id": "1.2.3",
        "view": view | {"state": {"values": values}},
        "response_urls": [],
        "is_enterprise_install": False,
    }


async def test_an_edit_to_a_number_json_cannot_hold_is_refused_inline(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    run, card = await _waiting_run(local_slack, user, sqlite_backend, "tool-gate-test")
    await user.click(message=card, label="Edit", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the edit modal")
    for text, problem in (
        ('{"service": "billing", "replicas": 1e999}', "too large a number"),
        ('{"service": "billing", "replicas": -1e999}', "too large a number"),
        ('{"service": "billing", "replicas": NaN}', "NaN is not a JSON number"),
    ):
        response = await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: text}}, user_id="U0BOB")
        assert response.status == 200 and response.body["response_action"] == "errors", response.body
        assert problem in response.body["errors"][TEXT_BLOCK_ID], response.body
        assert local_slack.open_views("U0BOB"), "the modal stays open for a correction"
    await _settle()
    _unchanged(sqlite_backend, run)


# -- slash commands as Slack delivers them -------------------------------------------------------


@pytest.mark.parametrize("mode", ["serve", "socket"])
async def test_command_text_is_decoded_once_and_may_say_payload(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor, mode: str
) -> None:
    bot = await start_bot(backend=sqlite_backend, mode=mode)
    user = user_for(bot)
    sent = "run guarded-write &lt;b&gt; &amp; payload &amp;lt;i&amp;gt;"  # Slack's encoding of what was typed
    response = await user.slash_command(text=sent, user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200 and response.body == ""
    await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    run = run_of(sqlite_backend.open_store(), local_slack)
    assert run.task == "<b> & payload &lt;i&gt;", "decoded once: a typed entity stays as typed"
    announced = next(p for m, p in local_slack.calls if m == "chat.postMessage")
    assert "&lt;b&gt; &amp; payload &amp;lt;i&amp;gt;" in json.dumps(announced), (
        "shown escaped again, as Slack wants it"
    )


async def test_the_same_command_delivered_twice_starts_one_run(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    trigger = local_slack.new_trigger_id(user_id="U0ALICE")
    form = {
        "token": "local-verification-token",
        "team_id": "T0LOCAL",
        "team_domain": "local",
        "channel_id": CHANNEL,
        "channel_name": local_slack.channel_name(CHANNEL),
        "user_id": "U0ALICE",
        "user_name": "alice",
        "command": "/graph",
        "text": "run guarded-write hello",
        "api_app_id": "A0LOCAL",
        "is_enterprise_install": "false",
        "response_url": local_slack.new_response_url(channel=CHANNEL, user="U0ALICE"),
        "trigger_id": trigger,
    }
    body = urlencode(form).encode()
    first = await user.send_raw(body=body, headers=FORM)
    retried = await user.send_raw(
        body=body, headers=FORM | {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
    )
    assert (first.status, retried.status) == (200, 200)
    await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    await _settle(1.0)
    assert _runs(sqlite_backend) == 1
    run = sqlite_backend.open_store().load(run_id_for(trigger) or "")
    assert run is not None and run.task == "hello"
    announcements = [m for m in local_slack.messages(CHANNEL) if "started" in str(m.get("text", ""))]
    assert len(announcements) == 1, announcements
    assert len(cards(local_slack)) == 1
    # The control: another command (another trigger) is another run.
    await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: len(cards(local_slack)) == 2, timeout=30, what="a second card")
    assert _runs(sqlite_backend) == 2


# -- Socket Mode: what cannot be read is acked, and nothing breaks --------------------------------


async def test_malformed_envelopes_are_acked_without_a_crash(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend, mode="socket")
    mark = LogMark(bot)
    socket = local_slack.socket_mode
    click = {"type": "block_actions", "user": {"id": "U0BOB"}, "actions": [{"action_id": "ask:approve"}]}
    malformed: list[tuple[str, dict[str, Any]]] = [
        ("interactive", click | {"user": {"id": INJECTED_USER}}),
        ("interactive", click | {"actions": "ask:approve"}),
        ("interactive", click | {"team": ["T0LOCAL"], "authorizations": "x"}),
        ("interactive", {"type": "view_submission", "user": {"id": "U0BOB"}, "view": {"type": "modal"}}),
        ("interactive", {"no": "type"}),
        ("slash_commands", {"command": "/graph", "text": ["run"], "user_id": "U0ALICE", "channel_id": CHANNEL}),
        ("slash_commands", {"command": "/graph", "text": "run guarded-write x", "user_id": INJECTED_USER}),
        ("events_api", {"type": ["event_callback"]}),
    ]
    for kind, payload in malformed:
        acked = await socket.deliver(kind=kind, payload=payload)  # type: ignore[arg-type]
        # Acked bare: over the socket an {"error": ...} payload would be read as a message to show.
        assert acked is None, (payload, acked)
    assert all(e["ack"] is not None for e in socket.envelopes), "every envelope acked"
    await _settle()
    refused = bot.output().count("refused a malformed Slack payload")
    assert refused == len(malformed), f"each refusal is logged once: {refused} of {len(malformed)}"
    assert socket.stray == []
    # Still connected and working: a real command after all that.
    response = await user_for(bot).slash_command(text="help", user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200 and "/graph run" in response.body["text"]
    await _settle()
    assert bot.process.poll() is None
    mark.assert_quiet()
    assert _posted(local_slack) == [] and _runs(sqlite_backend) == 0
