"""One Lambda execution environment, as a process: ``python -m tests.support.lambda_container``.

``tests.support.lambda_.LambdaContainer`` starts this module as a subprocess and talks to it
over a pipe: one JSON line per event on stdin, one JSON line per result on stdout. It mirrors
what the Python runtime does inside a real Lambda environment, so that the bot's Lambda entry
point meets the same conditions as in AWS:

- The handler module is imported lazily, on the first event (Lambda's init phase), and the
  time it took is reported as ``init_seconds``: that is the cold start a test can measure.
  A container that never got an event costs only an idle interpreter.
- Events are handled one at a time, in order, in one long-lived process, so module-level
  state (clients, caches, connections) is reused between invocations as in a warm container.
- Each invocation gets a context object shaped like the runtime's (``aws_request_id`` a fresh
  uuid4, ``memory_limit_in_mb`` a *string* as the runtime gives it,
  ``get_remaining_time_in_millis()`` counting down to the function timeout).
- What the handler prints goes to stderr (Lambda sends stdout and stderr to the log stream),
  so nothing the handler writes can corrupt the protocol on stdout.
- The root logger gets a handler, as the runtime installs one before importing the handler
  module. ``logging.basicConfig`` is then a no-op, exactly the trap it is on real Lambda.
- A handler that raises is reported as the runtime reports it (``errorType``/``errorMessage``
  and the traceback, also logged to stderr), and the process keeps serving, as a warm
  environment does after a function error.

This module imports only the standard library before the handler, so the cold start
measured is the handler's own. Its probe handlers (``echo``, ``fail``, ``slow``,
``slack_front_door``, ``relay``; see the end of the file) are what the harness's own tests run.

Environment (set by ``LambdaContainer``, overridable by the test):
    ``LAMBDA_CONTAINER_HANDLER``  ``module:function`` to call (default ``bot.lambda_handler:handler``)
    ``LAMBDA_CONTAINER_TIMEOUT``  the function timeout in seconds (default 900)
    ``LAMBDA_CONTAINER_RUNTIME_LOGGING``  ``0`` to leave the root logger without a handler
    and Lambda's reserved variables (``AWS_LAMBDA_FUNCTION_NAME``, ``AWS_REGION``, ...).
"""

from __future__ import annotations

import decimal
import importlib
import json
import logging
import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from typing import IO, Any, Final

HANDLER_ENV: Final = "LAMBDA_CONTAINER_HANDLER"
TIMEOUT_ENV: Final = "LAMBDA_CONTAINER_TIMEOUT"
RUNTIME_LOGGING_ENV: Final = "LAMBDA_CONTAINER_RUNTIME_LOGGING"
DEFAULT_HANDLER: Final = "bot.lambda_handler:handler"
DEFAULT_TIMEOUT_SECONDS: Final = 900.0
DEFAULT_REGION: Final = "eu-west-1"
DEFAULT_ACCOUNT: Final = "123456789012"

Handler = Callable[[Any, Any], Any]


class LambdaContext:
    """The context object the Python runtime passes to a handler, with the same attribute names and types."""

    def __init__(self, *, timeout_seconds: float) -> None:
        env = os.environ
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME", "approval-bot")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{DEFAULT_ACCOUNT}:function:{self.function_name}"
        self.memory_limit_in_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
        """A string, as the runtime gives it (it copies the environment variable)."""
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME", f"/aws/lambda/{self.function_name}")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))

    def log(self, message: str) -> None:
        sys.stderr.write(message)

    def __repr__(self) -> str:
        return (
            f"LambdaContext([aws_request_id={self.aws_request_id},function_name={self.function_name},"
            f"function_version={self.function_version},invoked_function_arn={self.invoked_function_arn}])"
        )


class _RequestIdFilter(logging.Filter):
    """Adds ``aws_request_id`` to every record, as the runtime's log filter does."""

    request_id = ""

    def filter(self, record: logging.LogRecord) -> bool:
        record.aws_request_id = self.request_id
        return True


def _install_runtime_logging(request_ids: _RequestIdFilter) -> None:
    """The handler the Python runtime puts on the root logger before the function's code is imported."""
    handler = logging.StreamHandler(sys.stderr)
    formatter = logging.Formatter(
        "[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(aws_request_id)s\t%(message)s", "%Y-%m-%dT%H:%M:%S"
    )
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    handler.addFilter(request_ids)
    logging.getLogger().addHandler(handler)


def _load(spec: str) -> Handler:
    module_name, _, function_name = spec.partition(":")
    module = importlib.import_module(module_name)
    handler = getattr(module, function_name or "handler")
    if not callable(handler):
        raise TypeError(f"{spec} is not callable")
    return handler  # type: ignore[no-any-return]


def _json_default(value: Any) -> Any:
    """Decimals become numbers, as in the runtime's encoder; anything else cannot be marshalled."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _error(kind: str, message: str, trace: list[str]) -> dict[str, Any]:
    return {
        "ok": False,
        "error": f"{kind}: {message}",
        "errorType": kind,
        "errorMessage": message,
        "stackTrace": trace,
    }


def serve(requests: IO[str], replies: IO[str], *, handler_spec: str, timeout_seconds: float) -> None:
    """Handle events from ``requests`` one at a time until it closes; one reply line each."""
    request_ids = _RequestIdFilter()
    if os.environ.get(RUNTIME_LOGGING_ENV, "1") != "0":
        _install_runtime_logging(request_ids)
    handler: Handler | None = None
    for line in requests:
        if not line.strip():
            continue
        reply: dict[str, Any]
        init_seconds: float | None = None
        if handler is None:  # the init phase: its time is not the invocation's
            started = time.perf_counter()
            try:
                handler = _load(handler_spec)
            except Exception as exc:
                request_id = str(uuid.uuid4())
                message = f"Unable to import module '{handler_spec.partition(':')[0]}': {exc}"
                sys.stderr.write(f"[ERROR] Runtime.ImportModuleError: {message}\n{traceback.format_exc()}")
                reply = _error("Runtime.ImportModuleError", message, traceback.format_exc().splitlines())
                reply |= {"request_id": request_id, "seconds": 0.0, "init_seconds": None}
                replies.write(json.dumps(reply) + "\n")
                replies.flush()
                continue
            init_seconds = time.perf_counter() - started
        context = LambdaContext(timeout_seconds=timeout_seconds)
        request_ids.request_id = context.aws_request_id
        started = time.perf_counter()
        try:
            result = handler(json.loads(line), context)
        except Exception as exc:
            trace = traceback.format_exception(exc)
            sys.stderr.write(f"[ERROR] {type(exc).__name__}: {exc}\n{''.join(trace)}")
            reply = _error(type(exc).__name__, str(exc), [t.rstrip() for t in trace])
        else:
            try:
                reply = {"ok": True, "result": json.loads(json.dumps(result, default=_json_default))}
            except (TypeError, ValueError) as exc:
                message = f"Unable to marshal response: {exc}"
                sys.stderr.write(f"[ERROR] Runtime.MarshalError: {message}\n")
                reply = _error("Runtime.MarshalError", message, [])
        seconds = time.perf_counter() - started
        reply |= {"request_id": context.aws_request_id, "seconds": seconds, "init_seconds": init_seconds}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


# -- probe handlers ------------------------------------------------------------------------------
# Small handlers for testing this harness (tests/support/test_lambda_.py) and for checking a
# container's configuration before running the bot in it. They live here, not in a test
# module, because importing a test module (pytest, moto, boto3, ...) would make every cold
# start in those tests half a second slower; what they need beyond the standard library they
# import when called.

_events_seen = 0


def echo(event: Any, context: Any) -> dict[str, Any]:
    """Returns the event and what the context says; counts events, to show the process is reused."""
    global _events_seen
    _events_seen += 1
    print("printed by the handler")  # must reach the log, not the protocol on stdout
    return {
        "event": event,
        "request_id": context.aws_request_id,
        "function_name": context.function_name,
        "memory_limit_in_mb": context.memory_limit_in_mb,
        "remaining_ms": context.get_remaining_time_in_millis(),
        "events_seen": _events_seen,
        "pid": os.getpid(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("AWS_LAMBDA_", "SLACK_", "PROBE_"))},
    }


def fail(event: Any, context: Any) -> None:
    raise ValueError(f"cannot handle {event.get('what')}")


def _form(event: Any) -> dict[str, str]:
    """The form fields of an HTTP event's body, read the way Bolt's Lambda adapter reads it."""
    from urllib.parse import parse_qsl

    from slack_bolt.adapter.aws_lambda.handler import to_bolt_request

    return dict(parse_qsl(to_bolt_request(event).raw_body))


def slow(event: Any, context: Any) -> str:
    """Sleeps ``seconds`` (from the event, or from the form body of an HTTP event); says so first."""
    seconds = event["seconds"] if "seconds" in event else _form(event)["seconds"]
    sys.stderr.write("sleeping\n")
    time.sleep(float(seconds))
    return "woke up"


def slack_front_door(event: Any, context: Any) -> dict[str, Any]:
    """A minimal Slack endpoint: reads the event as Bolt does, checks the signature, echoes the form."""
    from slack_bolt.adapter.aws_lambda.handler import to_bolt_request
    from slack_sdk.signature import SignatureVerifier

    request = to_bolt_request(event)
    headers = {k: v[0] for k, v in request.headers.items() if v}
    if not SignatureVerifier(os.environ["SLACK_SIGNING_SECRET"]).is_valid_request(request.raw_body, headers):
        return {"statusCode": 401, "headers": {}, "body": ""}
    answer = {"form": _form(event), "version": event.get("version", "1.0")}
    return {
        "statusCode": 200,
        "headers": {"content-type": "application/json;charset=utf-8"},
        "body": json.dumps(answer),
    }


def relay(event: Any, context: Any) -> dict[str, Any]:
    """Hands work off as the bot does, with an Event self-invocation through boto3, until hop 2."""
    import boto3

    hop = int(event.get("hop", 0))
    if hop < 2:
        boto3.client("lambda").invoke(
            FunctionName=os.environ["AWS_LAMBDA_FUNCTION_NAME"],
            InvocationType="Event",
            Payload=json.dumps({"hop": hop + 1}).encode(),
        )
    return {"hop": hop}


def main() -> None:
    """Keep the real stdout for the protocol and point fd 1 at stderr, where Lambda's logs go."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    serve(
        sys.stdin,
        replies,
        handler_spec=os.environ.get(HANDLER_ENV) or DEFAULT_HANDLER,
        timeout_seconds=float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_SECONDS),
    )


if __name__ == "__main__":
    main()
