"""``approval-bot socket``: the real process over Socket Mode, against LocalSlack's WebSocket.

People's actions arrive as envelopes over the socket and the bot answers with acks; its own
calls (cards, modals, results) still go over the HTTP Web API, as with real Slack.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import (
    CHANNEL,
    REPO,
    Backend,
    StartBot,
    _bot_env,
    all_text,
    cards,
    finished_message,
    live_buttons,
    run_of,
)


def _envelope_types(slack: LocalSlack) -> list[str]:
    return [e["envelope"]["type"] for e in slack.socket_mode.envelopes]


async def test_command_card_click_result_over_the_socket(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=sqlite_backend, mode="socket")
    user = user_for(bot)
    assert [m for m, _ in local_slack.calls].count("apps.connections.open") == 1

    usage = await user.slash_command(text="frobnicate", user_id="U0ALICE", channel_id=CHANNEL)
    assert usage.status == 200 and "text" in usage.body, "a usage error is acked with its text as the payload"
    assert local_slack.ephemerals("U0ALICE"), "Slack shows a text ack to the person who typed the command"

    started = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    assert started.status == 200 and started.body == "", "a run is acked bare, then announced via the Web API"
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")
    assert live_buttons(card) == ["Approve", "Reject", "Reply"]

    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert "writer result: wrote writer:hello" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:hello"]
    assert run_of(sqlite_backend.open_store(), local_slack).status is RunStatus.COMPLETED
    assert _envelope_types(local_slack) == ["slash_commands", "slash_commands", "interactive"]
    assert all(e["ack"] is not None for e in local_slack.socket_mode.envelopes)
    assert local_slack.socket_mode.stray == []
    assert "chat.postMessage" in [m for m, _ in local_slack.calls], "the bot's own calls stay on the Web API"


async def test_reply_modal_over_the_socket(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    bot = await start_bot(backend=sqlite_backend, mode="socket")
    user = user_for(bot)
    await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")

    await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")
    (opened,) = [p for m, p in local_slack.calls if m == "views.open"]
    clicked = local_slack.socket_mode.envelopes[-1]["envelope"]["payload"]
    assert opened["trigger_id"] == clicked["trigger_id"], "the modal opens with the click's trigger_id"

    empty = await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "  "}}, user_id="U0BOB")
    assert empty.body["response_action"] == "errors", "validation errors travel in the ack payload"
    assert local_slack.open_views("U0BOB"), "an empty reply keeps the modal open"
    await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "use the canary"}}, user_id="U0BOB")
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")

    assert markers_file.read_text().splitlines() == ["writer:hello | reply: use the canary"]
    assert local_slack.open_views("U0BOB") == [], "a bare ack closes the modal"


async def test_reconnects_when_slack_asks(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for, markers_file: Path
) -> None:
    """Slack recycles connections with a ``disconnect`` message; a click after that must still land."""
    bot = await start_bot(backend=sqlite_backend, mode="socket")
    user = user_for(bot)
    await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="a card")

    await local_slack.socket_mode.disconnect(reason="refresh_requested")
    socket = local_slack.socket_mode
    await local_slack.wait_for(
        lambda: socket.connections_opened == 2 and socket.connected == 1, timeout=30, what="a new connection"
    )
    assert [m for m, _ in local_slack.calls].count("apps.connections.open") == 2

    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the result")
    assert markers_file.read_text().splitlines() == ["writer:hello"]


def _run_socket(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "bot.cli", "socket"]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=30)


def test_socket_without_an_app_token_exits_with_a_clear_message(
    local_slack: LocalSlack, sqlite_backend: Backend, markers_file: Path
) -> None:
    env = _bot_env(slack=local_slack, backend=sqlite_backend, markers=markers_file, extra={})
    assert "SLACK_APP_TOKEN" not in env, "_bot_env drops every SLACK_* variable of the test's own environment"
    done = _run_socket(env)
    assert done.returncode != 0
    assert "needs SLACK_APP_TOKEN" in done.stderr and "xapp-" in done.stderr, done.stderr
    assert local_slack.socket_mode.connections_opened == 0


async def test_socket_with_a_refused_app_token_exits_instead_of_retrying_forever(
    local_slack: LocalSlack, sqlite_backend: Backend, markers_file: Path
) -> None:
    # A bot token given as the app token is refused before Slack is asked (tests/bot/test_cli.py).
    for token, error in (("xapp-revoked", "invalid_auth"),):
        extra = {"SLACK_APP_TOKEN": token}
        env = _bot_env(slack=local_slack, backend=sqlite_backend, markers=markers_file, extra=extra)
        done = await asyncio.to_thread(_run_socket, env)  # LocalSlack answers on this test's event loop
        assert done.returncode != 0
        assert f"Slack refused SLACK_APP_TOKEN ({error})" in done.stderr, done.stderr[-2000:]
    assert [r["error"] for r in local_slack.rejected] == ["invalid_auth"]
    local_slack.rejected.clear()  # refused on purpose; the autouse check is for the bot's own calls
