"""The Slack edge: from the bytes Slack sent to Bolt, the same for every entry point.

The HTTP server, the Lambda handler and Socket Mode all come through here, so each
answers everything Slack may send the way Slack expects:

* anything about the signature or its timestamp gets 401, before the body is parsed;
* ``ssl_check`` (unsigned, by design) gets 200 and nothing is done: a short form body,
  the only bytes read without a signature;
* ``url_verification`` gets its challenge back;
* a kind the bot does not handle (an event, a shortcut, ``view_closed``) gets 200 and
  one debug line, because Slack counts errors and disables apps that fail too often;
* a body of the wrong shape gets 400 with a one-line reason, never a 5xx.

The edge parses the body once and hands Bolt that very dict, so Bolt's own parser,
which mis-reads any form body containing the word ``payload``, never sees it; Bolt's
signature check is off because it has been done here (see ``bot.app``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl

from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.ack_first import AckFirst
from bot.payloads import Kind, inspect

logger = logging.getLogger(__name__)

MAX_BODY_BYTES: Final = 1024 * 1024  # Slack's payloads are a few KB; refuse anything absurd early
_TIMESTAMP: Final = re.compile(r"[0-9]{1,12}", re.ASCII)
_SIGNATURE: Final = re.compile(r"v0=[0-9a-f]{64}", re.ASCII)
_FORWARDED: Final = ("content-type", "x-slack-retry-num", "x-slack-retry-reason")


@dataclass(frozen=True)
class EdgeReply:
    status: int
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, value: dict[str, Any]) -> EdgeReply:
        return cls(status, json.dumps(value), {"content-type": "application/json;charset=utf-8"})

    @property
    def payload(self) -> dict[str, Any] | None:
        """The body as Socket Mode sends it back: a JSON object, or None for an empty ack."""
        if not self.body:
            return None
        if self.headers.get("content-type", "").startswith("application/json"):
            value = json.loads(self.body)
            return value if isinstance(value, dict) else None
        return {"text": self.body}


def _refused(status: int, problem: str) -> EdgeReply:
    return EdgeReply.json(status, {"error": problem})


class SlackEdge:
    def __init__(
        self,
        *,
        app: AsyncApp,
        signing_secret: str,
        command: str,
        clock: Callable[[], float] = time.time,
        ack_first: AckFirst | None = None,
    ) -> None:
        self._app = app
        self._command = command
        self._secret = signing_secret.encode()
        self._clock = clock
        self._ack_first = ack_first or AckFirst()  # counted even when nobody waits on it: one int

    @property
    def app(self) -> AsyncApp:
        return self._app

    async def http(self, *, body: bytes, headers: Mapping[str, str]) -> EdgeReply:
        """A request as it came over HTTP (server or Lambda); ``headers`` in any case."""
        with self._ack_first.request():
            return await self._http(body=body, headers=headers)

    async def payload(self, body: object, *, headers: Mapping[str, str] | None = None) -> EdgeReply:
        """A parsed payload from an authenticated source (a signed request, the Socket Mode socket)."""
        with self._ack_first.request():
            return await self._payload(body, headers=headers)

    async def _http(self, *, body: bytes, headers: Mapping[str, str]) -> EdgeReply:
        if len(body) > MAX_BODY_BYTES:
            return _refused(413, "request too large")
        lower = {str(k).lower(): str(v) for k, v in headers.items()}
        content_type = lower.get("content-type", "").split(";")[0].strip().lower()
        if not self._signed(body, lower):
            # The body is not parsed for anyone without the signing secret, save the few
            # bytes of Slack's periodic check of the URL, which is unsigned by design.
            return EdgeReply(200) if _is_ssl_check(body, content_type) else _refused(401, "invalid signature")
        try:
            parsed = self._parse(body.decode("utf-8"), content_type)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return _refused(400, "malformed body")
        if isinstance(parsed, dict) and parsed.get("ssl_check") == "1" and "command" not in parsed:
            return EdgeReply(200)  # signed after all: still only the check
        return await self._payload(parsed, headers={k: lower[k] for k in _FORWARDED if k in lower})

    async def _payload(self, body: object, *, headers: Mapping[str, str] | None = None) -> EdgeReply:
        inspection = inspect(body, command=self._command)
        kind = inspection.kind
        if inspection.problem is not None or kind is None:
            logger.info("refused a malformed Slack payload: %s", inspection.problem)
            return _refused(400, f"malformed payload: {inspection.problem}")
        assert isinstance(body, dict)  # inspect refuses anything else
        if kind is Kind.URL_VERIFICATION:
            return EdgeReply.json(200, {"challenge": body["challenge"]})
        if kind is Kind.IGNORED:
            logger.debug("ignored a Slack request the bot does not handle: %s", inspection.note)
            return EdgeReply(200)
        try:
            # Bolt takes an already parsed body only in its Socket Mode form; all that changes
            # is a signature check the edge has already made.
            request = AsyncBoltRequest(body=body, headers=dict(headers or {}), mode="socket_mode")
        except Exception as error:  # a shape ``inspect`` let through: refuse it, say what broke
            logger.warning("refused a Slack payload Bolt could not read: %s", type(error).__name__)
            return _refused(400, "malformed payload")
        try:
            response = await self._app.async_dispatch(request)
        except Exception:  # a bug of ours; Slack shows the person an error either way
            logger.exception("could not handle a %s request", kind.value)
            return _refused(400, "could not handle this request")
        if response.status >= 500:  # Bolt's answer when a listener raised: logged by bot.app's error handler
            return _refused(400, "could not handle this request")
        return EdgeReply(
            response.status,
            response.body or "",
            {k.lower(): v[0] for k, v in response.headers.items() if v and k.lower() != "content-length"},
        )

    def _signed(self, body: bytes, headers: Mapping[str, str]) -> bool:
        timestamp = headers.get("x-slack-request-timestamp", "")
        signature = headers.get("x-slack-signature", "")
        # Shapes first, so that a timestamp of ``1e9`` or ``abc`` is a 401 like any other bad
        # signature (slack_sdk's verifier would raise on int() of it).
        if not _TIMESTAMP.fullmatch(timestamp) or not _SIGNATURE.fullmatch(signature):
            return False
        if abs(self._clock() - int(timestamp)) > 60 * 5:  # Slack's replay window
            return False
        # Over the bytes as sent (slack_sdk's signer takes text): a body that is not UTF-8
        # must still be judged by its signature first.
        base = b"v0:" + timestamp.encode() + b":" + body
        expected = "v0=" + hmac.new(self._secret, base, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature)

    @staticmethod
    def _parse(text: str, content_type: str) -> object:
        """JSON bodies (Events API) and form bodies (commands; interactions as ``payload=``)."""
        if content_type == "application/json":
            return json.loads(text, parse_constant=_refuse_constant)
        form = dict(parse_qsl(text, keep_blank_values=True, max_num_fields=100, strict_parsing=False))
        if "payload" in form and "command" not in form:
            return json.loads(form["payload"], parse_constant=_refuse_constant)
        return form


_SSL_CHECK_MAX_BYTES: Final = 512  # ``ssl_check=1&token=…``: a few dozen bytes


def _is_ssl_check(body: bytes, content_type: str) -> bool:
    """Slack's ``ssl_check``: a short form with ``ssl_check=1`` and no command, read cheaply."""
    if content_type != "application/x-www-form-urlencoded" or len(body) > _SSL_CHECK_MAX_BYTES:
        return False
    try:
        fields = dict(parse_qsl(body.decode("ascii"), keep_blank_values=True, max_num_fields=8))
    except ValueError:  # not ASCII, or too many fields: not Slack's check
        return False
    return fields.get("ssl_check") == "1" and "command" not in fields


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
