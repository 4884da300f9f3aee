"""The sweep's own parts: a seed replays the same schedule, the side-effect count can fail, the faults are real.

A fault sweep that reports zeros proves something only if its counters would have
counted a double or a missing side effect; these checks feed them one of each.
"""

from __future__ import annotations

import asyncio

import aiohttp
import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from localslack import LocalSlack
from tests.reliability.figures import Figures, _side_effects
from tests.reliability.schedule import CASES, FAST_GRAPHS, MID_RESUME, RunPlan, plan_runs
from tests.support.aws import REGION
from tests.support.faults import FaultProxy


def test_a_seed_replays_the_same_schedule_and_another_seed_does_not() -> None:
    def lines(seed: int) -> list[str]:
        return [p.describe() for p in plan_runs(seed=seed, runs=30, graphs=tuple(CASES), dynamodb=True, long=True)]

    assert lines(7) == lines(7)
    assert lines(7) != lines(8)
    kinds = {
        k for p in plan_runs(seed=7, runs=60, graphs=FAST_GRAPHS, dynamodb=True, long=True) for k, *_ in p.store_faults
    }
    assert kinds == {"throttle-pte", "throttle", "500", "delay", "lost-response", "outage"}


ALL = {0, 1, 2}


def _figures() -> Figures:
    return Figures(seed=1, backend="test", runs=3, faults={})


def test_a_doubled_or_missing_side_effect_is_counted() -> None:
    approved = RunPlan(index=0, case=CASES["guarded-write"], verdict="approve")
    rejected = RunPlan(index=1, case=CASES["guarded-write"], verdict="reject")
    edited = RunPlan(index=2, case=CASES["tool-gate-test"], verdict="edit")
    plans = [approved, rejected, edited]
    edited_line = 'set_replicas {"replicas": 5, "service": "r2"}'

    exact = _figures()
    _side_effects(exact, plans=plans, decided=ALL, markers=["writer:r0", edited_line])
    assert (exact.side_effects_doubled, exact.decisions_lost, exact.problems) == (0, 0, [])

    doubled = _figures()
    _side_effects(doubled, plans=plans, decided=ALL, markers=["writer:r0", "writer:r0", edited_line])
    assert doubled.side_effects_doubled == 1

    against_a_rejection = _figures()
    _side_effects(against_a_rejection, plans=plans, decided=ALL, markers=["writer:r0", "writer:r1", edited_line])
    assert against_a_rejection.side_effects_doubled == 1, "a rejected run's tool ran"

    unedited = _figures()
    _side_effects(
        unedited, plans=plans, decided=ALL, markers=["writer:r0", 'set_replicas {"replicas": 3, "service": "r2"}']
    )
    assert unedited.decisions_lost == 1 and unedited.side_effects_doubled == 1, "the edit never reached the tool"


def test_a_rerun_after_a_kill_mid_resume_is_the_documented_at_least_once() -> None:
    killed = RunPlan(index=0, case=CASES["guarded-write"], verdict="approve", crash=MID_RESUME)
    figures = _figures()
    _side_effects(figures, plans=[killed], decided={0}, markers=["writer:r0", "writer:r0"])
    assert (figures.side_effects_doubled, figures.side_effects_rerun_documented) == (0, 1)
    twice = _figures()
    _side_effects(twice, plans=[killed], decided={0}, markers=["writer:r0"] * 3)
    assert (twice.side_effects_doubled, twice.side_effects_rerun_documented) == (1, 0), "one rerun, not two"


def test_a_run_without_an_acked_decision_is_checked_too() -> None:
    """Its click got no answer: the approved tool may have run once, and nothing else may."""
    approved = RunPlan(index=0, case=CASES["guarded-write"], verdict="approve")
    rejected = RunPlan(index=1, case=CASES["guarded-write"], verdict="reject")
    maybe = _figures()
    _side_effects(maybe, plans=[approved, rejected], decided=set(), markers=["writer:r0"])
    assert (maybe.side_effects_doubled, maybe.decisions_lost, maybe.problems) == (0, 0, [])
    unasked = _figures()
    _side_effects(unasked, plans=[approved, rejected], decided=set(), markers=["writer:r1"])
    assert unasked.side_effects_doubled == 1, "a run never approved ran its tool"
    twice = _figures()
    _side_effects(twice, plans=[approved, rejected], decided=set(), markers=["writer:r0"] * 2)
    assert twice.side_effects_doubled == 1


def test_the_proxy_throttles_as_dynamodb_does(fault_proxy: FaultProxy, dynamodb_table: str) -> None:
    """Both throttling answers reach botocore as DynamoDB's own: a 400 with that error code."""
    client = boto3.client(
        "dynamodb",
        region_name=REGION,
        endpoint_url=fault_proxy.url,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )
    for kind in ("ProvisionedThroughputExceededException", "ThrottlingException"):
        fault_proxy.throttle(kind=kind, operations={"DescribeTable"}, times=1)  # type: ignore[arg-type]
        with pytest.raises(ClientError) as raised:
            client.describe_table(TableName=dynamodb_table)
        assert raised.value.response["Error"]["Code"] == kind
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert client.describe_table(TableName=dynamodb_table)["Table"]["TableName"] == dynamodb_table
    assert [e.error for e in fault_proxy.events] == ["ProvisionedThroughputExceededException", "ThrottlingException"]


async def test_a_held_slack_answer_lands_at_once_and_answers_late(local_slack: LocalSlack) -> None:
    """A hold past the client's timeout is the timeout after the fact: posted, but the caller never hears."""
    local_slack.hold_answers(method="chat.postMessage", seconds=2.0)
    async with aiohttp.ClientSession() as session:
        posting = asyncio.ensure_future(
            session.post(
                local_slack.api_url + "chat.postMessage",
                json={"channel": "C0HOLD", "text": "held"},
                headers={"Authorization": f"Bearer {local_slack.bot_token}"},
                timeout=aiohttp.ClientTimeout(total=0.5),
            )
        )
        with pytest.raises(asyncio.TimeoutError):
            await posting
    assert [m["text"] for m in local_slack.messages("C0HOLD")] == ["held"], "posted although the caller timed out"
    assert [f.get("hold") for f in local_slack.faults_served] == [2.0]
