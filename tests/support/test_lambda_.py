"""Tests of the Lambda test infrastructure (``tests/support/lambda_/``) through real parts.

boto3's real Lambda client talks HTTP to ``LocalLambda``; events go to real subprocess
containers; Slack's signature is checked with slack_sdk's verifier and the events are read
with Bolt's own AWS Lambda adapter, so what these tests accept, the real consumers accept.

The containers run the probe handlers of ``tests/support/lambda_container.py`` (echo, fail,
slow, slack_front_door, relay), which import nothing heavy, so cold starts stay short.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from slack_bolt.adapter.aws_lambda.handler import to_bolt_request
from slack_sdk.signature import SignatureVerifier

from localslack import LOCAL_SIGNING_SECRET
from tests.support.aws import REGION
from tests.support.lambda_ import (
    FORM,
    LambdaContainer,
    LambdaContainerDied,
    LambdaHandlerError,
    LambdaPool,
    LambdaTimeout,
    LambdaTransport,
    LocalLambda,
    bot_response,
    function_url_event,
    http_api_event,
    replay,
    rest_api_event,
    round_robin,
    scheduled_event,
    signed,
)


def handler(name: str) -> str:
    """One of the probe handlers of ``tests/support/lambda_container.py`` (cheap to import: fast cold starts)."""
    return f"tests.support.lambda_container:{name}"


# -- fixtures -------------------------------------------------------------------------------------


def _aws(url: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL_LAMBDA": url,
    }


@pytest.fixture
def lam() -> Iterator[LocalLambda]:
    with LocalLambda() as server:
        yield server


def _client(url: str, attempts: int = 1) -> Any:
    return boto3.client(
        "lambda",
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": attempts}),
    )


@pytest.fixture
def pool(tmp_path: Path, lam: LocalLambda) -> Iterator[LambdaPool]:
    with LambdaPool(_aws(lam.url), handler=handler("echo"), log_dir=tmp_path) as made:
        yield made


# -- LocalLambda through boto3 ----------------------------------------------------------------------


def test_an_event_invocation_through_boto3_is_recorded_and_answered_202(
    lam: LocalLambda, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot's client finds the endpoint through AWS_ENDPOINT_URL_LAMBDA alone, as in a container."""
    for name, value in _aws(lam.url).items():
        monkeypatch.setenv(name, value)
    client = boto3.client("lambda")
    first = client.invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b'{"n": 1}')
    second = client.invoke(
        FunctionName=f"arn:aws:lambda:{REGION}:123456789012:function:approval-bot",
        InvocationType="Event",
        Payload=json.dumps({"n": 2}).encode(),
        Qualifier="live",
    )

    assert first["StatusCode"] == 202 and second["StatusCode"] == 202
    assert first["Payload"].read() == b""
    assert first["ResponseMetadata"]["RequestId"]
    recorded = lam.invocations
    assert [(i.function_name, i.invocation_type, i.event()) for i in recorded] == [
        ("approval-bot", "Event", {"n": 1}),
        ("approval-bot", "Event", {"n": 2}),
    ]
    assert recorded[0].qualifier is None and recorded[1].qualifier == "live"
    assert recorded[0].at <= recorded[1].at
    assert lam.take() == recorded
    assert lam.invocations == [] and len(lam.calls) == 2


def test_request_response_and_dry_run(lam: LocalLambda) -> None:
    lam.respond = lambda invocation: json.dumps({"echo": invocation.event()}).encode()
    client = _client(lam.url)

    answer = client.invoke(FunctionName="approval-bot", Payload=b'{"a": 1}')
    dry = client.invoke(FunctionName="approval-bot", InvocationType="DryRun")

    assert answer["StatusCode"] == 200 and json.loads(answer["Payload"].read()) == {"echo": {"a": 1}}
    assert answer["ExecutedVersion"] == "$LATEST"
    assert dry["StatusCode"] == 204
    assert [i.invocation_type for i in lam.invocations] == ["RequestResponse"]  # a dry run runs nothing
    assert [c.invocation_type for c in lam.calls] == ["RequestResponse", "DryRun"]


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("TooManyRequestsException", 429),
        ("AccessDeniedException", 403),
        ("ResourceNotFoundException", 404),
        ("ServiceException", 500),
        ("KMSAccessDeniedException", 502),
    ],
)
def test_failures_on_demand_surface_in_boto3_with_their_code(lam: LocalLambda, code: str, status: int) -> None:
    client = _client(lam.url)
    lam.fail_next(1, code)

    with pytest.raises(ClientError) as raised:
        client.invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b"{}")
    after = client.invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b"{}")

    error: dict[str, Any] = dict(raised.value.response)
    assert error["Error"]["Code"] == code
    assert error["ResponseMetadata"]["HTTPStatusCode"] == status
    assert error["Error"]["Message"]
    if code == "TooManyRequestsException":
        assert error["Reason"] == "ReservedFunctionConcurrentInvocationLimitExceeded"
        assert error["Type"] == "User"
    assert after["StatusCode"] == 202
    assert [(c.error, c.status) for c in lam.calls] == [(code, status), (None, 202)]
    assert len(lam.invocations) == 1  # the refused one never counts as an invocation


def test_each_http_attempt_counts_and_boto3_retries_server_errors(lam: LocalLambda) -> None:
    """A bot whose client retries needs as many failures as attempts before it sees one."""
    lam.fail_next(2, "ServiceException")

    with pytest.raises(ClientError):
        _client(lam.url, attempts=2).invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b"{}")
    answer = _client(lam.url, attempts=2).invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b"{}")

    assert answer["StatusCode"] == 202
    assert [c.error for c in lam.calls] == ["ServiceException", "ServiceException", None]


def test_failures_until_cleared_and_only_for_one_function(lam: LocalLambda) -> None:
    client = _client(lam.url)
    lam.fail_next(None, "AccessDeniedException", function="approval-bot")

    for _ in range(3):
        with pytest.raises(ClientError, match="AccessDeniedException"):
            client.invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b"{}")
    client.invoke(FunctionName="other", InvocationType="Event", Payload=b"{}")
    lam.clear()
    client.invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b"{}")

    assert [i.function_name for i in lam.invocations] == ["other", "approval-bot"]


def test_a_lost_answer_makes_boto3_invoke_twice(lam: LocalLambda) -> None:
    lam.lose_next(1)

    answer = _client(lam.url, attempts=3).invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b"{}")

    assert answer["StatusCode"] == 202
    assert [i.lost for i in lam.invocations] == [True, False]  # Lambda would run both


def test_what_lambda_itself_refuses(lam: LocalLambda) -> None:
    client = _client(lam.url)
    refusals = {}
    for payload, kind in [(b"not json", "Event"), (b'"' + b"x" * 1_048_577 + b'"', "Event")]:
        with pytest.raises(ClientError) as raised:
            client.invoke(FunctionName="approval-bot", InvocationType=kind, Payload=payload)
        refusals[raised.value.response["Error"]["Code"]] = raised.value.response["ResponseMetadata"]["HTTPStatusCode"]
    strict = LocalLambda(function_names=["approval-bot"]).start()
    try:
        with pytest.raises(ClientError, match="ResourceNotFoundException"):
            _client(strict.url).invoke(FunctionName="nope", InvocationType="Event", Payload=b"{}")
    finally:
        strict.stop()

    with pytest.raises(ClientError, match="InvalidParameterValueException"):
        client.invoke(FunctionName="approval-bot", InvocationType="event", Payload=b"{}")  # the case matters

    assert refusals == {"InvalidRequestContentException": 400, "RequestTooLargeException": 413}
    assert lam.invocations == []


def test_fail_next_rejects_codes_lambda_never_answers(lam: LocalLambda) -> None:
    with pytest.raises(ValueError, match="not an error Invoke answers"):
        lam.fail_next(1, "NoSuchBucket")


async def test_wait_for_waits_without_blocking_the_loop(lam: LocalLambda) -> None:
    def later() -> None:
        time.sleep(0.2)
        client = _client(lam.url)
        for n in range(2):
            client.invoke(FunctionName="approval-bot", InvocationType="Event", Payload=json.dumps({"n": n}).encode())

    threading.Thread(target=later).start()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    arrived = await lam.wait_for(2, timeout=5)
    ticker.cancel()

    assert [i.event() for i in arrived] == [{"n": 0}, {"n": 1}]
    assert ticks > 5
    with pytest.raises(TimeoutError, match="2 of 3 invocations"):
        await lam.wait_for(3, timeout=0.1)


# -- events ---------------------------------------------------------------------------------------

BODY = urlencode({"command": "/graph", "text": "run deploy billing 1.2.3", "user_id": "U1"}).encode()


def _verifies(body: bytes, headers: dict[str, str]) -> bool:
    return SignatureVerifier(LOCAL_SIGNING_SECRET).is_valid_request(body, headers)


def test_signed_headers_are_what_slack_sends() -> None:
    headers = signed(BODY, LOCAL_SIGNING_SECRET, timestamp=int(time.time()))
    assert headers["Content-Type"] == FORM
    assert headers["X-Slack-Signature"].startswith("v0=")
    assert _verifies(BODY, headers)
    assert not _verifies(BODY + b"&x=1", headers)


def test_function_url_event_is_format_2_with_the_form_body_base64_encoded() -> None:
    headers = signed(BODY, LOCAL_SIGNING_SECRET) | {"Cookie": "a=1; b=2"}
    event = function_url_event(BODY, headers)

    assert event["version"] == "2.0" and event["routeKey"] == "$default"
    assert event["rawPath"] == "/slack/events" and event["rawQueryString"] == ""
    assert event["requestContext"]["http"]["method"] == "POST"
    assert event["requestContext"]["accountId"] == "anonymous"
    assert event["requestContext"]["domainName"].endswith(f".lambda-url.{REGION}.on.aws")
    assert all(name == name.lower() for name in event["headers"])
    assert event["headers"]["content-type"] == FORM
    assert event["headers"]["content-length"] == str(len(BODY))
    assert event["cookies"] == ["a=1", "b=2"] and "cookie" not in event["headers"]
    assert "queryStringParameters" not in event
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == BODY
    request = to_bolt_request(json.loads(json.dumps(event)))
    assert request.raw_body == BODY.decode()
    assert _verifies(BODY, {k: v[0] for k, v in request.headers.items() if v})


def test_v2_events_keep_text_bodies_as_text_and_parse_queries() -> None:
    event = function_url_event(b'{"a": 1}', {"Content-Type": "application/json"}, query="x=1&x=2&y=")
    assert event["isBase64Encoded"] is False and event["body"] == '{"a": 1}'
    assert event["rawQueryString"] == "x=1&x=2&y="
    assert event["queryStringParameters"] == {"x": "1,2", "y": ""}
    forced = function_url_event(BODY, {"Content-Type": FORM}, base64=False)
    assert forced["body"] == BODY.decode() and forced["isBase64Encoded"] is False


def test_http_api_event_has_the_route_key_and_the_api_ids() -> None:
    event = http_api_event(BODY, signed(BODY, LOCAL_SIGNING_SECRET))

    assert event["version"] == "2.0" and event["routeKey"] == "POST /slack/events"
    assert event["requestContext"]["routeKey"] == "POST /slack/events"
    assert event["requestContext"]["accountId"] == "123456789012"
    assert (
        event["requestContext"]["domainName"]
        == f"{event['requestContext']['apiId']}.execute-api.{REGION}.amazonaws.com"
    )
    assert event["isBase64Encoded"] is True and base64.b64decode(event["body"]) == BODY
    assert event["headers"]["x-slack-signature"].startswith("v0=")


@pytest.mark.parametrize("encode", [False, True])
def test_rest_api_event_is_format_1_and_round_trips(encode: bool) -> None:
    headers = signed(BODY, LOCAL_SIGNING_SECRET)
    event = rest_api_event(BODY, headers, base64=encode, query="a=1&a=2")

    assert "version" not in event and event["httpMethod"] == "POST"
    assert event["resource"] == event["path"] == "/slack/events"
    assert event["requestContext"]["path"] == "/prod/slack/events" and event["requestContext"]["stage"] == "prod"
    assert event["headers"]["X-Slack-Signature"] == headers["X-Slack-Signature"]  # the case the client sent
    assert event["multiValueHeaders"]["Content-Type"] == [FORM]
    assert event["queryStringParameters"] == {"a": "2"}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"]}
    assert event["pathParameters"] is None and event["stageVariables"] is None
    assert event["isBase64Encoded"] is encode
    assert (base64.b64decode(event["body"]) if encode else event["body"].encode()) == BODY
    request = to_bolt_request(json.loads(json.dumps(event)))
    assert request.raw_body == BODY.decode()
    assert _verifies(BODY, {k: v[0] for k, v in request.headers.items() if v})


def test_rest_api_event_without_body_or_query_has_nulls() -> None:
    event = rest_api_event(b"", {}, method="GET", path="/healthz")
    assert event["body"] is None and event["queryStringParameters"] is None
    assert event["multiValueQueryStringParameters"] is None


def test_scheduled_event_is_eventbridge_shaped() -> None:
    event = scheduled_event(rule="sweep")
    assert event["detail-type"] == "Scheduled Event" and event["source"] == "aws.events"
    assert event["version"] == "0" and event["detail"] == {}
    assert event["resources"] == [f"arn:aws:events:{REGION}:123456789012:rule/sweep"]
    assert event["time"].endswith("Z") and event["region"] == REGION


def test_bot_response_follows_the_front_doors_rules() -> None:
    proxy = {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": '{"text": "hi"}'}
    assert bot_response(proxy).body == {"text": "hi"}
    encoded = {"statusCode": 200, "headers": {"content-type": "text/plain"}, "isBase64Encoded": True}
    encoded["body"] = base64.b64encode(b"plain").decode()
    assert bot_response(encoded).body == "plain"
    bare = bot_response({"text": "inferred"})
    assert (bare.status, bare.body) == (200, {"text": "inferred"})
    assert bot_response({"text": "inferred"}, event_format="rest_api").status == 502
    assert bot_response({"statusCode": 200, "body": ""}).text == ""


# -- containers -------------------------------------------------------------------------------------


async def test_a_container_runs_events_in_one_warm_process(pool: LambdaPool) -> None:
    container = pool()
    assert not container.started  # costs nothing until its first event

    first = await container.invoke({"hello": "world"})
    second = await container.invoke({"again": True})

    assert first["event"] == {"hello": "world"} and second["event"] == {"again": True}
    assert first["pid"] == second["pid"] == container.pid
    assert (first["events_seen"], second["events_seen"]) == (1, 2)
    assert first["request_id"] != second["request_id"] and len(first["request_id"]) == 36
    assert first["function_name"] == "approval-bot"
    assert first["memory_limit_in_mb"] == "1024"  # a string, as the Python runtime gives it
    assert 899_000 < first["remaining_ms"] <= 900_000
    assert container.cold_start_seconds is not None and container.cold_start_seconds > 0
    assert container.invocations[1].init_seconds is None
    assert [i.request_id for i in container.invocations] == [first["request_id"], second["request_id"]]
    assert "printed by the handler" in container.stderr_text()


async def test_a_raising_handler_is_reported_and_the_container_keeps_serving(tmp_path: Path) -> None:
    with LambdaContainer(handler=handler("fail"), log_path=tmp_path / "fail.log") as container:
        with pytest.raises(LambdaHandlerError) as raised:
            await container.invoke({"what": "this"})
        with pytest.raises(LambdaHandlerError):
            await container.invoke({"what": "that"})

        assert raised.value.error_type == "ValueError"
        assert str(raised.value) == "ValueError: cannot handle this"
        assert any("raise ValueError" in line for line in raised.value.stack_trace)
        assert container.alive and len(container.invocations) == 2
        assert "Traceback" in container.stderr_text()


async def test_a_handler_that_cannot_be_imported_is_an_import_error(tmp_path: Path) -> None:
    container = LambdaContainer(handler="tests.support.no_such_module:handler", log_path=tmp_path / "x.log")
    with container, pytest.raises(LambdaHandlerError, match=r"Runtime\.ImportModuleError: Unable to import module"):
        await container.invoke({})


async def test_kill_mid_invocation_ends_the_pending_invoke(tmp_path: Path) -> None:
    container = LambdaContainer(handler=handler("slow"), log_path=tmp_path / "slow.log")
    pending = asyncio.create_task(container.invoke({"seconds": 30}))
    deadline = time.monotonic() + 10
    while "sleeping" not in container.stderr_text():
        assert time.monotonic() < deadline, container.stderr_text()
        await asyncio.sleep(0.02)
    assert container.busy

    container.kill()

    with pytest.raises(LambdaContainerDied, match="died mid-invocation"):
        await pending
    with pytest.raises(LambdaContainerDied, match="was killed"):
        await container.invoke({})
    assert not container.alive and not container.busy
    container.close()


async def test_a_timeout_kills_the_container(tmp_path: Path) -> None:
    with LambdaContainer(handler=handler("slow"), log_path=tmp_path / "slow.log") as container:
        await container.invoke({"seconds": 0})
        with pytest.raises(LambdaTimeout, match="Task timed out"):
            await container.invoke({"seconds": 30}, timeout=0.3)
        assert not container.alive


async def test_pools_scale_like_lambda(pool: LambdaPool) -> None:
    """Warm: concurrent events get separate containers, later ones reuse them; cold: always new."""
    results = await asyncio.gather(*(pool().invoke({"n": n}) for n in range(2)))
    assert len(pool.containers) == 2 and len({r["pid"] for r in results}) == 2
    again = await pool().invoke({"n": 2})
    assert len(pool.containers) == 2 and again["events_seen"] == 2

    pool.policy = "cold"
    fresh = await pool().invoke({"n": 3})
    assert len(pool.containers) == 3 and fresh["events_seen"] == 1

    cycle = round_robin(pool.containers[:2])
    assert [cycle().name for _ in range(3)] == ["container-1", "container-2", "container-1"]


# -- Slack through the front door, and the work handed off ----------------------------------------


async def test_lambda_transport_delivers_like_slack_over_http(tmp_path: Path, lam: LocalLambda) -> None:
    env = {"SLACK_SIGNING_SECRET": LOCAL_SIGNING_SECRET}
    with LambdaPool(env, handler=handler("slack_front_door"), log_dir=tmp_path) as containers:
        for event_format in ("function_url", "rest_api", "http_api"):
            transport = LambdaTransport(containers=containers, event_format=event_format)
            command = await transport.deliver(kind="slash_commands", payload={"command": "/graph", "text": "list"})
            click = await transport.deliver(kind="interactive", payload={"type": "block_actions", "actions": []})
            forged = await transport.post(BODY, signature="v0=" + "0" * 64)
            unsigned = await transport.post(BODY, sign=False)
            await transport.aclose()

            assert command.status == 200 and command.body["form"] == {"command": "/graph", "text": "list"}
            assert command.body["version"] == ("1.0" if event_format == "rest_api" else "2.0")
            assert json.loads(click.body["form"]["payload"]) == {"type": "block_actions", "actions": []}
            assert (forged.status, unsigned.status) == (401, 401)
            assert [a.status for a in transport.acks] == [200, 200, 401, 401]
            assert transport.errors == []
        assert len(containers.containers) == 1  # one warm container served every request


async def test_lambda_transport_answers_502_when_the_function_fails(tmp_path: Path) -> None:
    with LambdaContainer(handler=handler("fail"), log_path=tmp_path / "fail.log") as container:
        transport = LambdaTransport(containers=container)
        response = await transport.deliver(kind="slash_commands", payload={"what": "x"})
        assert response.status == 502 and response.text == "Internal Server Error"
        assert [type(e) for e in transport.errors] == [LambdaHandlerError]


async def test_lambda_transport_gives_up_after_the_ack_timeout_while_the_function_runs_on(tmp_path: Path) -> None:
    with LambdaContainer(handler=handler("slow"), log_path=tmp_path / "slow.log") as container:
        await container.invoke({"seconds": 0})  # warm, so the timeout measures the handler alone
        transport = LambdaTransport(containers=container, ack_timeout=0.3, event_format="rest_api")
        with pytest.raises(TimeoutError, match="did not answer within"):
            await transport.post(b"seconds=0.6")
        assert transport.late and container.busy
        await transport.aclose()
        assert not container.busy and len(container.invocations) == 2


async def test_replay_runs_the_recorded_self_invocations(tmp_path: Path, lam: LocalLambda) -> None:
    """The handler's boto3 reaches LocalLambda through AWS_ENDPOINT_URL_LAMBDA; replay runs what it handed off."""
    with LambdaPool(_aws(lam.url), handler=handler("relay"), log_dir=tmp_path) as containers:
        first = await containers().invoke({"hop": 0})
        assert first == {"hop": 0}
        handed_off = await lam.wait_for(1)
        assert handed_off[0].function_name == "approval-bot" and handed_off[0].invocation_type == "Event"

        replayed = await replay(lam, containers, until_idle=True)

        assert [r.result for r in replayed] == [{"hop": 1}, {"hop": 2}]
        assert lam.invocations == [] and len(lam.calls) == 2
        again = await replay(lam, containers, invocations=[handed_off[0], handed_off[0]])  # delivered twice
        assert [r.result for r in again] == [{"hop": 1}, {"hop": 1}]
        assert "Traceback" not in containers.stderr_text()


async def test_replay_reports_handler_errors(tmp_path: Path, lam: LocalLambda) -> None:
    _client(lam.url).invoke(FunctionName="approval-bot", InvocationType="Event", Payload=b'{"what": "x"}')
    with LambdaContainer(handler=handler("fail"), log_path=tmp_path / "fail.log") as container:
        with pytest.raises(LambdaHandlerError):
            await replay(lam, container, invocations=lam.invocations)
        results = await replay(lam, container, raise_errors=False)
    assert [type(r.error) for r in results] == [LambdaHandlerError]
