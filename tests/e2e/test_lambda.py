"""The bot deployed as an AWS Lambda function, end to end, through ``handler()`` in fresh container processes.

Every request reaches the function the way Slack's would (signed, wrapped in a Function URL
or API Gateway event), each in a container process of its own (``tests/support/lambda_/``);
runs are stored in DynamoDB on moto's server and Slack is the local Slack over HTTP. The
work the function hands itself past the ack (an ``Event`` self-invocation) is recorded by
``LocalLambda`` and replayed by the test, in other containers, as often as Lambda may
deliver it. What an approval costs on Lambda is measured on the way (invocations and
DynamoDB requests per cycle, cold and warm acks).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from bot.aws_lambda.invoke import envelope_key, seal
from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from bot.work import StartRun, from_wire
from engine.records import AskStatus, RunStatus, Verdict
from localslack import LOCAL_SIGNING_SECRET
from tests.e2e.conftest import CHANNEL, all_text, cards, finished_message, live_buttons
from tests.e2e.lambda_env import (
    LIVE,
    SLACK_ACK_LIMIT,
    LambdaDeployment,
    assert_small_envelope,
    forged_copy,
)
from tests.support.lambda_ import FUNCTION_NAME, EventFormat, replay, scheduled_event
from tests.support.start_books import had_started_before

SLOW_SLACK = 0.3
README_CYCLE_REQUESTS = 7
"""README "What one approval costs": create, save the pause, index the ask for its deciders' inboxes, record the
card, decide+claim, save the end, record the final message."""
START_LIMIT_REQUESTS = 1
"""The start limits' own: one small conditional write to the person's book (UpdateItem)."""
HOME_VIEWER_READS = 2
"""Who uses App Home, read once a minute per process: each cold invocation that changes the run reads it."""


def no_tracebacks(log: str) -> None:
    assert "Traceback" not in log, log[-3000:]


# -- 1. the whole approval, through each front door ----------------------------------------------


@pytest.mark.parametrize(
    ("event_format", "base64"),
    [("function_url", None), ("rest_api", True), ("http_api", None)],
    ids=["function-url", "rest-api-1.0-base64", "http-api-2.0"],
)
async def test_an_approval_through_each_front_door(
    deployment: LambdaDeployment, event_format: EventFormat, base64: bool | None
) -> None:
    d = deployment
    pool = d.pool()
    front, starter, resumer = pool.new(), pool.new(), pool.new()
    user, transport = d.user(front, event_format=event_format, base64=base64)
    had_started_before(d.store(), "U0ALICE")  # the usual start: a first one ever costs a request more

    ack = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    cold = transport.acks[-1]
    assert (ack.status, ack.text) == (200, ""), ack
    assert cold.cold and cold.status == 200 and cold.seconds < SLACK_ACK_LIMIT, cold
    (start,) = d.local_lambda.take()
    assert d.local_lambda.calls == [start], "exactly one Invoke for the command"
    work = assert_small_envelope(start, "start")
    assert (work["graph"], work["task"], work["user"], work["channel"]) == (
        "guarded-write",
        "hello",
        "U0ALICE",
        CHANNEL,
    )
    assert d.slack.calls == [] and d.run_ids() == [], "the ack itself touches neither Slack nor the store"

    assert await d.replay_in(starter, [start]) == [{"ok": True}]
    card = await d.card()
    assert live_buttons(card) == LIVE and "writer:hello" in str(card["blocks"])
    assert d.local_lambda.invocations == [], "a start hands nothing further on"

    click = await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    warm = transport.acks[-1]
    assert click.status == 200 and not warm.cold and warm.seconds < SLACK_ACK_LIMIT, warm
    (decide,) = d.local_lambda.take()
    work = assert_small_envelope(decide, "decide")
    assert work["decision"]["user"] == "U0BOB" and work["decision"]["verdict"] == "approve"
    assert live_buttons(d.slack.message(CHANNEL, card["ts"]) or {}) == LIVE, "decided after the ack, not in it"

    assert await d.replay_in(resumer, [decide]) == [{"ok": True}]
    done = finished_message(d.slack)
    assert done is not None and "writer result: wrote writer:hello" in all_text(done)
    assert done["thread_ts"] == card["thread_ts"]
    decided = d.slack.message(CHANNEL, card["ts"])
    assert decided is not None and live_buttons(decided) == [] and "Approved by <@U0BOB>" in str(decided["blocks"])
    assert d.marker_lines() == ["writer:hello"], "the side effect ran once"
    run = d.only_run()
    assert run.status is RunStatus.COMPLETED and run.lease_owner is None and not run.owes_slack
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.CONSUMED
    assert [len(d.posts(w)) for w in ("announcement", ask.key, "final")] == [1, 1, 1]
    assert d.responses_to("U0BOB") == [], "the winner of a click is told nothing: the card says it"

    assert len(d.local_lambda.calls) == 2, "one self-invocation for the start, one for the click"
    requests = d.bot_requests()
    print(
        f"\n[{event_format}] cold ack {cold.seconds:.3f}s, warm ack {warm.seconds:.3f}s, "
        f"invocations {len(d.local_lambda.calls)}, DynamoDB {sum(requests.values())} {requests}"
    )
    assert requests.get("dynamodb.GetItem") == HOME_VIEWER_READS, requests
    assert sum(requests.values()) - HOME_VIEWER_READS == README_CYCLE_REQUESTS + START_LIMIT_REQUESTS, requests
    no_tracebacks(pool.stderr_text())


# -- 2. and 3. the modals: opened in the click's ack, decided in the submission's ack ------------


async def test_reject_opens_the_modal_in_the_ack_and_is_decided_in_the_submissions_ack(
    deployment: LambdaDeployment,
) -> None:
    d = deployment
    pool = d.pool()
    front = pool.new()
    user, transport = d.user(front)
    card = await d.start_run(user, pool.new())

    async def slow_views_open(event: str, details: dict[str, Any]) -> None:
        if event == "views.open" or (event == "fault" and details.get("method") == "views.open"):
            await asyncio.sleep(SLOW_SLACK)  # Slack answers views.open late (the modal is open already)

    d.slack.on_change.append(slow_views_open)
    # A container is frozen once its invocation returns: whatever the click does after its ack
    # (views.open, telling the clicker it failed) must happen before the function returns.
    d.slack.inject_failures(method="views.open", status=500)
    refused = await user.click(message=card, label="Reject", user_id="U0BOB", channel_id=CHANNEL)
    assert refused.status == 200 and SLOW_SLACK <= transport.acks[-1].seconds < SLACK_ACK_LIMIT, transport.acks[-1]
    (told,) = d.responses_to("U0BOB")  # no replay, no waiting: said inside the click's invocation
    assert "nothing was decided" in told and d.slack.open_views("U0BOB") == [], told

    click = await user.click(message=card, label="Reject", user_id="U0BOB", channel_id=CHANNEL)
    assert click.status == 200 and SLOW_SLACK <= transport.acks[-1].seconds < SLACK_ACK_LIMIT, transport.acks[-1]
    (view,) = d.slack.open_views("U0BOB")  # no replay in between: views.open ran inside the ack
    assert d.local_lambda.invocations == [], "opening a modal hands nothing off"
    d.slack.on_change.remove(slow_views_open)

    submitted = await user.submit_view(
        view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "not on a Friday"}}, user_id="U0BOB"
    )
    assert submitted.status == 200 and transport.acks[-1].seconds < SLACK_ACK_LIMIT
    assert d.slack.open_views("U0BOB") == [], "the modal closed: the decision is recorded"
    (ask,) = d.only_run().asks.values()
    assert ask.status is AskStatus.DECIDED and ask.decision is not None
    assert (ask.decision.verdict, ask.decision.user, ask.decision.text) == (Verdict.REJECT, "U0BOB", "not on a Friday")
    (pick_up,) = d.local_lambda.take()
    assert assert_small_envelope(pick_up, "pick_up")["run_id"] == d.only_run().run_id

    assert await d.replay_in(pool.new(), [pick_up]) == [{"ok": True}]
    done = finished_message(d.slack)
    assert done is not None and "rejected by U0BOB: not on a Friday" in all_text(done)
    assert str(done["text"]).startswith(":no_entry:"), "a rejection reads as one"
    assert d.marker_lines() == [], "a rejected write never happens"
    assert "Rejected by <@U0BOB>" in str(d.slack.message(CHANNEL, card["ts"]))
    assert d.only_run().status is RunStatus.COMPLETED
    assert len(d.posts("final")) == 1
    no_tracebacks(pool.stderr_text())


async def test_a_reply_through_the_modal_reaches_the_graph(deployment: LambdaDeployment) -> None:
    d = deployment
    pool = d.pool()
    front = pool.new()
    user, transport = d.user(front)
    card = await d.start_run(user, pool.new())

    await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = d.slack.open_views("U0BOB")
    empty = await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "  "}}, user_id="U0BOB")
    assert empty.status == 200 and d.slack.open_views("U0BOB"), "an empty reply keeps the modal open"
    assert d.local_lambda.invocations == [] and [a.decision for a in d.only_run().asks.values()] == [None]

    await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "use the canary"}}, user_id="U0BOB")
    assert transport.acks[-1].seconds < SLACK_ACK_LIMIT and d.slack.open_views("U0BOB") == []
    (ask,) = d.only_run().asks.values()
    assert ask.decision is not None and (ask.decision.verdict, ask.decision.text) == (Verdict.REPLY, "use the canary")
    (pick_up,) = d.local_lambda.take()
    assert_small_envelope(pick_up, "pick_up")

    assert await d.replay_in(pool.new(), [pick_up]) == [{"ok": True}]
    assert finished_message(d.slack) is not None
    assert d.marker_lines() == ["writer:hello | reply: use the canary"]
    replied = d.slack.message(CHANNEL, card["ts"])
    assert replied is not None and "Replied by <@U0BOB>" in str(replied["blocks"]) and live_buttons(replied) == []
    no_tracebacks(pool.stderr_text())


# -- 4. eight people at once, each in a cold container -------------------------------------------


async def test_eight_simultaneous_approvals_in_cold_containers_decide_once(deployment: LambdaDeployment) -> None:
    d = deployment
    warm = d.pool()
    starter_user, _ = d.user(warm.new())
    card = await d.start_run(starter_user, warm.new())
    people = [f"U0CLICK{i}" for i in range(8)]

    clickers = d.pool(policy="cold")
    user, transport = d.user(clickers, ack_timeout=None)  # 8 cold starts at once on 2 cores: timed, not bounded
    acks = await asyncio.gather(
        *(user.click(message=card, label="Approve", user_id=p, channel_id=CHANNEL) for p in people)
    )
    assert [a.status for a in acks] == [200] * 8
    assert len({a.container for a in transport.acks}) == 8 and all(a.cold for a in transport.acks)
    invocations = d.local_lambda.take()
    assert sorted(assert_small_envelope(i, "decide")["decision"]["user"] for i in invocations) == people
    clickers.close()

    replayers = d.pool(policy="cold")
    done = await replay(d.local_lambda, replayers, invocations=invocations, concurrently=True, timeout=120)
    assert len({r.container for r in done}) == 8 and all(r.result == {"ok": True} for r in done), done
    assert d.local_lambda.invocations == []

    run = d.only_run()
    (ask,) = run.asks.values()
    assert ask.decision is not None and ask.decision.user in people
    winner = ask.decision.user
    assert run.status is RunStatus.COMPLETED
    assert d.marker_lines() == ["writer:hello"], "one decision, one resume, one side effect"
    assert len(d.posts("final")) == 1
    decided = d.slack.message(CHANNEL, card["ts"])
    assert decided is not None and f"Approved by <@{winner}>" in str(decided["blocks"]) and live_buttons(decided) == []
    assert d.responses_to(winner) == []
    for loser in set(people) - {winner}:
        assert d.responses_to(loser) == [f"Already approved by <@{winner}>; your click changed nothing."], loser
    print(
        f"\n8 cold click acks: max {max(a.seconds for a in transport.acks):.2f}s, "
        f"min {min(a.seconds for a in transport.acks):.2f}s"
    )
    no_tracebacks(replayers.stderr_text())


# -- 5. events that are not the function's own work -----------------------------------------------


async def test_forged_self_invocations_and_stray_events_do_nothing(deployment: LambdaDeployment) -> None:
    d = deployment
    pool = d.pool()
    front = pool.new()
    user, _ = d.user(front)
    ack = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    assert ack.status == 200
    (start,) = d.local_lambda.invocations  # kept, so the real start can run after the forgeries
    start_work = from_wire(start.event()["approval_bot"]["work"])
    assert isinstance(start_work, StartRun)
    stale = StartRun(**{**vars(start_work), "run_id": "forgedstale000000"})

    forged = {
        "another run id, same seal": forged_copy(start, lambda e: e["approval_bot"]["work"].update(run_id="forged0")),
        "another task, same seal": forged_copy(start, lambda e: e["approval_bot"]["work"].update(task="drop all")),
        "no seal": forged_copy(start, lambda e: e.pop("sig")),
        "sealed with another secret": seal(
            start_work, key=envelope_key("someone-elses-secret"), function=FUNCTION_NAME, now=time.time()
        ),
        "sealed for another function": seal(
            start_work, key=envelope_key(LOCAL_SIGNING_SECRET), function="other-function", now=time.time()
        ),
        "sealed seven hours ago": seal(
            stale, key=envelope_key(LOCAL_SIGNING_SECRET), function=FUNCTION_NAME, now=time.time() - 7 * 3600
        ),
    }
    target = pool.new()
    d.moto.reset_counts()
    for what, event in forged.items():
        assert await target.invoke(event) == {"ok": False, "error": "refused"}, what
    assert await target.invoke({"foo": 1}) == {"ok": False, "error": "unrecognised event"}

    assert d.run_ids() == [], "no run recorded"
    assert d.bot_requests() == {}, "the store was not even asked"
    assert d.slack.calls == [] and d.slack.responses == [], "nothing said in Slack"
    assert d.local_lambda.invocations == [start], "nothing handed on"
    log = target.stderr_text()
    refusals = [line for line in log.splitlines() if "refused an event posing as this function's own work" in line]
    # One JSON line each (LOG_FORMAT's default on Lambda), at WARNING.
    assert len(refusals) == len(forged) and all(json.loads(line)["level"] == "WARNING" for line in refusals), log
    assert len([line for line in log.splitlines() if "ignored an event" in line]) == 1, log
    assert '"level":"ERROR"' not in log
    no_tracebacks(log)

    # The genuine envelope still works, in the very container that refused the others.
    assert await d.replay_in(target, d.local_lambda.take()) == [{"ok": True}]
    card = await d.card()

    # A forged click on the live card: its decision never lands.
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (decide,) = d.local_lambda.take()  # the genuine click; never delivered
    before = d.only_run()
    calls_before = len(d.slack.calls)
    for event in (
        forged_copy(decide, lambda e: e["approval_bot"]["work"]["decision"].update(user="U0MALLORY")),
        forged_copy(decide, lambda e: e["approval_bot"]["work"]["decision"].update(verdict="trust")),
        forged_copy(decide, lambda e: e.update(sig="0" * 64)),
    ):
        assert await target.invoke(event) == {"ok": False, "error": "refused"}
    after = d.only_run()
    assert after.version == before.version and [a.status for a in after.asks.values()] == [AskStatus.PENDING]
    assert len(d.slack.calls) == calls_before and live_buttons(d.slack.message(CHANNEL, card["ts"]) or {}) == LIVE
    assert d.marker_lines() == []
    no_tracebacks(target.stderr_text())


# -- 6. Slack retries a command; Lambda delivers an event twice ----------------------------------


async def test_a_retried_slash_command_delivered_three_times_starts_one_run(deployment: LambdaDeployment) -> None:
    d = deployment
    pool = d.pool()
    front = pool.new()
    user, transport = d.user(front)
    first = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    body, stamp = transport.sent[-1]
    retry = await transport.post(
        body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}, timestamp=stamp
    )
    assert (first.status, retry.status) == (200, 200)
    assert all(a.status == 200 and a.seconds < SLACK_ACK_LIMIT for a in transport.acks), transport.acks
    one, two = d.local_lambda.take()
    assert assert_small_envelope(one, "start") == assert_small_envelope(two, "start"), "the same run id both times"

    done = await replay(d.local_lambda, pool, invocations=[one, two, one], concurrently=True)
    assert len({r.container for r in done}) == 3 and all(r.result == {"ok": True} for r in done), done
    card = await d.card()
    assert len(d.run_ids()) == 1
    assert len(d.posts("announcement")) == 1 and len(cards(d.slack)) == 1
    (ask,) = d.only_run().asks.values()
    assert len(d.posts(ask.key)) == 1 and live_buttons(card) == LIVE
    assert d.responses_to("U0ALICE") == [], "nobody is told of the duplicates"
    assert d.local_lambda.invocations == []
    no_tracebacks(pool.stderr_text())


async def test_a_click_delivered_twice_by_lambda_counts_once_and_misleads_nobody(
    deployment: LambdaDeployment,
) -> None:
    d = deployment
    pool = d.pool()
    front = pool.new()
    user, _ = d.user(front)
    card = await d.start_run(user, pool.new())
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (decide,) = d.local_lambda.take()

    assert await d.replay_in(pool.new(), [decide]) == [{"ok": True}]
    assert await d.replay_in(pool.new(), [decide]) == [{"ok": True}]  # Lambda's at-least-once delivery

    assert d.marker_lines() == ["writer:hello"]
    assert len(d.posts("final")) == 1
    assert d.only_run().status is RunStatus.COMPLETED
    # The second delivery is the same click (same person, verdict and time): it is not news to anyone.
    assert d.responses_to("U0BOB") == [], "the person whose click decided is told their click changed nothing"


# -- 7. the scheduled sweep: a decision whose handed-off work never ran ---------------------------


@pytest.mark.parametrize("lost", ["dropped", "refused"])
async def test_the_scheduled_sweep_fans_out_a_decision_nobody_picked_up(
    deployment: LambdaDeployment, lost: str
) -> None:
    """``dropped``: Lambda accepted the pick-up but it never ran. ``refused``: Lambda answered 500 to
    every attempt (boto3's retries included); the submission's ack still closes the modal."""
    d = deployment
    pool = d.pool({"LEASE_SECONDS": "5", "DELIVERY_GRACE_SECONDS": "1"})
    front = pool.new()
    user, transport = d.user(front)
    card = await d.start_run(user, pool.new())
    await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = d.slack.open_views("U0BOB")

    if lost == "refused":
        d.local_lambda.fail_next(None, "ServiceException")
    submitted = await user.submit_view(
        view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "use the canary"}}, user_id="U0BOB"
    )
    d.local_lambda.clear()
    assert submitted.status == 200 and transport.acks[-1].seconds < SLACK_ACK_LIMIT
    assert d.slack.open_views("U0BOB") == [], "the decision stands: the modal closed"
    if lost == "refused":
        assert d.local_lambda.invocations == []
        refused = d.local_lambda.calls[1:]  # after the start's Invoke: the pick-up's one try
        assert refused and all(c.error == "ServiceException" for c in refused), refused
    else:
        (pick_up,) = d.local_lambda.take()
        assert_small_envelope(pick_up, "pick_up")  # and never replayed
    run = d.only_run()
    assert run.status is RunStatus.WAITING and run.lease_owner is None
    assert [a.status for a in run.asks.values()] == [AskStatus.DECIDED]
    assert d.marker_lines() == [] and finished_message(d.slack) is None

    sweeper = pool.new()
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 1, "handed": 1}
    (fan_out,) = d.local_lambda.take()
    assert assert_small_envelope(fan_out, "sweep_run")["run_id"] == run.run_id
    assert await d.replay_in(pool.new(), [fan_out]) == [{"ok": True}]

    done = finished_message(d.slack)
    assert done is not None and "writer result: wrote writer:hello | reply: use the canary" in all_text(done)
    assert d.marker_lines() == ["writer:hello | reply: use the canary"]
    assert len(d.posts("final")) == 1 and d.only_run().status is RunStatus.COMPLETED
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 0, "handed": 0}, "nothing left"
    assert d.local_lambda.invocations == []
    assert d.responses_to("U0BOB") == [], "a decision that stands needs no excuse"
    no_tracebacks(pool.stderr_text())


# -- 8. the scheduled sweep expires an ask nobody decided ----------------------------------------


async def test_the_scheduled_sweep_expires_an_ask_and_the_run_goes_on(deployment: LambdaDeployment) -> None:
    """Expiry on Lambda is the EventBridge schedule's: it fans the due run out to an
    invocation of its own, which decides the ask as expired and resumes the run."""
    d = deployment
    pool = d.pool({"ASK_EXPIRES_AFTER": "2", "DELIVERY_GRACE_SECONDS": "1"})
    user, _ = d.user(pool.new())
    card = await d.start_run(user, pool.new())
    sweeper = pool.new()
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 0, "handed": 0}, "not before it expires"

    await asyncio.sleep(2.5)
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 1, "handed": 1}
    (fan_out,) = d.local_lambda.take()
    assert await d.replay_in(pool.new(), [fan_out]) == [{"ok": True}]

    done = finished_message(d.slack)
    assert done is not None and "rejected by None: Nobody decided within" in all_text(done)
    assert d.marker_lines() == [], "an expired ask is a rejection: the gated write never ran"
    run = d.only_run()
    (ask,) = run.asks.values()
    assert run.status is RunStatus.COMPLETED and ask.decision is not None and ask.decision.expired
    expired_card = d.slack.message(CHANNEL, card["ts"])
    assert expired_card is not None and "Expired" in str(expired_card["blocks"])
    assert await sweeper.invoke(scheduled_event()) == {"ok": True, "due": 0, "handed": 0}, "nothing left"
    no_tracebacks(pool.stderr_text())
