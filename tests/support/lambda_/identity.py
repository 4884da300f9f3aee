"""The function's identity as AWS stamps it, shared by every part of the local deployment.

The account and function name the Invoke API, the events and the containers all agree on,
the clock they stamp with, and X-Ray trace ids as the front door and the Invoke API send them.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Final

ACCOUNT: Final = "123456789012"
FUNCTION_NAME: Final = "approval-bot"


def _now() -> datetime:
    return datetime.now(UTC)


def _trace_id(at: datetime) -> str:
    return f"Root=1-{int(at.timestamp()):08x}-{secrets.token_hex(12)}"
