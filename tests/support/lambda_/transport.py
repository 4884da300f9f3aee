"""Slack's side, through the function's front door: ``LambdaTransport``.

The ``Transport`` of ``localslack`` for this deployment: ``LocalSlackUser`` drives the
Lambda function exactly as it drives the HTTP server, its payloads encoded and signed as
Slack does, wrapped in a Function URL (or API Gateway) event and handed to a container.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from localslack.transport import BotResponse, HttpTransport
from localslack.user import LOCAL_SIGNING_SECRET
from tests.support.lambda_.containers import LambdaContainer, LambdaError, LambdaTimeout
from tests.support.lambda_.events import _BUILDERS, FORM, SLACK_CLIENT_HEADERS, SLACK_PATH, EventFormat, signed
from tests.support.lambda_.identity import FUNCTION_NAME
from tests.support.lambda_.pool import ContainerChooser, _chooser
from tests.support.lambda_.responses import _gateway_error, bot_response


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
