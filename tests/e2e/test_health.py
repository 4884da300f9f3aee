"""A truthful start and a truthful ``/healthz``, through the real ``approval-bot`` process.

A bot that cannot reach its store must say so: at start with one line and exit 2 (a
table or bucket that does not exist), and later, when the store goes away under a
running bot, with ``/healthz`` answering 503 and a one-line reason, and the sweeper
logging the cause once rather than a traceback every round. ``GRAPH_MODEL=offline``
must mean offline: a plain ``Agent()`` fails its run with a line naming it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.health import STORE_FAILED
from localslack import LocalSlack
from tests.e2e.conftest import (
    CHANNEL,
    REPO,
    Backend,
    BotProcess,
    StartBot,
    UserFor,
    _bot_env,
    _free_port,
    all_text,
    finished_message,
)
from tests.support.aws import REGION, CountingMotoServer

FAST_SWEEP = ["--sweep-seconds", "1"]


async def _health(bot: BotProcess) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(bot.url + "/healthz") as response:
        return response.status, await response.json()


async def _health_until(bot: BotProcess, status: int, *, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got, body = await _health(bot)
        if got == status:
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"/healthz still {got} {body} after {timeout}s:\n{bot.output()[-3000:]}")
        await asyncio.sleep(0.1)


async def _log_until(bot: BotProcess, text: str, *, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in bot.output():
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not logged within {timeout}s:\n{bot.output()[-3000:]}")
        await asyncio.sleep(0.1)


def _break(backend: Backend) -> str:
    """Take the store away under the running bot; returns what the reason must name."""
    if backend.name == "dynamodb":
        import boto3

        table = backend.env["DYNAMODB_TABLE"]
        boto3.client("dynamodb", region_name=REGION).delete_table(TableName=table)
        return f"DYNAMODB_TABLE={table!r} does not exist"
    with sqlite3.connect(backend.env["SQLITE_PATH"]) as conn:
        conn.execute("DROP TABLE runs")
    return "no such table: runs"


def _mend(backend: Backend) -> None:
    if backend.name == "dynamodb":
        from persistence import create_table

        create_table(table=backend.env["DYNAMODB_TABLE"])  # also what the fixture's teardown deletes
    else:
        backend.open_store()  # creates the schema again


async def test_healthz_is_503_with_a_reason_while_the_store_is_gone_and_the_sweeper_says_so_once(
    start_bot: StartBot, backend: Backend, request: pytest.FixtureRequest
) -> None:
    bot = await start_bot(backend=backend, args=FAST_SWEEP)
    assert await _health(bot) == (200, {"ok": True, "graphs_loaded": True})  # the body it always had
    if backend.name == "dynamodb":  # a load balancer polling fast costs one read per 2 s, not one per poll
        moto: CountingMotoServer = request.getfixturevalue("moto_server")
        before = moto.counts().get("dynamodb.GetItem", 0)
        for _ in range(20):
            assert (await _health(bot))[0] == 200
        assert moto.counts().get("dynamodb.GetItem", 0) - before <= 2

    named = _break(backend)
    body = await _health_until(bot, 503)
    assert body["ok"] is False and body["graphs_loaded"] is True, body
    # The public answer is a fixed sentence (no account, role, table or region); the log names the cause.
    assert body["reason"] == STORE_FAILED, body
    await _log_until(bot, named)

    await _log_until(bot, "sweep failed")
    await asyncio.sleep(2.5)  # two more failing rounds of the one-second sweeper
    output = bot.output()
    assert output.count("sweep failed") == 1, output[-3000:]
    assert "Traceback" not in output, output[-3000:]

    _mend(backend)
    assert (await _health_until(bot, 200))["ok"] is True
    await _log_until(bot, "sweep works again")


def _run_command(mode: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    where = ["--host", "127.0.0.1", "--port", str(_free_port())] if mode == "serve" else []
    command = [sys.executable, "-m", "bot.cli", mode, *where]
    try:
        return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as stuck:
        raise AssertionError(f"approval-bot {mode} started instead of refusing:\n{stuck.stderr!r}") from None


def _one_line(done: subprocess.CompletedProcess[str], *, mode: str, names: Sequence[str]) -> None:
    shown = f"exit {done.returncode}\nstderr:\n{done.stderr[-3000:]}"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, shown
    assert lines[0].startswith(f"approval-bot {mode}: "), shown
    for name in names:
        assert name in lines[0], f"{name!r} missing: {shown}"


async def test_serve_and_socket_refuse_a_table_or_bucket_that_does_not_exist(
    local_slack: LocalSlack, dynamodb_backend: Backend, markers_file: Path
) -> None:
    missing = f"runs-missing-{uuid.uuid4().hex[:8]}"
    bucket = f"snapshots-missing-{uuid.uuid4().hex[:8]}"
    socket_token = {"SLACK_APP_TOKEN": local_slack.socket_mode.app_token}
    cases = [
        ("serve", {"DYNAMODB_TABLE": missing}, [f"DYNAMODB_TABLE={missing!r} does not exist", "create-table"]),
        ("socket", {"DYNAMODB_TABLE": missing, **socket_token}, [f"DYNAMODB_TABLE={missing!r} does not exist"]),
        ("serve", {"SNAPSHOT_BUCKET": bucket}, [f"SNAPSHOT_BUCKET={bucket!r} does not exist", "create-table"]),
    ]
    envs = [_bot_env(slack=local_slack, backend=dynamodb_backend, markers=markers_file, extra=e) for _, e, _ in cases]
    done = await asyncio.gather(
        *(asyncio.to_thread(_run_command, m, env) for (m, _, _), env in zip(cases, envs, strict=True))
    )
    for (mode, _, names), outcome in zip(cases, done, strict=True):
        _one_line(outcome, mode=mode, names=names)
    assert local_slack.socket_mode.connections_opened == 0


async def test_offline_refuses_a_plain_agent_naming_it_before_any_model_call(
    start_bot: StartBot, backend: Backend, user_for: UserFor, local_slack: LocalSlack
) -> None:
    modules = {"GRAPH_MODULES": "tests.support.graphs,tests.support.online_graph"}
    bot = await start_bot(backend=backend, extra_env=modules)
    user = user_for(bot)

    response = await user.slash_command(text="run online hello", user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200
    final = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the failed run")
    text = all_text(final)
    assert "GRAPH_MODEL=offline, but agent 'writer' (node 'write') has a BedrockModel" in text, text
    assert "model=pick_model(offline=ScriptedModel([...]))" in text, text
    assert "bedrock-runtime" not in bot.output()  # nothing was sent
