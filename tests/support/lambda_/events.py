"""The events Lambda hands a handler, in the shapes AWS documents, and Slack's signature.

``function_url_event``, ``rest_api_event`` (API Gateway payload 1.0), ``http_api_event``
(2.0) and ``scheduled_event`` build the events Lambda hands a handler, in the shapes of
AWS's documented examples (lower-cased headers and ``requestContext.http`` in 2.0,
``multiValueHeaders`` in 1.0, Slack's form bodies base64-encoded where AWS encodes them),
and ``signed`` signs a body the way Slack does.
"""

from __future__ import annotations

import base64 as b64
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final, Literal
from urllib.parse import parse_qsl

from slack_sdk.signature import SignatureVerifier

from tests.support.aws import REGION
from tests.support.lambda_.identity import ACCOUNT, _now, _trace_id

FORM: Final = "application/x-www-form-urlencoded"
SLACK_PATH: Final = "/slack/events"
SOURCE_IP: Final = "198.51.100.7"
"""Where "Slack" connects from (an address reserved for documentation)."""
SLACK_CLIENT_HEADERS: Final = {
    "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
    "Accept": "application/json,*/*",
    "Accept-Encoding": "gzip,deflate",
}
"""Headers Slack's request client sends besides the body's type and the signature."""

EventFormat = Literal["function_url", "rest_api", "http_api"]


# -- Slack's signature ------------------------------------------------------------------------


def signed(body: bytes, secret: str, *, timestamp: str | int | None = None) -> dict[str, str]:
    """The headers Slack sends with ``body``: its type, the timestamp and the ``v0=`` signature.

    Same computation as ``localslack.transport.HttpTransport`` (slack_sdk's own signer), so
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


def _clf_time(at: datetime) -> str:
    """``12/Mar/2020:19:03:58 +0000``: the access-log time format of ``requestContext.time``."""
    return at.strftime("%d/%b/%Y:%H:%M:%S +0000")


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
