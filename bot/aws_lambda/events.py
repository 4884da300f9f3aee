"""Slack requests as Lambda delivers them, and answers as Lambda wants them back.

Three HTTP shapes carry the same request: a Function URL event and an API Gateway HTTP
API event (payload format 2.0: lower-case headers, ``requestContext.http``), and an API
Gateway REST event (1.0: ``httpMethod``, headers as sent, body often base64). All three
become bytes and headers for ``bot.edge``; nothing here knows Slack.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.edge import EdgeReply


@dataclass(frozen=True)
class HttpRequest:
    method: str
    body: bytes
    headers: dict[str, str]


class BadHttpEvent(ValueError):
    """An HTTP event whose body cannot be read (say, base64 that is not)."""


def is_http(event: Mapping[str, Any]) -> bool:
    context = event.get("requestContext")
    return isinstance(context, dict) and ("httpMethod" in event or isinstance(context.get("http"), dict))


def is_scheduled(event: Mapping[str, Any]) -> bool:
    """An EventBridge rule's scheduled event (not EventBridge Scheduler, whose input is free-form)."""
    return event.get("source") == "aws.events" and event.get("detail-type") == "Scheduled Event"


def http_request(event: Mapping[str, Any]) -> HttpRequest:
    """The request of an event for which ``is_http`` holds."""
    if "httpMethod" in event:  # REST API, payload format 1.0
        method = str(event.get("httpMethod") or "")
    else:
        method = str(event["requestContext"]["http"].get("method") or "")
    headers: dict[str, str] = {}
    for name, value in (event.get("headers") or {}).items():
        headers[str(name).lower()] = str(value)
    raw = event.get("body") or ""
    if not isinstance(raw, str):
        raise BadHttpEvent("the body is not text")
    if event.get("isBase64Encoded"):
        try:
            body = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise BadHttpEvent("the body is not base64") from None
    else:
        body = raw.encode("utf-8", errors="replace")
    return HttpRequest(method=method.upper(), body=body, headers=headers)


def http_response(reply: EdgeReply) -> dict[str, Any]:
    """The same shape answers all three: Function URLs and both API Gateway formats take it."""
    return {"statusCode": reply.status, "headers": dict(reply.headers), "body": reply.body, "isBase64Encoded": False}
