"""pytest plugin: an HTTP proxy in front of moto's server that breaks AWS on demand.

Resilience tests need the failures real AWS produces now and then, at a chosen moment:
DynamoDB answering 500 for a while (botocore retries those as transient), a slow answer,
and the nasty one, a write that lands but whose answer is lost on the way back, so that
botocore retries a write that already happened and a conditional retry then fails its
own condition. moto cannot do any of that, so this proxy sits between the client (the
test's boto3, or a bot subprocess through ``fault_env``) and moto, forwards everything,
and applies the faults a test switches on at runtime::

    fault_proxy.fail(operations={"PutItem", "UpdateItem"}, for_seconds=30)
    fault_proxy.delay(operations={"GetItem"}, seconds=2.0, times=1)
    fault_proxy.lose_response(operations={"UpdateItem"}, times=1, when=lambda body: ..., then=lambda: ...)
    fault_proxy.fail(methods={"PUT"}, service="s3", times=1)
    fault_proxy.throttle(operations={"UpdateItem"}, kind="ThrottlingException", times=2)

DynamoDB requests are matched by operation (the ``X-Amz-Target`` header), S3 requests by
HTTP method and path. Faults end after ``times`` matching requests, after ``for_seconds``,
or when ``clear()`` is called; ``events`` records what the proxy did to which request.
Requests the proxy fails never reach moto, so they are neither counted nor charged there;
lost responses are, as the write really happened.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest

from tests.support.aws import CountingMotoServer, _env
from tests.support.threaded_http import ThreadedHttpServer

Action = Literal["fail", "delay", "lose_response"]
Service = Literal["dynamodb", "s3"]
BodyPredicate = Callable[[dict[str, Any]], bool]

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "expect"}
)


@dataclass(frozen=True)
class ProxiedRequest:
    """What a fault rule can match on."""

    service: Service
    operation: str | None
    """DynamoDB's operation (``PutItem``), from ``X-Amz-Target``; None for S3."""
    method: str
    path: str
    body: bytes

    def json_body(self) -> dict[str, Any]:
        """The body parsed as JSON (DynamoDB's requests); ``{}`` when it is not JSON."""
        try:
            parsed = json.loads(self.body or b"{}")
        except (ValueError, UnicodeDecodeError):
            return {}
        return parsed if isinstance(parsed, dict) else {}


@dataclass
class FaultEvent:
    """One fault the proxy applied, for assertions (``proxy.events``)."""

    action: Action
    service: Service
    operation: str | None
    method: str
    path: str
    at: float
    error: str | None = None
    """For ``fail``: the DynamoDB ``__type`` answered (``InternalServerError``, ``ThrottlingException``...)."""


@dataclass
class _Rule:
    action: Action
    operations: frozenset[str] | None
    methods: frozenset[str] | None
    path: re.Pattern[str] | None
    service: Service | None
    when: BodyPredicate | None
    remaining: int | None
    until: float | None
    seconds: float = 0.0
    status: int = 500
    message: str = "injected by the fault proxy"
    error: str | None = None
    then: Callable[[], None] | None = None
    hits: int = field(default=0)

    def live(self, now: float) -> bool:
        return (self.remaining is None or self.remaining > 0) and (self.until is None or now < self.until)

    def matches(self, request: ProxiedRequest) -> bool:
        if self.service is not None and request.service != self.service:
            return False
        if self.operations is not None and request.operation not in self.operations:
            return False
        if self.methods is not None and request.method not in self.methods:
            return False
        if self.path is not None and not self.path.search(request.path):
            return False
        return self.when is None or bool(self.when(request.json_body()))


class FaultProxy(ThreadedHttpServer):
    """A threaded HTTP proxy to moto's server whose faults can be switched at runtime, thread-safely.

    Start with ``start()`` (or use the ``fault_proxy`` fixture); ``url`` is what clients use
    as their endpoint. A request gets at most one delay and at most one of fail /
    lose_response: the first live matching rule of each kind, in the order they were added.
    """

    thread_name = "fault-proxy"

    def __init__(self, upstream_url: str) -> None:
        parts = urlsplit(upstream_url)
        self._upstream_host = parts.hostname or "127.0.0.1"
        self._upstream_port = parts.port or 80
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._events: list[FaultEvent] = []
        super().__init__()
        self.hook_errors: list[Exception] = []
        """Exceptions raised by ``lose_response(then=...)`` hooks (they run in the proxy's threads)."""

    # -- life cycle --------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    def env(self, *, dynamodb: bool = True, s3: bool = True) -> dict[str, str]:
        """Variables for a bot subprocess: like ``aws_env``, with DynamoDB and/or S3 going through the proxy."""
        variables = _env(f"http://{self._upstream_host}:{self._upstream_port}")
        if dynamodb:
            variables["AWS_ENDPOINT_URL_DYNAMODB"] = self.url
        if s3:
            variables["AWS_ENDPOINT_URL_S3"] = self.url
        return variables

    # -- faults ------------------------------------------------------------------------------

    def fail(
        self,
        *,
        operations: Iterable[str] | None = None,
        methods: Iterable[str] | None = None,
        path: str | None = None,
        service: Service | None = None,
        when: BodyPredicate | None = None,
        times: int | None = None,
        for_seconds: float | None = None,
        status: int = 500,
        message: str = "injected by the fault proxy",
    ) -> None:
        """Answer matching requests with ``status`` (500: botocore retries it) without forwarding them.

        DynamoDB gets its JSON error body (``InternalServerError``; ``ServiceUnavailable`` for
        503), S3 its XML one. Lasts ``times`` requests and/or ``for_seconds``; without
        either, until ``clear()``.
        """
        self._add("fail", operations, methods, path, service, when, times, for_seconds, status=status, message=message)

    def throttle(
        self,
        *,
        kind: Literal["ProvisionedThroughputExceededException", "ThrottlingException"],
        operations: Iterable[str] | None = None,
        when: BodyPredicate | None = None,
        times: int | None = None,
        for_seconds: float | None = None,
    ) -> None:
        """Answer matching DynamoDB requests with 400 and ``__type`` ``kind``, as DynamoDB throttles.

        botocore treats both kinds as throttling: it retries them with its backoff (and,
        in the standard retry mode, spends retry quota), so a short burst is absorbed.
        """
        self._add(
            "fail",
            operations,
            None,
            None,
            "dynamodb",
            when,
            times,
            for_seconds,
            status=400,
            message="Rate of requests exceeds the allowed throughput (injected by the fault proxy)",
            error=kind,
        )

    def delay(
        self,
        *,
        seconds: float,
        operations: Iterable[str] | None = None,
        methods: Iterable[str] | None = None,
        path: str | None = None,
        service: Service | None = None,
        when: BodyPredicate | None = None,
        times: int | None = None,
        for_seconds: float | None = None,
    ) -> None:
        """Hold matching requests for ``seconds`` before forwarding them (then answer normally)."""
        self._add("delay", operations, methods, path, service, when, times, for_seconds, seconds=seconds)

    def lose_response(
        self,
        *,
        operations: Iterable[str] | None = None,
        methods: Iterable[str] | None = None,
        path: str | None = None,
        service: Service | None = None,
        when: BodyPredicate | None = None,
        times: int | None = 1,
        for_seconds: float | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        """Forward matching requests (so they take effect) and then drop the connection unanswered.

        botocore sees a connection error and retries: the retry of a conditional write then
        meets the item its first attempt wrote. ``when`` gets the parsed JSON body.
        ``then`` runs after the request took effect and before the connection is dropped, while
        the client still waits for an answer: what it does lands between the write and its
        retry. It runs in the proxy's thread; what it raises goes to ``hook_errors``.
        """
        self._add("lose_response", operations, methods, path, service, when, times, for_seconds, then=then)

    def clear(self) -> None:
        """Switch every fault off (events are kept)."""
        with self._lock:
            self._rules.clear()

    @property
    def events(self) -> list[FaultEvent]:
        with self._lock:
            return list(self._events)

    def count(self, action: Action, operation: str | None = None) -> int:
        """How many requests got ``action`` (optionally: for one DynamoDB operation)."""
        return sum(1 for e in self.events if e.action == action and (operation is None or e.operation == operation))

    def _add(
        self,
        action: Action,
        operations: Iterable[str] | None,
        methods: Iterable[str] | None,
        path: str | None,
        service: Service | None,
        when: BodyPredicate | None,
        times: int | None,
        for_seconds: float | None,
        **extra: Any,
    ) -> None:
        rule = _Rule(
            action=action,
            operations=None if operations is None else frozenset(o.split(".")[-1] for o in operations),
            methods=None if methods is None else frozenset(m.upper() for m in methods),
            path=None if path is None else re.compile(path),
            service=service,
            when=when,
            remaining=times,
            until=None if for_seconds is None else time.monotonic() + for_seconds,
            **extra,
        )
        with self._lock:
            self._rules.append(rule)

    def _claim(self, request: ProxiedRequest) -> tuple[_Rule | None, _Rule | None]:
        """The delay and the terminal fault (fail / lose_response) for a request, each use counted."""
        now = time.monotonic()
        delay: _Rule | None = None
        terminal: _Rule | None = None
        with self._lock:
            self._rules = [r for r in self._rules if r.live(now)]
            for rule in self._rules:
                wanted = delay is None if rule.action == "delay" else terminal is None
                if not wanted or not rule.matches(request):
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                rule.hits += 1
                if rule.action == "delay":
                    delay = rule
                else:
                    terminal = rule
            for applied in (delay, terminal):
                if applied is not None:
                    self._events.append(
                        FaultEvent(
                            applied.action,
                            request.service,
                            request.operation,
                            request.method,
                            request.path,
                            now,
                            error=_error_kind(request, applied) if applied.action == "fail" else None,
                        )
                    )
        return delay, terminal

    # -- forwarding --------------------------------------------------------------------------

    def _forward(
        self, request: ProxiedRequest, headers: list[tuple[str, str]]
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(self._upstream_host, self._upstream_port, timeout=120)
        try:
            connection.putrequest(request.method, request.path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
                    connection.putheader(name, value)
            if request.body or request.method in ("POST", "PUT", "PATCH"):
                connection.putheader("Content-Length", str(len(request.body)))
            connection.endheaders(request.body or None)
            response = connection.getresponse()
            body = response.read()
            return response.status, response.reason, response.getheaders(), body
        finally:
            connection.close()


def _error_kind(request: ProxiedRequest, rule: _Rule) -> str:
    if rule.error is not None:
        return rule.error
    if request.service == "dynamodb":
        return "ServiceUnavailable" if rule.status == 503 else "InternalServerError"
    return "ServiceUnavailable" if rule.status == 503 else "InternalError"


def _error_body(request: ProxiedRequest, status: int, message: str, kind: str) -> tuple[str, bytes]:
    if request.service == "dynamodb":
        body = {"__type": f"com.amazonaws.dynamodb.v20120810#{kind}", "message": message}
        return "application/x-amz-json-1.0", json.dumps(body).encode()
    xml = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{kind}</Code><Message>{message}</Message></Error>'
    return "application/xml", xml.encode()


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, and "Expect: 100-continue" (S3 PUTs) answered
        timeout = 30  # an idle kept-alive connection closes after this

        def log_message(self, format: str, *args: Any) -> None:  # one line per request otherwise
            return

        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                chunks: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _handle(self) -> None:
            body = self._read_body()
            target = self.headers.get("X-Amz-Target", "")
            request = ProxiedRequest(
                service="dynamodb" if target.startswith("DynamoDB_") else "s3",
                operation=target.split(".", 1)[1] if "." in target else None,
                method=self.command,
                path=self.path,
                body=body,
            )
            delay, terminal = proxy._claim(request)
            if delay is not None:
                time.sleep(delay.seconds)
            if terminal is not None and terminal.action == "fail":
                content_type, error = _error_body(
                    request, terminal.status, terminal.message, _error_kind(request, terminal)
                )
                self.send_response(terminal.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(error)))
                self.send_header("x-amzn-RequestId", "fault-proxy")
                self.end_headers()
                self.wfile.write(error)
                return
            status, reason, headers, answer = proxy._forward(request, list(self.headers.items()))
            if terminal is not None:  # lose_response: it happened upstream; the client never hears of it
                if terminal.then is not None:
                    try:
                        terminal.then()
                    except Exception as error:
                        proxy.hook_errors.append(error)
                self.close_connection = True
                with contextlib.suppress(OSError):  # the client may have hung up already
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response_only(status, reason)
            for name, value in headers:
                lowered = name.lower()
                if lowered in _HOP_BY_HOP or lowered in ("date", "server"):
                    continue
                if lowered == "content-length" and self.command != "HEAD":
                    continue  # recomputed below; a HEAD keeps the size of what it describes
                self.send_header(name, value)
            self.send_header("Date", self.date_time_string())
            if self.command != "HEAD":
                self.send_header("Content-Length", str(len(answer)))
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client died waiting (SIGKILL)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

    return Handler


@pytest.fixture
def fault_proxy(moto_server: CountingMotoServer) -> Iterator[FaultProxy]:
    """A fault proxy in front of the session's moto server, started for this test only."""
    with FaultProxy(moto_server.url) as proxy:
        yield proxy


@pytest.fixture
def fault_env(fault_proxy: FaultProxy) -> dict[str, str]:
    """Variables to hand a bot subprocess so that its DynamoDB and S3 traffic goes through ``fault_proxy``."""
    return fault_proxy.env()
