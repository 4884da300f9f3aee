"""The AWS Lambda entry point (``template.yaml``: ``bot.lambda_handler.handler``).

One function takes three kinds of event: Slack's requests (Function URL or API Gateway),
the work it hands itself past Slack's 3-second ack, and the scheduled sweep. Everything
else lives in ``bot.aws_lambda``; this module stays a few lines, and costs nothing to
import until the first event.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.aws_lambda.runtime import LambdaRuntime

_runtime: LambdaRuntime | None = None


def handler(event: Any, context: Any) -> dict[str, Any]:
    return _container().handle(event)


def _container() -> LambdaRuntime:
    """The runtime of this container, made by its first event."""
    global _runtime
    if _runtime is None:
        logging.getLogger().setLevel(os.environ.get("LOG_LEVEL", "INFO").upper())
        from bot.aws_lambda.runtime import LambdaRuntime

        _runtime = LambdaRuntime.from_environment()
    return _runtime
