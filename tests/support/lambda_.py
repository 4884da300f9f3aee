"""The bot deployed as one AWS Lambda function, locally: the Invoke API, real-shaped events, containers.

End-to-end tests of the Lambda deployment need the three things AWS would provide, each as
close to the real one as a test can afford, so that what passes here has a chance in AWS:

``LocalLambda``
    A local HTTP server speaking the Lambda ``Invoke`` REST API. The bot's asynchronous
    self-invocation (boto3's real Lambda client, pointed here with ``AWS_ENDPOINT_URL_LAMBDA``)
    lands here and is recorded in arrival order instead of being run, so the test decides when
    and where each one runs (``replay``). It refuses what Lambda refuses (a payload that is not
    JSON, over the size quota, an unknown function) and fails on demand the way Lambda fails
    (``fail_next``: throttling, access denied, ...; ``lose_next``: accepted but the answer lost,
    so boto3 retries and the function runs twice; ``delay_next``: a slow API).

Event builders
    ``function_url_event``, ``rest_api_event`` (API Gateway payload 1.0), ``http_api_event``
    (2.0) and ``scheduled_event`` build the events Lambda hands a handler, in the shapes of
    AWS's documented examples (lower-cased headers and ``requestContext.http`` in 2.0,
    ``multiValueHeaders`` in 1.0, Slack's form bodies base64-encoded where AWS encodes them),
    and ``signed`` signs a body the way Slack does.

``LambdaContainer``
    One execution environment: a subprocess (``tests/support/lambda_container.py``) that
    imports the handler on its first event (the cold start) and then handles events one at a
    time, like a warm container, until it is closed or killed (SIGKILL, mid-invocation if need
    be: a crash or a timeout). ``LambdaPool`` hands out containers the way Lambda scales (an
    idle warm one, else a new cold one) or always a new one; ``round_robin`` cycles a fixed set.

``LambdaTransport``
    The ``Transport`` of ``bot.localslack`` for this deployment: ``LocalSlackUser`` drives the
    Lambda function exactly as it drives the HTTP server, its payloads encoded and signed as
    Slack does, wrapped in a Function URL (or API Gateway) event and handed to a container.

A test then reads::

    async def test_approval_on_lambda(local_lambda, lambda_pool, local_slack, slack_user, aws_env, ...):
        pool = lambda_pool({**aws_env, **local_lambda.env(), "SLACK_API_URL": local_slack.api_url, ...})
        user = slack_user(transport=LambdaTransport(containers=pool))
        ack = await user.slash_command(text="run deploy billing 1.2.3", user_id="U1", channel_id="C1")
        await replay(local_lambda, pool)  # the work the ack handed off: it posts the card
"""

from __future__ import annotations

import asyncio
import base64 as b64
import contextlib
import functools
import itertools
import json
import os
import queue
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Final, Literal, Self
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from slack_sdk.signature import SignatureVerifier

from bot.localslack.transport import BotResponse, HttpTransport
from bot.localslack.user import LOCAL_SIGNING_SECRET
from tests.support.aws import REGION
from tests.support.lambda_container import HANDLER_ENV, TIMEOUT_ENV

__all__ = [
    "ACCOUNT",
    "FORM",
    "FUNCTION_NAME",
    "SLACK_PATH",
    "Ack",
    "ContainerChooser",
    "ContainerInvocation",
    "EventFormat",
    "Invocation",
    "LambdaContainer",
    "LambdaContainerDied",
    "LambdaError",
    "LambdaHandlerError",
    "LambdaPool",
    "LambdaTimeout",
    "LambdaTransport",
    "LocalLambda",
    "Replayed",
    "aws_encodes_as_base64",
    "bot_response",
    "function_url_event",
    "http_api_event",
    "lambda_pool",
    "local_lambda",
    "replay",
    "rest_api_event",
    "round_robin",
    "scheduled_event",
    "signed",
]

REPO: Final = Path(__file__).resolve().parents[2]
ACCOUNT: Final = "123456789012"
FUNCTION_NAME: Final = "approval-bot"
FORM: Final = "application/x-www-form-urlencoded"
SLACK_PATH: Final = "/slack/events"
ASYNC_PAYLOAD_LIMIT: Final = 1_048_576
"""Lambda's quota for an ``Event`` invocation's payload (1 MB); ``RequestResponse`` allows 6 MB."""
SYNC_PAYLOAD_LIMIT: Final = 6_291_456
INIT_GRACE_SECONDS: Final = 10.0
"""Lambda gives an on-demand function's init phase up to 10 s on top of its timeout."""
SOURCE_IP: Final = "198.51.100.7"
"""Where "Slack" connects from (an address reserved for documentation)."""
SLACK_CLIENT_HEADERS: Final = {
    "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
    "Accept": "application/json,*/*",
    "Accept-Encoding": "gzip,deflate",
}
"""Headers Slack's request client sends besides the body's type and the signature."""

InvocationType = Literal["Event", "RequestResponse", "DryRun"]
EventFormat = Literal["function_url", "rest_api", "http_api"]


# -- Slack's signature ------------------------------------------------------------------------


def signed(body: bytes, secret: str, *, timestamp: str | int | None = None) -> dict[str, str]:
    """The headers Slack sends with ``body``: its type, the timestamp and the ``v0=`` signature.

    Same computation as ``bot.localslack.transport.HttpTransport`` (slack_sdk's own signer), so
    the bot's verification is exercised by the code Slack's signature format is defined by.
    """
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body) or ""
    return {"Content-Type": FORM, "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}


# -- events as Lambda hands them to a handler ----------------------------------------------------

_TEXT_TYPES: Final = frozenset({"application/json", "application/javascript", "application/xml", "application/yaml"})


def _media_type(headers: Mapping[str, str]) -> str:
    for name, value in headers.items():
        if name.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower()
    return ""


def aws_encodes_as_base64(headers: Mapping[str, str]) -> bool:
    """Whether a Function URL or an HTTP API (payload 2.0) base64-encodes a request body of this type.

    Both pass text-like bodies (``text/*``, JSON, XML, JavaScript) as they are and base64-encode
    everything else, Slack's ``application/x-www-form-urlencoded`` posts included. (A REST API
    encodes only the types listed in its ``binaryMediaTypes``, none by default.)
    """
    kind = _media_type(headers)
    return not (kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml")))


def _body_field(body: bytes, encode: bool) -> str:
    return b64.b64encode(body).decode("ascii") if encode else body.decode("utf-8")


def _now() -> datetime:
    return datetime.now(UTC)


def _clf_time(at: datetime) -> str:
    """``12/Mar/2020:19:03:58 +0000``: the access-log time format of ``requestContext.time``."""
    return at.strftime("%d/%b/%Y:%H:%M:%S +0000")


def _trace_id(at: datetime) -> str:
    return f"Root=1-{int(at.timestamp()):08x}-{secrets.token_hex(12)}"


def _user_agent(headers: Mapping[str, str]) -> str:
    return next((v for k, v in headers.items() if k.lower() == "user-agent"), "")


def _query_v2(query: str) -> dict[str, str] | None:
    """2.0 joins repeated parameters with commas; no parameters means no key at all."""
    joined: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    return joined or None


def _v2_event(
    *,
    body: bytes,
    headers: Mapping[str, str],
    encode: bool,
    method: str,
    path: str,
    query: str,
    gateway_headers: Mapping[str, str],
    request_context: dict[str, Any],
    route_key: str,
    at: datetime,
) -> dict[str, Any]:
    """The payload format 2.0 common to Function URLs and HTTP APIs."""
    lowered: dict[str, str] = {}
    for name, value in {**headers, **gateway_headers}.items():
        key = name.lower()
        lowered[key] = f"{lowered[key]},{value}" if key in lowered else value
    if body:
        lowered.setdefault("content-length", str(len(body)))
    cookie_header = lowered.pop("cookie", None)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query,
    }
    if cookie_header:
        event["cookies"] = [c.strip() for c in cookie_header.split(";") if c.strip()]
    event["headers"] = lowered
    parameters = _query_v2(query)
    if parameters is not None:
        event["queryStringParameters"] = parameters
    event["requestContext"] = {
        **request_context,
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": SOURCE_IP,
            "userAgent": _user_agent(headers),
        },
        "routeKey": route_key,
        "stage": "$default",
        "time": _clf_time(at),
        "timeEpoch": int(at.timestamp() * 1000),
    }
    if body:
        event["body"] = _body_field(body, encode)
    event["isBase64Encoded"] = bool(body) and encode
    return event


def function_url_event(
    body: bytes,
    headers: Mapping[str, str],
    *,
    base64: bool | None = None,
    method: str = "POST",
    path: str = SLACK_PATH,
    query: str = "",
    region: str = REGION,
    url_id: str | None = None,
) -> dict[str, Any]:
    """The event a Lambda Function URL (auth type NONE, as Slack cannot sign with SigV4) passes the handler.

    Payload format 2.0: header names lower-cased (repeated ones comma-joined), ``cookies``
    split out of the ``Cookie`` header, ``requestContext.http.method``, ``rawPath``,
    ``rawQueryString``, ``accountId`` ``"anonymous"``. ``base64=None`` encodes the body as the
    Function URL would for its content type, which for Slack's form posts means base64.
    """
    url_id = url_id or secrets.token_hex(16)
    domain = f"{url_id}.lambda-url.{region}.on.aws"
    at = _now()
    gateway = {
        "host": domain,
        "x-amzn-tls-version": "TLSv1.3",
        "x-amzn-tls-cipher-suite": "TLS_AES_128_GCM_SHA256",
        "x-amzn-trace-id": _trace_id(at),
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
        "x-forwarded-for": SOURCE_IP,
    }
    return _v2_event(
        body=body,
        headers=headers,
        encode=aws_encodes_as_base64(headers) if base64 is None else base64,
        method=method,
        path=path,
        query=query,
        gateway_headers=gateway,
        request_context={
            "accountId": "anonymous",
            "apiId": url_id,
            "domainName": domain,
            "domainPrefix": url_id,
            "requestId": str(uuid.uuid4()),
        },
        route_key="$default",
        at=at,
    )


def http_api_event(
    body: bytes,
    headers: Mapping[str, str],
    *,
    base64: bool | None = None,
    method: str = "POST",
    path: str = SLACK_PATH,
    query: str = "",
    region: str = REGION,
    api_id: str | None = None,
) -> dict[str, Any]:
    """The event an API Gateway HTTP API with payload format 2.0 passes the handler (route ``POST <path>``).

    Like a Function URL's, with the API's own ids and route key; ``base64=None`` encodes the
    body as the HTTP API would for its content type.
    """
    api_id = api_id or secrets.token_hex(5)
    domain = f"{api_id}.execute-api.{region}.amazonaws.com"
    at = _now()
    gateway = {
        "host": domain,
        "x-amzn-trace-id": _trace_id(at),
        "x-forwarded-for": SOURCE_IP,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    return _v2_event(
        body=body,
        headers=headers,
        encode=aws_encodes_as_base64(headers) if base64 is None else base64,
        method=method,
        path=path,
        query=query,
        gateway_headers=gateway,
        request_context={
            "accountId": ACCOUNT,
            "apiId": api_id,
            "domainName": domain,
            "domainPrefix": api_id,
            "requestId": b64.b64encode(secrets.token_bytes(10)).decode("ascii"),
        },
        route_key=f"{method} {path}",
        at=at,
    )


def rest_api_event(
    body: bytes,
    headers: Mapping[str, str],
    *,
    base64: bool = False,
    method: str = "POST",
    path: str = SLACK_PATH,
    query: str = "",
    stage: str = "prod",
    region: str = REGION,
    api_id: str | None = None,
) -> dict[str, Any]:
    """The event an API Gateway REST API's Lambda proxy integration (payload 1.0) passes the handler.

    Header names keep the case the client sent, and every header and query parameter also
    appears in the ``multiValue*`` maps; absent parts are ``null``. ``requestContext.path``
    carries the stage, ``path`` does not. The body is base64 only when the API lists its type
    in ``binaryMediaTypes`` (pass ``base64=True`` to test that set-up).
    """
    api_id = api_id or secrets.token_hex(5)
    domain = f"{api_id}.execute-api.{region}.amazonaws.com"
    at = _now()
    sent = {
        **headers,
        "Host": domain,
        "X-Amzn-Trace-Id": _trace_id(at),
        "X-Forwarded-For": SOURCE_IP,
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
    }
    pairs = parse_qsl(query, keep_blank_values=True)
    multi_query: dict[str, list[str]] = {}
    for name, value in pairs:
        multi_query.setdefault(name, []).append(value)
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": sent,
        "multiValueHeaders": {name: [value] for name, value in sent.items()},
        "queryStringParameters": {name: values[-1] for name, values in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourceId": secrets.token_hex(3),
            "resourcePath": path,
            "httpMethod": method,
            "extendedRequestId": b64.b64encode(secrets.token_bytes(10)).decode("ascii"),
            "requestTime": _clf_time(at),
            "path": f"/{stage}{path}",
            "accountId": ACCOUNT,
            "protocol": "HTTP/1.1",
            "stage": stage,
            "domainPrefix": api_id,
            "requestTimeEpoch": int(at.timestamp() * 1000),
            "requestId": str(uuid.uuid4()),
            "identity": {
                "cognitoIdentityPoolId": None,
                "accountId": None,
                "cognitoIdentityId": None,
                "caller": None,
                "sourceIp": SOURCE_IP,
                "principalOrgId": None,
                "accessKey": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "userArn": None,
                "userAgent": _user_agent(headers),
                "user": None,
            },
            "domainName": domain,
            "apiId": api_id,
        },
        "body": _body_field(body, base64) if body else None,
        "isBase64Encoded": base64,
    }


def scheduled_event(
    *, rule: str = "approval-bot-sweep", region: str = REGION, account: str = ACCOUNT, at: datetime | None = None
) -> dict[str, Any]:
    """The event an EventBridge schedule rule (``rate(1 minute)``) sends its target."""
    moment = at or _now()
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{account}:rule/{rule}"],
        "detail": {},
    }


_BUILDERS: Final[Mapping[EventFormat, Callable[..., dict[str, Any]]]] = {
    "function_url": function_url_event,
    "rest_api": rest_api_event,
    "http_api": http_api_event,
}


def bot_response(result: Any, *, event_format: EventFormat = "function_url") -> BotResponse:
    """What the HTTP client (Slack) receives for a handler's return value, as the front door translates it.

    ``{"statusCode", "headers", "body", "isBase64Encoded"}`` is an HTTP response (plus
    ``multiValueHeaders`` in 1.0). Any other value is, for a Function URL or an HTTP API,
    a 200 ``application/json`` response with the value as JSON body; a REST API answers such a
    malformed proxy response with 502. A missing ``Content-Type`` is ``application/json``.
    """
    if not (isinstance(result, dict) and "statusCode" in result):
        if event_format == "rest_api":
            return _gateway_error(502, event_format)
        text = json.dumps(result)
        return BotResponse(status=200, body=result, text=text, headers={"Content-Type": "application/json"})
    headers: dict[str, str] = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name)] = ", ".join(str(v) for v in values)
    if not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = "application/json"
    raw = result.get("body") or ""
    text = b64.b64decode(raw).decode("utf-8", errors="replace") if result.get("isBase64Encoded") else str(raw)
    parsed: Any = text
    if text and _media_type(headers) == "application/json":
        parsed = json.loads(text)
    return BotResponse(status=int(result["statusCode"]), body=parsed, text=text, headers=headers)


def _gateway_error(status: int, event_format: EventFormat) -> BotResponse:
    """The front door's own answer when the function failed (raised, crashed, timed out, answered garbage)."""
    if event_format == "function_url":
        text = "Internal Server Error"
        return BotResponse(status=status, body=text, text=text, headers={"Content-Type": "text/plain"})
    message = "Internal server error" if event_format == "rest_api" else "Internal Server Error"
    text = json.dumps({"message": message})
    headers = {"Content-Type": "application/json"}
    return BotResponse(status=status, body={"message": message}, text=text, headers=headers)


# -- the Lambda Invoke API ------------------------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    """One ``Invoke`` request as ``LocalLambda`` received it, and what it answered."""

    function_name: str
    """The function's name, from whichever form the caller addressed it by (name, ARN, partial ARN)."""
    address: str
    """``FunctionName`` exactly as sent (URL-decoded)."""
    qualifier: str | None
    invocation_type: InvocationType
    payload: bytes
    at: float
    """``time.time()`` when the request had arrived in full."""
    request_id: str
    client_context: str | None
    status: int
    """The HTTP status answered: 202 (Event), 200 (RequestResponse), 204 (DryRun), or an error's."""
    error: str | None = None
    """The error code answered (``TooManyRequestsException``, ...), None when accepted."""
    lost: bool = False
    """Accepted, but the answer was dropped on the way back (``lose_next``)."""

    @property
    def accepted(self) -> bool:
        return self.error is None

    def event(self) -> Any:
        """The payload as the function receives it: parsed JSON (an empty payload is ``{}``)."""
        return json.loads(self.payload) if self.payload.strip() else {}


@dataclass
class _Rule:
    action: Literal["fail", "lose", "delay"]
    remaining: int | None
    function: str | None
    code: str = ""
    status: int = 0
    message: str | None = None
    reason: str | None = None
    seconds: float = 0.0

    def live(self) -> bool:
        return self.remaining is None or self.remaining > 0

    def claim(self, function_name: str) -> bool:
        if not self.live() or (self.function is not None and self.function != function_name):
            return False
        if self.remaining is not None:
            self.remaining -= 1
        return True


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    delay: float = 0.0
    lose: bool = False


@functools.cache
def _modeled_errors() -> dict[str, tuple[int, str, bool]]:
    """Invoke's errors from botocore's Lambda model: code -> (HTTP status, message key, sender fault).

    Taken from the model botocore parses responses with, so each error comes back with the
    status and body shape botocore expects and surfaces as ``ClientError`` with that code.
    """
    import botocore.session

    model = botocore.session.get_session().get_service_model("lambda")
    errors: dict[str, tuple[int, str, bool]] = {}
    for shape in model.operation_model("Invoke").error_shapes:
        members: Mapping[str, Any] = getattr(shape, "members", {})
        key = "message" if "message" in members else "Message"
        errors[shape.name] = (
            int(shape.metadata["error"]["httpStatusCode"]),
            key,
            bool(shape.metadata["error"].get("senderFault")),
        )
    # Not in the model because any API can answer them: IAM's denial and a bad signature.
    errors["AccessDeniedException"] = (403, "Message", True)
    errors["UnrecognizedClientException"] = (403, "message", True)
    return errors


def _function_parts(address: str) -> tuple[str, str | None]:
    """``(name, qualifier)`` from ``name``, ``name:qual``, ``123456789012:function:name[:qual]`` or a full ARN."""
    parts = address.split(":")
    if address.startswith("arn:") and len(parts) >= 7:
        return parts[6], (parts[7] if len(parts) > 7 else None)
    if len(parts) >= 3 and parts[1] == "function":
        return parts[2], (parts[3] if len(parts) > 3 else None)
    return parts[0], (parts[1] if len(parts) > 1 else None)


def _signed_region(headers: Mapping[str, str]) -> str:
    """The region a SigV4 request was signed for (``Credential=AKID/date/region/service/...``); names lower-cased."""
    try:
        return headers.get("authorization", "").split("Credential=", 1)[1].split(",", 1)[0].split("/")[2]
    except IndexError:
        return REGION


_INVOKE_PATH: Final = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")


class LocalLambda:
    """A local AWS Lambda ``Invoke`` endpoint that records invocations instead of running them.

    Start with ``start()`` or ``with LocalLambda() as lam:`` (or the ``local_lambda`` fixture)
    and give clients ``env()``. ``invocations`` are the accepted invocations not yet taken,
    ``calls`` every request ever answered (failed, retried and DryRun ones included), in order.
    ``function_names`` limits which functions exist (others get ``ResourceNotFoundException``);
    ``respond`` makes a ``RequestResponse`` invocation's answer (default ``null``). Thread-safe:
    requests arrive on the server's threads while the test reads from its own.
    """

    def __init__(
        self,
        *,
        function_names: Sequence[str] | None = None,
        respond: Callable[[Invocation], bytes] | None = None,
    ) -> None:
        self.function_names = None if function_names is None else frozenset(function_names)
        self.respond = respond
        self._lock = threading.Lock()
        self._calls: list[Invocation] = []
        self._pending: list[Invocation] = []
        self._rules: list[_Rule] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> Self:
        """Listen on 127.0.0.1 on a free port, serving from a daemon thread."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="local-lambda", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("LocalLambda is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self) -> dict[str, str]:
        """Variables that send a process's boto3 Lambda client here."""
        return {"AWS_ENDPOINT_URL_LAMBDA": self.url}

    # -- what arrived ------------------------------------------------------------------------

    @property
    def invocations(self) -> list[Invocation]:
        """Accepted ``Event``/``RequestResponse`` invocations not yet taken, in arrival order."""
        with self._lock:
            return list(self._pending)

    @property
    def calls(self) -> list[Invocation]:
        """Every Invoke request answered so far, accepted or not, taken or not, in arrival order.

        Requests that are no well-formed Invoke (another operation, an invocation type Lambda
        does not know) are answered with Lambda's error but not recorded.
        """
        with self._lock:
            return list(self._calls)

    def take(self) -> list[Invocation]:
        """Remove and return the invocations recorded so far (what ``invocations`` shows)."""
        with self._lock:
            taken, self._pending = self._pending, []
            return taken

    async def wait_for(self, n: int, timeout: float = 10.0) -> list[Invocation]:
        """Wait until at least ``n`` invocations are pending (not taken); they stay pending.

        Polls, so the event loop stays free for whatever else the test serves on it (the local
        Slack the bot calls before it hands work off, for one).
        """
        deadline = time.monotonic() + timeout
        while True:
            pending = self.invocations
            if len(pending) >= n:
                return pending
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{len(pending)} of {n} invocations arrived within {timeout}s; calls: {self._summary()}"
                )
            await asyncio.sleep(0.01)

    def _summary(self) -> list[str]:
        return [f"{c.function_name} {c.invocation_type} -> {c.error or c.status}" for c in self.calls]

    # -- failures on demand ------------------------------------------------------------------

    def fail_next(
        self,
        n: int | None = 1,
        code: str = "TooManyRequestsException",
        *,
        message: str | None = None,
        reason: str | None = None,
        status: int | None = None,
        function: str | None = None,
    ) -> None:
        """Answer the next ``n`` requests (all of them until ``clear()`` if None) with Lambda's error ``code``.

        Any error Invoke is modeled with (``TooManyRequestsException`` 429, ``ServiceException``
        500, ``ResourceNotFoundException`` 404, ...) plus ``AccessDeniedException`` (403, IAM's
        denial), with the status and JSON body Lambda sends, so boto3 raises ``ClientError``
        with ``Error.Code == code``. Each HTTP attempt counts: boto3 retries 429 and 5xx on its
        own, so a throttle the bot should see needs as many failures as its client's attempts.
        ``reason`` is ``TooManyRequestsException``'s ``Reason``; ``function`` limits the failure
        to invocations of that function.
        """
        modeled = _modeled_errors()
        if status is None and code not in modeled:
            raise ValueError(f"{code} is not an error Invoke answers with; pass status= to use it anyway")
        rule = _Rule(
            action="fail",
            remaining=n,
            function=function,
            code=code,
            status=status or modeled[code][0],
            message=message,
            reason=reason,
        )
        with self._lock:
            self._rules.append(rule)

    def lose_next(self, n: int | None = 1, *, function: str | None = None) -> None:
        """Accept the next ``n`` invocations, then drop the connection instead of answering.

        The invocation counts (Lambda would run it) but the caller sees a connection error, and
        boto3 retries: the same payload is then invoked twice, as AWS's at-least-once async
        invocation allows anyway.
        """
        with self._lock:
            self._rules.append(_Rule(action="lose", remaining=n, function=function))

    def delay_next(self, seconds: float, n: int | None = 1, *, function: str | None = None) -> None:
        """Hold the next ``n`` requests for ``seconds`` before handling them (a slow Invoke API)."""
        with self._lock:
            self._rules.append(_Rule(action="delay", remaining=n, function=function, seconds=seconds))

    def clear(self) -> None:
        """Switch every failure, loss and delay off (what was recorded stays)."""
        with self._lock:
            self._rules.clear()

    # -- the API -----------------------------------------------------------------------------

    def _receive(self, *, method: str, target: str, headers: Mapping[str, str], body: bytes) -> _Answer:
        """Record and answer one request (``headers`` with lower-cased names), as Lambda would."""
        request_id = str(uuid.uuid4())
        base = [("x-amzn-RequestId", request_id)]
        parts = urlsplit(target)
        match = _INVOKE_PATH.match(parts.path)
        if method != "POST" or match is None:
            unknown = json.dumps({"message": f"Unknown operation: {method} {parts.path}"}).encode()
            return _Answer(404, [*base, ("x-amzn-ErrorType", "UnknownOperationException")], unknown)
        address = unquote(match["name"])
        name, qualifier = _function_parts(address)
        qualifier = dict(parse_qsl(parts.query)).get("Qualifier", qualifier)
        region = _signed_region(headers)
        arn = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{name}"
        kind = str(headers.get("x-amz-invocation-type") or "RequestResponse")
        invocation_type: InvocationType = kind if kind in ("Event", "DryRun") else "RequestResponse"  # type: ignore[assignment]
        if kind not in ("Event", "RequestResponse", "DryRun"):
            invalid = json.dumps(
                {
                    "Type": "User",
                    "message": f"1 validation error detected: Value '{kind}' at 'invocationType' failed to satisfy "
                    "constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]",
                }
            ).encode()
            error_headers = [*base, ("x-amzn-ErrorType", "InvalidParameterValueException")]
            return _Answer(400, [*error_headers, ("Content-Type", "application/json")], invalid)
        record = functools.partial(
            Invocation,
            function_name=name,
            address=address,
            qualifier=qualifier,
            invocation_type=invocation_type,
            payload=body,
            at=time.time(),
            request_id=request_id,
            client_context=headers.get("x-amz-client-context"),
        )
        with self._lock:
            live = [r for r in self._rules if r.live()]
            delay = next((r for r in live if r.action == "delay" and r.claim(name)), None)
            terminal = next((r for r in live if r.action != "delay" and r.claim(name)), None)
            self._rules = [r for r in self._rules if r.live()]
            refusal = self._refusal(terminal, name=name, arn=arn, kind=invocation_type, body=body)
            if refusal is not None:
                code, status, payload = refusal
                self._calls.append(record(status=status, error=code))
                headers_out = [*base, ("x-amzn-ErrorType", code), ("Content-Type", "application/json")]
                return _Answer(status, headers_out, payload, delay=delay.seconds if delay else 0.0)
            lost = terminal is not None and terminal.action == "lose"
            status = {"Event": 202, "DryRun": 204}.get(invocation_type, 200)
            invocation = record(status=status, lost=lost)
            self._calls.append(invocation)
            if invocation_type != "DryRun":
                self._pending.append(invocation)
        answer_body = b""
        answer_headers = [*base, ("Content-Type", "application/json")]
        if invocation_type == "RequestResponse":
            answer_body = self.respond(invocation) if self.respond is not None else b"null"
            answer_headers.append(("X-Amz-Executed-Version", "$LATEST"))
        elif invocation_type == "Event":
            answer_headers.append(("x-amzn-Remapped-Content-Length", "0"))
            answer_headers.append(("X-Amzn-Trace-Id", _trace_id(_now()) + ";Sampled=0"))
        return _Answer(status, answer_headers, answer_body, delay=delay.seconds if delay else 0.0, lose=lost)

    def _refusal(
        self, terminal: _Rule | None, *, name: str, arn: str, kind: InvocationType, body: bytes
    ) -> tuple[str, int, bytes] | None:
        """The error Lambda would answer this request with, if any: ``(code, status, body)``."""
        if terminal is not None and terminal.action == "fail":
            return terminal.code, terminal.status, _error_body(terminal.code, arn, terminal.message, terminal.reason)
        if self.function_names is not None and name not in self.function_names:
            return "ResourceNotFoundException", 404, _error_body("ResourceNotFoundException", arn, None, None)
        limit = ASYNC_PAYLOAD_LIMIT if kind == "Event" else SYNC_PAYLOAD_LIMIT
        if len(body) > limit:
            message = f"{len(body)} byte payload is too large for the {kind} invocation type (limit {limit} bytes)"
            return "RequestTooLargeException", 413, _error_body("RequestTooLargeException", arn, message, None)
        if body.strip():
            try:
                json.loads(body)
            except ValueError as exc:
                message = f"Could not parse request body into json: {exc}"
                return (
                    "InvalidRequestContentException",
                    400,
                    _error_body("InvalidRequestContentException", arn, message, None),
                )
        return None


def _error_body(code: str, arn: str, message: str | None, reason: str | None) -> bytes:
    """Lambda's JSON error body: ``Type`` (User/Service) and the message under the key the model names."""
    _, key, sender_fault = _modeled_errors().get(code, (0, "message", True))
    defaults = {
        "TooManyRequestsException": "Rate Exceeded.",
        "AccessDeniedException": (
            f"User: arn:aws:sts::{ACCOUNT}:assumed-role/{FUNCTION_NAME}-role/{FUNCTION_NAME} is not authorized to "
            f"perform: lambda:InvokeFunction on resource: {arn} because no identity-based policy allows the "
            "lambda:InvokeFunction action"
        ),
        "ResourceNotFoundException": f"Function not found: {arn}",
        "ServiceException": "An internal error occurred.",
    }
    body: dict[str, Any] = {key: message or defaults.get(code, f"{code} (from LocalLambda)")}
    if code not in ("AccessDeniedException", "UnrecognizedClientException"):
        body["Type"] = "User" if sender_fault else "Service"
    if code == "TooManyRequestsException":
        body["Reason"] = reason or "ReservedFunctionConcurrentInvocationLimitExceeded"
    return json.dumps(body).encode()


def _handler_for(server: LocalLambda) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pooled connections expect
        timeout = 30

        def log_message(self, format: str, *args: Any) -> None:  # one line per request otherwise
            return

        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                chunks: list[bytes] = []
                while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _handle(self) -> None:
            body = self._read_body()
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = server._receive(method=self.command, target=self.path, headers=headers, body=body)
            if answer.delay:
                time.sleep(answer.delay)
            if answer.lose:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        do_POST = _handle
        do_GET = _handle
        do_PUT = _handle
        do_DELETE = _handle

    return Handler


# -- execution environments -----------------------------------------------------------------------


class LambdaError(RuntimeError):
    """An invocation of a ``LambdaContainer`` did not return a result."""


class LambdaHandlerError(LambdaError):
    """The handler raised (or its module failed to import): Lambda's ``errorType``/``errorMessage``."""

    def __init__(self, error_type: str, message: str, stack_trace: Sequence[str], request_id: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.error_message = message
        self.stack_trace = list(stack_trace)
        self.request_id = request_id


class LambdaContainerDied(LambdaError):
    """The container's process ended (killed, crashed) before answering."""


class LambdaTimeout(LambdaError):
    """No answer within the timeout: the container was killed, as Lambda ends a timed-out environment."""


@dataclass(frozen=True)
class ContainerInvocation:
    """One event a container handled, with its timings."""

    request_id: str
    ok: bool
    seconds: float
    """The handler's own run time."""
    init_seconds: float | None
    """The handler module's import time when this event caused it (the cold start), else None."""
    wall_seconds: float
    """From handing the event over to reading the answer, as the caller waited (process start included)."""


def _container_env(
    env: Mapping[str, str], *, handler: str, function_name: str, timeout: float, memory_mb: int
) -> dict[str, str]:
    """The test's variables over Lambda's reserved ones, over this process's minus anything AWS/Slack/bot.

    Nothing AWS-, Slack- or store-related leaks from the test process (the moto fixture sets
    AWS variables session-wide), so the container sees only what the test hands it, as a
    function sees only its configuration.
    """
    prefixes = ("AWS_", "SLACK_", "DYNAMODB_", "SNAPSHOT_", "LAMBDA_CONTAINER_", "_HANDLER")
    keep = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or REGION
    day = _now().strftime("%Y/%m/%d")
    reserved = {
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function_name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"{day}/[$LATEST]{secrets.token_hex(16)}",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "LAMBDA_TASK_ROOT": str(REPO),
        "_HANDLER": handler.replace(":", "."),
        "TZ": ":UTC",
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
    }
    return {
        **keep,
        **reserved,
        **env,
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        HANDLER_ENV: handler,
        TIMEOUT_ENV: str(timeout),
    }


class LambdaContainer:
    """One Lambda execution environment: a subprocess handling events one at a time.

    The process starts on the first ``invoke`` (or ``start()``); the handler module is imported
    on the first event, whose ``init_seconds`` is the cold start. ``env`` is the function's
    configuration (the test's SLACK_*, DYNAMODB_TABLE, AWS_ENDPOINT_URL_*, fake credentials...);
    ``handler`` defaults to ``$LAMBDA_CONTAINER_HANDLER`` or ``bot.lambda_handler:handler``.
    Everything the process writes to stdout or stderr (logs, prints, tracebacks) goes to
    ``log_path`` (``stderr_text()``).

    Calls to ``invoke`` on one container queue up behind each other, like events in one
    environment; a real Lambda never queues but starts another environment, which
    ``LambdaPool`` does.
    """

    _numbers = itertools.count(1)

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        handler: str | None = None,
        function_name: str | None = None,
        timeout: float = 900.0,
        memory_mb: int = 1024,
        log_path: Path | None = None,
        name: str | None = None,
    ) -> None:
        env = dict(env or {})
        self.name = name or f"container-{next(self._numbers)}"
        self.handler = handler or env.get(HANDLER_ENV) or os.environ.get(HANDLER_ENV) or "bot.lambda_handler:handler"
        self.function_name = function_name or env.get("AWS_LAMBDA_FUNCTION_NAME") or FUNCTION_NAME
        self.timeout = timeout
        self.env = _container_env(
            env, handler=self.handler, function_name=self.function_name, timeout=timeout, memory_mb=memory_mb
        )
        if log_path is None:
            handle, raw = tempfile.mkstemp(prefix=f"lambda-{self.name}-", suffix=".log")
            os.close(handle)
            log_path = Path(raw)
        self.log_path = log_path
        self.invocations: list[ContainerInvocation] = []
        self.started_at: float | None = None
        self.process_start_seconds: float | None = None
        """From spawning the process to its first answer, minus the handler's own time: interpreter plus import."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._replies: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()
        self._busy = 0
        self._reserved = 0
        self._killed = False

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> Self:
        """Spawn the process (idempotent). It idles until the first event, which imports the handler."""
        with self._lock:
            self._spawn()
        return self

    def _spawn(self) -> None:
        if self._process is not None:
            return
        self._log = self.log_path.open("ab")
        self.started_at = time.monotonic()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.lambda_container"],
            env=self.env,
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        reader = threading.Thread(target=self._read_replies, args=(self._process,), name=f"{self.name}-replies")
        reader.daemon = True
        reader.start()

    def _read_replies(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._replies.put(line)
        self._replies.put(None)

    @property
    def started(self) -> bool:
        return self._process is not None

    @property
    def alive(self) -> bool:
        """Not killed, not exited (a container never started is alive: it is cold)."""
        return not self._killed and (self._process is None or self._process.poll() is None)

    @property
    def busy(self) -> bool:
        """An invocation is running or queued on it, or a chooser just picked it for one.

        Set as soon as ``invoke`` is called, and already when ``LambdaPool`` hands the container
        out, so that ``gather(pool().invoke(a), pool().invoke(b))`` gets two containers.
        """
        return self._busy > 0 or self._reserved > 0

    def reserve(self) -> None:
        """Count as busy until the next ``invoke`` starts (what ``LambdaPool`` does when it picks this one)."""
        self._reserved += 1

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def cold_start_seconds(self) -> float | None:
        """The handler module's import time on the first event, once there was one."""
        return next((i.init_seconds for i in self.invocations if i.init_seconds is not None), None)

    def kill(self) -> None:
        """SIGKILL the process, mid-invocation or not: no clean-up, as Lambda ends a timed-out or crashed environment.

        A pending ``invoke`` then raises ``LambdaContainerDied``; so does every later one.
        """
        self._killed = True
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(timeout=10)

    def hang_up(self) -> None:
        """Close the process's stdin: it finishes the event in hand, if any, and exits."""
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()

    def close(self) -> None:
        """End the process politely (stdin closed, the loop ends), killing it if it does not exit in 5 s."""
        process = self._process
        if process is not None and process.poll() is None:
            self.hang_up()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        if process is not None:
            for stream in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    if stream is not None:
                        stream.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stderr_text(self) -> str:
        """All the process wrote (logs, prints, tracebacks), e.g. to assert that no traceback appeared."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # -- invocations -------------------------------------------------------------------------

    async def invoke(self, event: Mapping[str, Any], timeout: float | None = None) -> Any:
        """Run the handler on ``event`` in this container and return what it returned.

        Raises ``LambdaHandlerError`` if it raised, ``LambdaContainerDied`` if the process
        died first, ``LambdaTimeout`` (after killing it) if no answer came within ``timeout``
        (default: the function timeout, plus Lambda's init allowance on a cold start).
        The wait happens in a thread, so the event loop keeps serving (the local Slack the
        handler calls lives on it).
        """
        self._busy += 1  # before any await, so a chooser called next sees this container taken
        self._reserved = max(0, self._reserved - 1)
        try:
            return await asyncio.to_thread(self.invoke_sync, event, timeout)
        finally:
            self._busy -= 1

    def invoke_sync(self, event: Mapping[str, Any], timeout: float | None = None) -> Any:
        """``invoke`` for code without an event loop; blocks the calling thread."""
        line = (json.dumps(event) + "\n").encode()
        with self._lock:
            if self._killed:
                raise LambdaContainerDied(f"{self.name} was killed")
            first = not self.invocations
            cold = self.cold_start_seconds is None
            self._spawn()
            process = self._process
            assert process is not None and process.stdin is not None
            limit = timeout if timeout is not None else self.timeout + (INIT_GRACE_SECONDS if cold else 0.0)
            sent = time.monotonic()
            try:
                process.stdin.write(line)
                process.stdin.flush()
            except (OSError, ValueError) as exc:  # ValueError: stdin already closed by hang_up()
                raise self._died(f"could not take the event ({exc})") from exc
            try:
                raw = self._replies.get(timeout=limit)
            except queue.Empty:
                self.kill()
                raise LambdaTimeout(f"{self.name}: Task timed out after {limit:.2f} seconds") from None
            if raw is None:
                self._replies.put(None)  # stay dead for later calls
                raise self._died("died mid-invocation")
            reply: dict[str, Any] = json.loads(raw)
            wall = time.monotonic() - sent
            self.invocations.append(
                ContainerInvocation(
                    request_id=str(reply.get("request_id", "")),
                    ok=bool(reply.get("ok")),
                    seconds=float(reply.get("seconds") or 0.0),
                    init_seconds=reply.get("init_seconds"),
                    wall_seconds=wall,
                )
            )
            if first and self.started_at is not None:
                self.process_start_seconds = time.monotonic() - self.started_at - float(reply.get("seconds") or 0.0)
        if not reply.get("ok"):
            raise LambdaHandlerError(
                str(reply.get("errorType", "Error")),
                str(reply.get("errorMessage", reply.get("error", ""))),
                reply.get("stackTrace") or [],
                str(reply.get("request_id", "")),
            )
        return reply.get("result")

    def _died(self, what: str) -> LambdaContainerDied:
        code = None if self._process is None else self._process.poll()
        tail = self.stderr_text()[-2000:]
        return LambdaContainerDied(f"{self.name} {what} (exit code {code}); its log ends:\n{tail}")

    def __repr__(self) -> str:
        state = "dead" if not self.alive else ("busy" if self.busy else ("warm" if self.invocations else "cold"))
        return f"LambdaContainer({self.name}, {state}, {len(self.invocations)} invocations)"


ContainerChooser = Callable[[], LambdaContainer]
"""Picks the container that gets the next event (``LambdaPool``, ``round_robin(...)``, ``lambda: c``)."""


class LambdaPool:
    """Containers of one function, handed out the way Lambda scales.

    ``policy="warm"``: an idle live container if there is one (the most recently used, as
    Lambda favours), else a new cold one. ``policy="cold"``: always a new one, so every event
    pays a cold start. Calling the pool picks; ``new()`` adds one explicitly. Containers get
    their logs in ``log_dir`` and are all closed by ``close()``.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        policy: Literal["warm", "cold"] = "warm",
        log_dir: Path | None = None,
        handler: str | None = None,
        function_name: str | None = None,
        timeout: float = 900.0,
        memory_mb: int = 1024,
    ) -> None:
        self.env = dict(env or {})
        self.policy = policy
        self.log_dir = log_dir
        self.handler = handler
        self.function_name = function_name
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.containers: list[LambdaContainer] = []
        self._last_used: dict[str, int] = {}
        self._uses = itertools.count()

    def new(self) -> LambdaContainer:
        name = f"container-{len(self.containers) + 1}"
        container = LambdaContainer(
            self.env,
            handler=self.handler,
            function_name=self.function_name,
            timeout=self.timeout,
            memory_mb=self.memory_mb,
            log_path=None if self.log_dir is None else self.log_dir / f"lambda-{name}.log",
            name=name,
        )
        self.containers.append(container)
        return container

    def __call__(self) -> LambdaContainer:
        chosen: LambdaContainer | None = None
        if self.policy == "warm":
            idle = [c for c in self.containers if c.alive and not c.busy]
            if idle:
                chosen = max(idle, key=lambda c: self._last_used.get(c.name, -1))
        if chosen is None:
            chosen = self.new()
        chosen.reserve()
        self._last_used[chosen.name] = next(self._uses)
        return chosen

    def close(self) -> None:
        """Close every container, all at once (each exit takes an interpreter's teardown)."""
        for container in self.containers:
            container.hang_up()
        for container in self.containers:
            container.close()

    def stderr_text(self) -> str:
        """Every container's log, each under its name."""
        return "\n".join(f"--- {c.name} ---\n{c.stderr_text()}" for c in self.containers)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def round_robin(containers: Sequence[LambdaContainer]) -> ContainerChooser:
    """A chooser cycling through a fixed set of containers, whatever their state."""
    cycle = itertools.cycle(list(containers))
    return lambda: next(cycle)


def _chooser(containers: ContainerChooser | LambdaContainer) -> ContainerChooser:
    if isinstance(containers, LambdaContainer):
        only = containers
        return lambda: only
    return containers


# -- Slack's side, through the function's front door --------------------------------------------


@dataclass(frozen=True)
class Ack:
    """One request's round trip through the front door, as Slack would time it."""

    container: str
    status: int
    seconds: float
    cold: bool
    """The container had not handled an event before (its import was part of this ack)."""
    error: str | None = None


class LambdaTransport(HttpTransport):
    """``LocalSlackUser``'s transport to the bot deployed as a Lambda function behind a Function URL or API Gateway.

    It reuses ``HttpTransport`` whole except the network: ``deliver`` encodes payloads the way
    Slack does over HTTP and calls ``post``, which here signs the body as ``HttpTransport``
    would, wraps it in the ``event_format`` event and runs it in the container ``containers``
    picks, then turns the handler's answer into the ``BotResponse`` Slack would receive. So
    ``send_raw`` (unsigned, forged, stale requests) works too.

    A handler that raises, a container that dies and a timeout become the front door's own
    5xx answer, as Slack would get it; they are listed in ``errors``. With ``ack_timeout`` a
    slower answer raises ``TimeoutError`` as Slack gives up, while the invocation runs on
    (``late``; awaited by ``aclose``). ``acks`` times every round trip.
    """

    def __init__(
        self,
        *,
        containers: ContainerChooser | LambdaContainer,
        signing_secret: str = LOCAL_SIGNING_SECRET,
        event_format: EventFormat = "function_url",
        path: str = SLACK_PATH,
        base64: bool | None = None,
        ack_timeout: float | None = None,
    ) -> None:
        super().__init__(bot_url=f"lambda+{event_format}://{FUNCTION_NAME}{path}", signing_secret=signing_secret)
        self.choose = _chooser(containers)
        self.signing_secret = signing_secret
        self.event_format: EventFormat = event_format
        self.path = path
        self.base64 = base64
        self.ack_timeout = ack_timeout
        self.acks: list[Ack] = []
        self.errors: list[LambdaError] = []
        self.late: list[asyncio.Task[Any]] = []

    def event_for(self, body: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
        """The event the front door would hand the function for this request."""
        rest_default = self.base64 is None and self.event_format == "rest_api"
        extra: dict[str, Any] = {} if rest_default else {"base64": self.base64}
        return _BUILDERS[self.event_format](body, headers, path=self.path, **extra)

    async def post(
        self,
        body: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        sign: bool = True,
        timestamp: str | None = None,
        signature: str | None = None,
    ) -> BotResponse:
        """What ``HttpTransport.post`` does, with the Lambda front door instead of a socket."""
        sent = {**SLACK_CLIENT_HEADERS, "Content-Type": FORM, **(headers or {})}
        if sign:
            slack = signed(body, self.signing_secret, timestamp=timestamp)
            if signature is not None:
                slack["X-Slack-Signature"] = signature
            sent |= {k: v for k, v in slack.items() if k != "Content-Type"}
        event = self.event_for(body, sent)
        container = self.choose()
        cold = container.cold_start_seconds is None
        started = time.monotonic()
        task = asyncio.ensure_future(container.invoke(event))
        await asyncio.sleep(0)  # let it start, so the container is marked busy before anyone chooses again
        try:
            if self.ack_timeout is None:
                result = await task
            else:
                result = await asyncio.wait_for(asyncio.shield(task), self.ack_timeout)
        except TimeoutError:
            self.late.append(task)
            self.acks.append(Ack(container.name, 0, time.monotonic() - started, cold, "ack timeout"))
            raise TimeoutError(
                f"{container.name} did not answer within Slack's {self.ack_timeout}s (cold start: {cold})"
            ) from None
        except LambdaError as exc:
            self.errors.append(exc)
            status = 504 if isinstance(exc, LambdaTimeout) and self.event_format == "rest_api" else 502
            response = _gateway_error(status, self.event_format)
            self.acks.append(Ack(container.name, status, time.monotonic() - started, cold, str(exc)))
            return response
        response = bot_response(result, event_format=self.event_format)
        self.acks.append(Ack(container.name, response.status, time.monotonic() - started, cold))
        return response

    async def aclose(self) -> None:
        """Let invocations Slack stopped waiting for finish (their failures are in ``errors``)."""
        for task in self.late:
            try:
                await task
            except LambdaError as exc:
                self.errors.append(exc)
        self.late.clear()
        await super().aclose()


# -- the work handed off: replaying recorded self-invocations -----------------------------------


@dataclass(frozen=True)
class Replayed:
    """One recorded invocation run in a container."""

    invocation: Invocation
    container: str
    result: Any = None
    error: LambdaError | None = None


async def replay(
    local_lambda: LocalLambda,
    containers: ContainerChooser | LambdaContainer,
    *,
    invocations: Sequence[Invocation] | None = None,
    concurrently: bool = False,
    until_idle: bool = False,
    raise_errors: bool = True,
    timeout: float | None = None,
) -> list[Replayed]:
    """Run recorded invocations' payloads as events in containers, as Lambda's async queue would.

    By default takes what ``local_lambda`` recorded so far (``invocations`` replays a given
    list instead, e.g. the same one twice, as Lambda's at-least-once delivery may). One after
    the other unless ``concurrently``; with ``until_idle`` it keeps taking and replaying what
    the replayed handlers invoke in turn until nothing new arrives. The first handler error is
    raised unless ``raise_errors`` is False; then errors are in the results.
    """
    choose = _chooser(containers)
    done: list[Replayed] = []

    async def run(invocation: Invocation) -> Replayed:
        container = choose()
        try:
            result = await container.invoke(invocation.event(), timeout=timeout)
        except LambdaError as exc:
            return Replayed(invocation, container.name, error=exc)
        return Replayed(invocation, container.name, result=result)

    batch = list(local_lambda.take() if invocations is None else invocations)
    while batch:
        if concurrently:
            done.extend(await asyncio.gather(*(run(i) for i in batch)))
        else:
            for invocation in batch:
                done.append(await run(invocation))
        if raise_errors:
            failed = next((r for r in done if r.error is not None), None)
            if failed is not None and failed.error is not None:
                raise failed.error
        batch = local_lambda.take() if until_idle else []
    return done


# -- pytest fixtures --------------------------------------------------------------------------------


@pytest.fixture
def local_lambda() -> Iterator[LocalLambda]:
    """A started ``LocalLambda``; hand ``local_lambda.env()`` to the bot's containers."""
    with LocalLambda() as server:
        yield server


@pytest.fixture
def lambda_pool(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., LambdaPool]]:
    """Factory: ``lambda_pool(env, policy="warm", handler=None, timeout=900.0)``; closed after the test.

    Logs go to the test's ``tmp_path``; when the test failed, each container's log tail is printed.
    """
    pools: list[LambdaPool] = []

    def make(env: Mapping[str, str] | None = None, **options: Any) -> LambdaPool:
        log_dir = tmp_path / f"lambda-pool-{len(pools) + 1}"
        log_dir.mkdir(exist_ok=True)
        pool = LambdaPool(env, log_dir=log_dir, **options)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for pool in pools:
            for container in pool.containers:
                print(f"--- {container.name} ---\n{container.stderr_text()[-4000:]}")
