"""Message metadata (``metadata={"event_type": ..., "event_payload": {...}}``) checked as Slack does.

The bot can stamp its messages with machine-readable facts (which run, which card) and read
them back with ``conversations.replies``/``history``; the local Slack must refuse the same
malformed metadata that real Slack refuses, or a bad stamp would only fail in production.
"""

from __future__ import annotations

import re
from typing import Any, Final

from localslack.limits import LIMITS

_EVENT_TYPE: Final = re.compile(r"[a-zA-Z0-9_]+")
_KEYS: Final = frozenset({"event_type", "event_payload"})


def check_metadata(metadata: Any) -> tuple[str, list[str]] | None:
    """Return ``(error, messages)`` for metadata Slack would refuse, or None when it is accepted.

    Not an object at all is ``invalid_metadata_format``; an object of the wrong shape is
    ``invalid_metadata_schema``. An empty object is accepted: ``chat.update`` takes it to mean
    "remove the metadata" (Slack's documented behaviour), ``chat.postMessage`` to mean none.
    """
    if not isinstance(metadata, dict):
        return "invalid_metadata_format", ["metadata must be a JSON object [json-pointer:/metadata]"]
    if not metadata:
        return None
    problems: list[str] = []
    unknown = sorted(set(metadata) - _KEYS)
    if unknown:
        problems.append(f"unexpected properties {unknown} [json-pointer:/metadata]")
    event_type = metadata.get("event_type")
    limit = LIMITS["metadata.event_type"]
    if not isinstance(event_type, str) or not _EVENT_TYPE.fullmatch(event_type) or len(event_type) > limit:
        problems.append(
            f"event_type must be 1 to {limit} letters, digits or underscores [json-pointer:/metadata/event_type]"
        )
    if not isinstance(metadata.get("event_payload"), dict):
        problems.append("event_payload must be an object [json-pointer:/metadata/event_payload]")
    return ("invalid_metadata_schema", problems) if problems else None
