"""Log levels: ``LOG_LEVEL`` for the bot's own lines, never the wire logs of its libraries.

At DEBUG, botocore logs whole responses (a Secrets Manager read is the Slack token and
signing secret in clear; a DynamoDB item is a run's state) and the Slack and HTTP
libraries log request bodies (what people typed). So however low ``LOG_LEVEL`` goes,
those loggers stay at INFO: turning on debugging must not put secrets in the logs.

``LOG_FORMAT=json`` (the default on Lambda) writes each line as one JSON object through
Powertools' formatter, with the run, ask, graph and request it is about
(``engine.log_context``) as keys; ``text`` (the default elsewhere) keeps the lines as they
were. Powertools is imported by the first line logged, not before: a cold ack that logs
nothing does not pay for it. The ``audit`` lines keep their message, ``audit {json}``.

The AWS SDK's INFO lines ("Found credentials in environment variables", where an endpoint
came from) only help when debugging, and would sit around every one-line error of
``approval-bot``; they show at ``LOG_LEVEL=DEBUG`` only.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Final

from bot.slack_access import ConfigError, bad_value
from engine import log_context

WIRE_LOGGERS: Final = ("botocore", "boto3", "s3transfer", "urllib3", "aiohttp", "slack_sdk", "slack_bolt")
DEBUG_ONLY_INFO: Final = frozenset({"botocore", "boto3", "s3transfer", "urllib3"})
LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS: Final = ("text", "json")
SERVICE_ENV: Final = "POWERTOOLS_SERVICE_NAME"
DEFAULT_SERVICE: Final = "approval-bot"


def level_named(name: str | None, *, default: str = "INFO") -> int:
    """The logging level called ``name`` (any case; empty or None means ``default``).

    Raises:
        ConfigError: ``name`` is no level; the message names ``LOG_LEVEL`` and the choices.
    """
    text = (name or "").strip() or default
    level = logging.getLevelNamesMapping().get(text.upper())
    if level is None:
        raise ConfigError(
            bad_value(
                "LOG_LEVEL", text, expected=f"a logging level ({', '.join(LEVELS)})", example="INFO", default=default
            )
        )
    return level


def set_level(level: str | None, *, default: str = "INFO") -> None:
    """Set the root logger's level (a name such as ``INFO``), keeping wire logs at INFO or above.

    Raises:
        ConfigError: ``level`` is not a level name (see ``level_named``).
    """
    root = logging.getLogger()
    root.setLevel(level_named(level, default=default))
    debugging = root.level <= logging.DEBUG
    for name in WIRE_LOGGERS:
        floor = logging.WARNING if name in DEBUG_ONLY_INFO and not debugging else logging.INFO
        logging.getLogger(name).setLevel(max(root.level, floor))


def format_named(name: str | None, *, on_lambda: bool) -> str:
    """The ``LOG_FORMAT`` called ``name`` (any case); unset: json on Lambda, text elsewhere.

    Raises:
        ConfigError: ``name`` is neither text nor json.
    """
    text = (name or "").strip().lower()
    if not text:
        return "json" if on_lambda else "text"
    if text not in FORMATS:
        default = "json on Lambda, text elsewhere"
        raise ConfigError(bad_value("LOG_FORMAT", name or "", expected="text or json", example="json", default=default))
    return text


class ContextFilter(logging.Filter):
    """Adds what the line is about (``engine.log_context``) to each record, unless it says so itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in log_context.current().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    """Powertools' ``LambdaPowertoolsFormatter``, made by the first line it formats."""

    def __init__(self) -> None:
        super().__init__()
        self._json: logging.Formatter | None = None

    def format(self, record: logging.LogRecord) -> str:
        if self._json is None:
            from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

            service = os.environ.get(SERVICE_ENV) or DEFAULT_SERVICE
            self._json = LambdaPowertoolsFormatter(service=service, utc=True, name="%(name)s")
        return self._json.format(record)


def use_format(fmt: str, *, root: Any = None) -> None:
    """Format the root logger's handlers' lines as ``fmt`` (``text`` leaves them as they are)."""
    logger = root or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
        if fmt == "json":
            handler.setFormatter(JsonFormatter())
    if fmt == "json":
        logging.captureWarnings(True)  # a library's warning too is one JSON line, not raw text
