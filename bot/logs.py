"""Log levels: ``LOG_LEVEL`` for the bot's own lines, never the wire logs of its libraries.

At DEBUG, botocore logs whole responses (a Secrets Manager read is the Slack token and
signing secret in clear; a DynamoDB item is a run's state) and the Slack and HTTP
libraries log request bodies (what people typed). So however low ``LOG_LEVEL`` goes,
those loggers stay at INFO: turning on debugging must not put secrets in the logs.
"""

from __future__ import annotations

import logging
from typing import Final

WIRE_LOGGERS: Final = ("botocore", "boto3", "s3transfer", "urllib3", "aiohttp", "slack_sdk", "slack_bolt")


def set_level(level: str) -> None:
    """Set the root logger's level (a name such as ``INFO``), keeping wire logs at INFO or above."""
    root = logging.getLogger()
    root.setLevel(level.upper())
    floor = max(root.level, logging.INFO)
    for name in WIRE_LOGGERS:
        logging.getLogger(name).setLevel(floor)
