"""What Slack receives back through the function's front door (Function URL or API Gateway).

A handler's return value becomes an HTTP response the way the front door translates it
(``bot_response``); a function that failed gets the front door's own 5xx answer.
"""

from __future__ import annotations

import base64 as b64
import json
from typing import Any

from localslack.transport import BotResponse
from tests.support.lambda_.events import EventFormat, _media_type


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
