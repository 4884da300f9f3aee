"""Work past the ack on Lambda: an asynchronous invocation of this same function.

The event is an envelope around one ``bot.work`` record (ids and a task's words, never
run state, so it stays far below Lambda's payload limit), sealed with an HMAC whose key
is derived from the Slack signing secret. ``handler()`` opens only envelopes it could
have sealed itself: an event that anyone else managed to send (a direct ``Invoke`` by a
principal that may call the function, a test console) gets nothing done. The envelope
names the function it is for and when it was sealed; it is good for six hours, the
longest Lambda keeps retrying an asynchronous event. Lambda may deliver one event more
than once: every kind of work is idempotent (``bot.work``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

from bot.handoff import HandoffFailed
from bot.work import Work, from_wire, to_wire
from engine.threads import in_thread

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

logger = logging.getLogger(__name__)

ENVELOPE: Final = "approval_bot"
VERSION: Final = 1
MAX_AGE_SECONDS: Final = 6 * 3600
INVOKE_BUDGET: Final = 1.0  # seconds of Slack's 3 for the Invoke call, retries included
_KEY_LABEL: Final = b"approval-bot/self-invocation/v1"


class Forged(ValueError):
    """An event that claims to be a self-invocation and is not one this function sealed."""


def envelope_key(signing_secret: str) -> bytes:
    """A key of its own for envelopes: a sealed envelope reveals nothing usable to sign Slack requests."""
    return hmac.new(signing_secret.encode(), _KEY_LABEL, hashlib.sha256).digest()


def is_envelope(event: dict[str, Any]) -> bool:
    return ENVELOPE in event


def seal(work: Work, *, key: bytes, function: str, now: float) -> dict[str, Any]:
    body = {"v": VERSION, "to": function, "at": int(now), "work": to_wire(work)}
    return {ENVELOPE: body, "sig": _mac(key, body)}


def unseal(event: dict[str, Any], *, key: bytes, function: str, now: float) -> Work:
    """The work in ``event``; Forged unless this function sealed it, recently, for itself."""
    body, sig = event.get(ENVELOPE), event.get("sig")
    if not isinstance(body, dict) or not isinstance(sig, str) or not sig.isascii():
        raise Forged("not sealed")
    try:
        expected = _mac(key, body)
    except (RecursionError, ValueError, TypeError):  # nested too deep, or not JSON-encodable
        raise Forged("not sealed") from None
    if not hmac.compare_digest(expected, sig):
        raise Forged("the seal does not match")
    if body.get("v") != VERSION or body.get("to") != function:
        raise Forged("sealed for another function or version")
    sealed_at = body.get("at")
    if not isinstance(sealed_at, int) or not (now - MAX_AGE_SECONDS <= sealed_at <= now + 300):
        raise Forged("sealed too long ago")
    try:
        return from_wire(body.get("work"))
    except ValueError as error:  # sealed by us and still not work: a bug, not an attack
        raise Forged(str(error)) from None


def _mac(key: bytes, body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


class LambdaHandoff:
    """``Handoff`` by ``Invoke(InvocationType="Event")`` of the function itself.

    The client is made on first use (boto3 honours ``AWS_ENDPOINT_URL_LAMBDA``): a Lambda
    container that only ever answers ``/graph help`` never creates one.
    """

    budget = INVOKE_BUDGET

    def __init__(
        self,
        *,
        function: str,
        key: bytes,
        client: Callable[[], LambdaClient] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._function = function
        self._key = key
        self._make_client = client or _lambda_client
        self._client: LambdaClient | None = None
        self._clock = clock

    def prepare(self) -> None:
        """Make the client now (Lambda's init phase), not inside the first ack: reading
        botocore's Lambda model and endpoint rules is most of a cold start's handoff.
        A failure here is left for ``submit`` to meet and report."""
        from botocore.exceptions import BotoCoreError

        try:
            if self._client is None:
                self._client = self._make_client()
        except BotoCoreError as error:
            logger.warning("could not make the Lambda client ahead of the first event: %s", type(error).__name__)

    async def submit(self, work: Work) -> None:
        payload = json.dumps(seal(work, key=self._key, function=self._function, now=self._clock()))
        try:
            await asyncio.wait_for(in_thread(self._invoke, payload.encode()), timeout=INVOKE_BUDGET)
        except TimeoutError:
            logger.error("invoking %s for work after the ack took over %.1f s", self._function, INVOKE_BUDGET)
            raise HandoffFailed("Lambda did not answer in time", maybe_started=True) from None

    def _invoke(self, payload: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            if self._client is None:
                self._client = self._make_client()
            self._client.invoke(FunctionName=self._function, InvocationType="Event", Payload=payload)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "error")
            logger.error("could not invoke %s for work after the ack: %s", self._function, code)
            raise HandoffFailed(f"Lambda said {code}") from None
        except BotoCoreError as error:
            logger.error("could not invoke %s for work after the ack: %s", self._function, type(error).__name__)
            raise HandoffFailed("Lambda could not be reached") from None


def _lambda_client() -> LambdaClient:
    """boto3's Lambda client, made the way ``boto3.client`` makes it (from the container's one
    botocore session, which honours ``AWS_ENDPOINT_URL_LAMBDA`` and the region and credential
    chain), minus importing boto3 itself: its S3 transfer machinery costs ~20 ms of a cold start."""
    from botocore.config import Config

    from bot.aws_lambda.sdk import session

    # One short try: this runs inside Slack's 3 s, and botocore's backoff before a second try
    # (up to a second after a throttle) would not fit. The person is told, and clicks again.
    config = Config(connect_timeout=0.3, read_timeout=0.6, retries={"mode": "standard", "total_max_attempts": 1})
    return cast("LambdaClient", session().create_client("lambda", config=config))
