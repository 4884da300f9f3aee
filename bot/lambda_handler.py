"""The AWS Lambda entry point (``template.yaml``: ``bot.lambda_handler.handler``).

One function takes three kinds of event: Slack's requests (Function URL or API Gateway),
the work it hands itself past Slack's 3-second ack, and the scheduled sweep. Everything
else lives in ``bot.aws_lambda``; this module stays a few lines.

On Lambda (``AWS_LAMBDA_FUNCTION_NAME`` set) importing it builds the container's runtime:
Lambda imports the handler in its init phase, before the first event, so the ~800 modules,
the Bolt app, the Slack secrets' read and the Lambda client of the handoff are ready when
Slack's request arrives, and the first event's handling is only the request itself (the
work is the same; ``bench/cold_start.py`` measures both the split and the total). If that
build fails (a secret not readable yet, a bad setting), the first event builds again and
fails the way Lambda reports it. Imported anywhere else, it builds nothing.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.aws_lambda.runtime import LambdaRuntime

logger = logging.getLogger(__name__)

_runtime: LambdaRuntime | None = None


def handler(event: Any, context: Any) -> dict[str, Any]:
    if _runtime is not None:
        return _runtime.handle(event, context)
    with _cold():  # the init phase did not build it: this event does, as Slack waits
        return _container().handle(event, context)


@contextmanager
def _cold() -> Iterator[None]:
    """Importing some 800 modules would set the collector walking the new objects (~50 ms of
    a cold start): collect nothing until they are made, then set them aside for good."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _container() -> LambdaRuntime:
    """The runtime of this container, made by its init phase or else its first event."""
    global _runtime
    if _runtime is None:
        from bot import metrics
        from bot.aws_lambda.runtime import LambdaRuntime
        from bot.logs import format_named, set_level, use_format

        set_level(os.environ.get("LOG_LEVEL", "INFO"))
        use_format(format_named(os.environ.get("LOG_FORMAT"), on_lambda=True))
        metrics.start(on=metrics.metrics_on(os.environ.get("METRICS"), on_lambda=True))

        _runtime = LambdaRuntime.from_environment()
    return _runtime


def _init() -> None:
    """Lambda's init phase: build everything the first event would, before it arrives."""
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return  # not on Lambda (a test, a tool importing the module): nothing to build
    with _cold():
        try:
            _container().prepare()
        except Exception as error:  # the first event tries again, and Lambda reports its failure
            logger.warning("the init phase could not build the bot (%s); the first event will", type(error).__name__)


_init()
