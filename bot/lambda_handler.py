"""The AWS Lambda entry point (``template.yaml``: ``bot.lambda_handler.handler``).

One function takes three kinds of event: Slack's requests (Function URL or API Gateway),
the work it hands itself past Slack's 3-second ack, and the scheduled sweep. Everything
else lives in ``bot.aws_lambda``; this module stays a few lines, and costs nothing to
import until the first event.
"""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.aws_lambda.runtime import LambdaRuntime

_runtime: LambdaRuntime | None = None


def handler(event: Any, context: Any) -> dict[str, Any]:
    if _runtime is not None:
        return _runtime.handle(event, context)
    # A cold start: the first event imports some 900 modules, and the collector would keep
    # walking the new objects (~50 ms of an ack Slack is waiting for). Collect nothing until
    # the first answer is out, then set everything made so far aside for good.
    gc.disable()
    try:
        return _container().handle(event, context)
    finally:
        gc.freeze()
        gc.enable()


def _container() -> LambdaRuntime:
    """The runtime of this container, made by its first event."""
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
