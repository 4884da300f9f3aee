"""Log levels: ``LOG_LEVEL`` for the bot's own lines, never the wire logs of its libraries.

At DEBUG, botocore logs whole responses (a Secrets Manager read is the Slack token and
signing secret in clear; a DynamoDB item is a run's state) and the Slack and HTTP
libraries log request bodies (what people typed). So however low ``LOG_LEVEL`` goes,
those loggers stay at INFO: turning on debugging must not put secrets in the logs.

The AWS SDK's INFO lines ("Found credentials in environment variables", where an endpoint
came from) only help when debugging, and would sit around every one-line error of
``approval-bot``; they show at ``LOG_LEVEL=DEBUG`` only.
"""

from __future__ import annotations

import logging
from typing import Final

from bot.slack_access import ConfigError, bad_value

WIRE_LOGGERS: Final = ("botocore", "boto3", "s3transfer", "urllib3", "aiohttp", "slack_sdk", "slack_bolt")
DEBUG_ONLY_INFO: Final = frozenset({"botocore", "boto3", "s3transfer", "urllib3"})
LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


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
