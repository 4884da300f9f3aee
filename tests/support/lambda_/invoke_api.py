"""The Lambda ``Invoke`` REST API, locally: ``LocalLambda`` records invocations instead of running them.

A local HTTP server speaking the Lambda ``Invoke`` REST API. The bot's asynchronous
self-invocation (boto3's real Lambda client, pointed here with ``AWS_ENDPOINT_URL_LAMBDA``)
lands here and is recorded in arrival order instead of being run, so the test decides when
and where each one runs (``replay``). It refuses what Lambda refuses (a payload that is not
JSON, over the size quota, an unknown function) and fails on demand the way Lambda fails
(``fail_next``: throttling, access denied, ...; ``lose_next``: accepted but the answer lost,
so boto3 retries and the function runs twice; ``delay_next``: a slow API).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.support.aws import REGION
from tests.support.lambda_.identity import ACCOUNT, _now, _trace_id
from tests.support.lambda_.invoke_errors import _error_body, _modeled_errors, _Rule
from tests.support.threaded_http import ThreadedHttpServer

ASYNC_PAYLOAD_LIMIT: Final = 1_048_576
"""Lambda's quota for an ``Event`` invocation's payload (1 MB); ``RequestResponse`` allows 6 MB."""
SYNC_PAYLOAD_LIMIT: Final = 6_291_456

InvocationType = Literal["Event", "RequestResponse", "DryRun"]


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


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    delay: float = 0.0
    lose: bool = False


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


class LocalLambda(ThreadedHttpServer):
    """A local AWS Lambda ``Invoke`` endpoint that records invocations instead of running them.

    Start with ``start()`` or ``with LocalLambda() as lam:`` (or the ``local_lambda`` fixture)
    and give clients ``env()``. ``invocations`` are the accepted invocations not yet taken,
    ``calls`` every request ever answered (failed, retried and DryRun ones included), in order.
    ``function_names`` limits which functions exist (others get ``ResourceNotFoundException``);
    ``respond`` makes a ``RequestResponse`` invocation's answer (default ``null``). Thread-safe:
    requests arrive on the server's threads while the test reads from its own.
    """

    thread_name = "local-lambda"

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
        super().__init__()

    # -- life cycle --------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

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
