"""The bot on AWS Lambda when things go wrong: a container dies mid-work, the function may not
invoke itself, and Slack's secrets come from Secrets Manager (or do not come at all).

Same set-up as ``test_lambda.py`` (``tests/e2e/lambda_env.py``): every event through
``handler()`` in container processes, DynamoDB on moto's server, the local Slack over HTTP,
self-invocations recorded by ``LocalLambda`` and replayed by the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from pathlib import Path

import boto3
import pytest

from engine.records import AskStatus, RunStatus
from localslack import LOCAL_SIGNING_SECRET
from tests.e2e.conftest import CHANNEL, all_text, eventually, finished_message, live_buttons
from tests.e2e.lambda_env import (
    BOT_APP_ID,
    LIVE,
    SLACK_ACK_LIMIT,
    LambdaDeployment,
    assert_small_envelope,
)
from tests.support.aws import REGION, CountingMotoServer
from tests.support.lambda_ import (
    ACCOUNT,
    LambdaContainerDied,
    LambdaHandlerError,
    replay,
    scheduled_event,
)

FAST = {"LEASE_SECONDS": "5", "DELIVERY_GRACE_SECONDS": "1"}
SLACK_SECRETS = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")


# -- 8. a container killed mid-work ----------------------------------------------------------------


async def test_a_container_killed_after_saving_leaves_the_end_to_the_scheduled_sweep(
    deployment: LambdaDeployment,
) -> None:
    """``APPROVAL_BOT_CRASH_AT=saved``: the click's container runs the approved tool, saves the end of
    the run, and SIGKILLs itself before posting it. The sweep posts it, once; nothing runs again."""
    d = deployment
    pool = d.pool(FAST)
    crashing = d.pool({**FAST, "APPROVAL_BOT_CRASH_AT": "saved"})
    user, _ = d.user(pool.new())
    card = await d.start_run(user, pool.new())
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (decide,) = d.local_lambda.take()

    victim = crashing.new()
    (crashed,) = await replay(d.local_lambda, victim, invocations=[decide], raise_errors=False)
    assert isinstance(crashed.error, LambdaContainerDied), crashed
    await eventually(lambda: not victim.alive, timeout=10, what="the container to be gone")
    run = d.only_run()
    assert run.status is RunStatus.COMPLETED and run.final is None and run.owes_slack, "saved, not posted"
    assert d.marker_lines() == ["writer:hello"] and finished_message(d.slack) is None
    assert d.local_lambda.invocations == []

    sweeper = pool.new()
    grace = float(FAST["DELIVERY_GRACE_SECONDS"])  # the function's; this process keeps the default
    await asyncio.sleep(max(0.0, run.updated_at + grace - time.time()) + 0.2)
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 1, "handed": 1}
    (fan_out,) = d.local_lambda.take()
    assert assert_small_envelope(fan_out, "sweep_run")["run_id"] == run.run_id
    assert await d.replay_in(pool.new(), [fan_out]) == [{"ok": True}]

    done = finished_message(d.slack)
    assert done is not None and "writer result: wrote writer:hello" in all_text(done)
    assert len(d.posts("final")) == 1, "posted once"
    assert d.marker_lines() == ["writer:hello"], "the saved pass is never run again"
    assert d.only_run().final is not None and not d.only_run().owes_slack
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 0, "handed": 0}
    assert "Traceback" not in pool.stderr_text()


async def test_a_container_killed_mid_pass_is_taken_over_once_its_lease_expires(
    deployment: LambdaDeployment,
) -> None:
    """The click's container is killed while the approved tool runs (before its side effect and
    before any save). Its lease (``LEASE_SECONDS=5``) keeps the sweep away until it expires; then
    the sweep fans the run out and the takeover, finding the approval handed to a dead pass, does
    not run the tool again: it posts a "may have acted" card, whose Retry runs it, once."""
    d = deployment
    pool = d.pool(FAST)
    slow = d.pool({**FAST, "APPROVAL_BOT_TEST_SLOW_SECONDS": "60"})
    user, _ = d.user(pool.new())
    card = await d.start_run(user, pool.new())
    sweeper = pool.new()
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 0, "handed": 0}  # warm, for later
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (decide,) = d.local_lambda.take()

    victim = slow.new()
    pending = asyncio.ensure_future(replay(d.local_lambda, victim, invocations=[decide], raise_errors=False))
    started = Path(f"{d.markers}.approval_bot_test_started")
    await eventually(started.exists, timeout=30, what="the approved tool to start")
    victim.kill()
    (killed,) = await pending
    assert isinstance(killed.error, LambdaContainerDied), killed
    run = d.only_run()
    assert run.status is RunStatus.RESUMING and run.lease_owner is not None and run.lease_until is not None
    assert d.marker_lines() == []

    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 0, "handed": 0}  # the lease holds
    left = run.lease_until - time.time()
    assert left > 0, f"the sweep above came {-left:.2f}s after the lease ended: the check proved nothing"
    await asyncio.sleep(left + 0.2)
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 1, "handed": 1}
    (fan_out,) = d.local_lambda.take()
    assert assert_small_envelope(fan_out, "sweep_run")["run_id"] == run.run_id
    assert await d.replay_in(pool.new(), [fan_out]) == [{"ok": True}]
    assert d.marker_lines() == [], "the takeover did not run the approved tool again"
    (again,) = [m for m in d.slack.messages(CHANNEL) if "may have acted" in all_text(m)]
    await user.click(message=again, label="Retry", user_id="U0BOB", channel_id=CHANNEL)
    assert await d.replay_in(pool.new(), d.local_lambda.take()) == [{"ok": True}]

    done = finished_message(d.slack)
    assert done is not None and "writer result: wrote writer:hello" in all_text(done)
    assert d.marker_lines() == ["writer:hello"], "the tool's side effect ran once, on Retry"
    assert len(d.posts("final")) == 1
    ask = next(a for a in d.only_run().asks.values() if a.retry_of is None)
    assert len(d.posts(ask.key)) == 1, "the card was never posted again"
    decided = d.slack.message(CHANNEL, card["ts"])
    assert decided is not None and live_buttons(decided) == [] and "Approved by <@U0BOB>" in str(decided["blocks"])
    assert d.only_run().status is RunStatus.COMPLETED


# -- 9. the function may not invoke itself -----------------------------------------------------------


@pytest.mark.parametrize("code", ["AccessDeniedException", "TooManyRequestsException"])
async def test_a_refused_self_invocation_is_told_in_the_ack_and_nothing_is_recorded(
    deployment: LambdaDeployment, code: str
) -> None:
    """``AccessDeniedException`` (IAM) and ``TooManyRequestsException`` (throttled) before a slash
    command, then before an Approve click. The handoff makes one try (a backoff before a second
    would not fit in Slack's 3 s), so both are told within the limit."""
    d = deployment
    pool = d.pool()
    front = pool.new()
    bound = SLACK_ACK_LIMIT
    user, transport = d.user(front, ack_timeout=None)
    helped = await user.slash_command(text="help", user_id="U0ALICE", channel_id=CHANNEL)  # a warm container
    assert helped.status == 200 and d.local_lambda.calls == []

    d.local_lambda.fail_next(None, code)
    ack = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    d.local_lambda.clear()
    assert ack.status == 200 and transport.acks[-1].seconds < bound, transport.acks[-1]
    told = f"I could not start that just now (Lambda said {code}). Try again in a moment."
    assert ack.text == told, ack
    assert d.slack.ephemerals("U0ALICE")[-1]["text"] == told
    attempts = d.local_lambda.calls
    assert attempts and all(c.error == code for c in attempts), attempts
    assert d.local_lambda.invocations == [] and d.run_ids() == [] and d.slack.calls == []
    print(f"\n{code}: {len(attempts)} Invoke attempt(s), ack {transport.acks[-1].seconds:.3f}s")

    card = await d.start_run(user, pool.new())
    d.local_lambda.fail_next(None, code)
    click = await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    d.local_lambda.clear()
    assert click.status == 200 and transport.acks[-1].seconds < bound, transport.acks[-1]
    assert d.local_lambda.invocations == []
    assert d.responses_to("U0BOB") == [
        f"Nothing was recorded: I could not hand your click on (Lambda said {code}). Try again."
    ]
    assert live_buttons(d.slack.message(CHANNEL, card["ts"]) or {}) == LIVE, "the card stays live"
    assert [a.status for a in d.only_run().asks.values()] == [AskStatus.PENDING]

    # Once the function may invoke itself again, the same card works.
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (decide,) = d.local_lambda.take()
    assert await d.replay_in(pool.new(), [decide]) == [{"ok": True}]
    assert finished_message(d.slack) is not None and d.marker_lines() == ["writer:hello"]
    assert "Traceback" not in pool.stderr_text()


async def test_a_stalled_invoke_api_still_lets_the_ack_beat_slacks_limit(deployment: LambdaDeployment) -> None:
    """Lambda's Invoke API holds every request for 2.5 s (an API having a bad minute). Whatever the
    handoff then concludes, Slack must get the command's ack within its 3 s, or the person sees
    "operation_timeout" and retries, not knowing whether anything started."""
    d = deployment
    pool = d.pool()
    user, transport = d.user(pool.new())
    assert (await user.slash_command(text="help", user_id="U0ALICE", channel_id=CHANNEL)).status == 200

    d.local_lambda.delay_next(2.5, n=None)
    with contextlib.suppress(TimeoutError):  # Slack gave up waiting: judged below
        await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    await transport.aclose()  # let an invocation Slack gave up on finish, to read how long it took
    d.local_lambda.clear()
    attempts = len(d.local_lambda.calls)
    seconds = pool.containers[0].invocations[-1].wall_seconds
    ack = transport.acks[-1]
    assert ack.error is None and ack.status == 200 and seconds < SLACK_ACK_LIMIT, (
        f"the ack took {seconds:.2f}s ({attempts} Invoke attempts of up to 2 s each, "
        f"{len(d.local_lambda.invocations)} of them accepted by Lambda): {ack}"
    )


# -- 10. Slack's secrets from Secrets Manager ---------------------------------------------------------


def _secret(moto: CountingMotoServer, value: dict[str, str]) -> str:
    client = boto3.client("secretsmanager", region_name=REGION, endpoint_url=moto.url)
    return client.create_secret(Name=f"approval-bot-{uuid.uuid4().hex[:8]}", SecretString=json.dumps(value))["ARN"]


async def test_slack_secrets_from_secrets_manager(deployment: LambdaDeployment) -> None:
    d = deployment
    signing_secret = f"sm-signing-{uuid.uuid4().hex}"
    arn = _secret(d.moto, {"SLACK_BOT_TOKEN": d.slack.bot_token, "SLACK_SIGNING_SECRET": signing_secret})
    # At DEBUG, in JSON lines (Lambda's default format) and with the metrics on: still no secret.
    env = {"SLACK_SECRET_ARN": arn, "AWS_ENDPOINT_URL_SECRETS_MANAGER": d.moto.url, "LOG_LEVEL": "DEBUG"}
    pool = d.pool({**env, "METRICS": "on"}, drop=SLACK_SECRETS)
    assert not set(SLACK_SECRETS) & set(pool.env)
    front = pool.new()
    user, transport = d.user(front, signing_secret=signing_secret)

    card = await d.start_run(user, pool.new())
    assert transport.acks[-1].status == 200 and transport.acks[-1].seconds < SLACK_ACK_LIMIT
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (decide,) = d.local_lambda.take()
    assert await d.replay_in(pool.new(), [decide]) == [{"ok": True}]
    done = finished_message(d.slack)
    assert done is not None and "writer result: wrote writer:hello" in all_text(done)

    for secret in ("another-secret", LOCAL_SIGNING_SECRET):  # a stranger's, and the one tests use elsewhere
        stranger, _ = d.user(front, signing_secret=secret)
        refused = await stranger.slash_command(text="run guarded-write evil", user_id="U0EVE", channel_id=CHANNEL)
        assert refused.status == 401, (secret, refused)
    assert d.local_lambda.invocations == [] and len(d.run_ids()) == 1

    reads = d.moto.counts(app_id=BOT_APP_ID).get("secretsmanager.POST", 0)
    assert reads == len(pool.containers) == 3, "the secret is read once per container, not per event"
    for container in pool.containers:
        log = container.stderr_text()
        assert signing_secret not in log and d.slack.bot_token not in log, container.name
        assert "Traceback" not in log
    assert any('"level":"DEBUG"' in c.stderr_text() for c in pool.containers), "the search covered DEBUG lines"


@pytest.mark.parametrize("problem", ["absent", "incomplete", "unset"])
async def test_an_unusable_secret_fails_the_first_event_with_one_line(
    deployment: LambdaDeployment, problem: str
) -> None:
    """``absent``: the ARN names no secret. ``incomplete``: the secret lacks the bot token.
    ``unset``: the function was deployed with neither ``SLACK_SECRET_ARN`` nor the plain
    variables. The Lambda deployment is configured through the ARN, so the one-line error names it,
    and whatever was found, no secret's value reaches the log."""
    d = deployment
    leaked = f"sm-signing-{uuid.uuid4().hex}"
    env = {"AWS_ENDPOINT_URL_SECRETS_MANAGER": d.moto.url}
    expected: list[str] = []
    if problem == "absent":
        env["SLACK_SECRET_ARN"] = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:approval-bot-gone-AbCdEf"
        expected = [env["SLACK_SECRET_ARN"], "ResourceNotFoundException"]
    elif problem == "incomplete":
        env["SLACK_SECRET_ARN"] = _secret(d.moto, {"SLACK_SIGNING_SECRET": leaked})
        expected = [env["SLACK_SECRET_ARN"], "has no SLACK_BOT_TOKEN"]
    pool = d.pool(env, drop=SLACK_SECRETS)
    front = pool.new()
    user, transport = d.user(front, signing_secret=leaked)

    ack = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    assert ack.status == 502, ack  # the Function URL's answer for a function that failed
    assert d.local_lambda.calls == [] and d.run_ids() == [] and d.slack.calls == []
    (error,) = transport.errors
    assert isinstance(error, LambdaHandlerError)
    log = front.stderr_text()
    shown = [leaked[i : i + 12] for i in range(len(leaked) - 11) if leaked[i : i + 12] in log]
    assert not shown, f"part of the secret's value is in the function's log: {shown[:3]}"
    message = error.error_message
    assert "\n" not in message and "SLACK_SECRET_ARN" in message, f"{error.error_type}: {message}"
    assert all(part in message for part in expected), message
