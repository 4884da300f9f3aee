"""The audit trail: what happened to a run, who did it, when, kept with the run.

Events ride in the writes the bot makes anyway (the start's create, a decision's
conditional write, a pass's save, a sweeper's save), so the trail costs no request of
its own on the path of an approval; only a refused click, which writes nothing else,
costs one small append. The record keeps the last ``MAX_EVENTS`` (it is billed by its
size on every write) and counts what it let go; every event is also logged as one
``audit`` line, so a log pipeline keeps the whole history.

Events are never changed once written. Texts are cut to ``MAX_TEXT`` characters.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine import log_context, metrics

if TYPE_CHECKING:
    from engine.records import Run

logger = logging.getLogger("approval_bot.audit")

MAX_EVENTS = 100
MAX_TEXT = 300

# The kinds of events, in the words ``/graph audit`` shows.
KINDS = {
    "started": "started the run",
    "asked": "asked",
    "may_have_acted": "asked again: its approved step stopped before it was saved",
    "voted": "approved (not yet enough approvals)",
    "decided": "decided",
    "auto_decided": "decided by a policy rule",
    "edited": "approved with edits",
    "preview_changed": "void: what will happen changed",
    "expired": "expired",
    "reminded": "reminded",
    "escalated": "escalated",
    "resumed": "resumed",
    "completed": "completed",
    "failed": "failed",
    "rejected": "ended: a gate said no",
    "cancelled": "cancelled",
    "cancel_requested": "asked to cancel",
    "refused": "refused a click",
    "refused_start": "refused a start",
}


@dataclass(frozen=True, kw_only=True)
class AuditEvent:
    at: float
    kind: str
    by: str | None = None  # a Slack user id; None for the bot itself (expiry, sweeps)
    ask: str | None = None  # the ask key
    text: str | None = None  # what was said, decided, changed or why
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", secrets.token_hex(4))
        if self.text is not None and len(self.text) > MAX_TEXT:
            object.__setattr__(self, "text", self.text[: MAX_TEXT - 1] + "…")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"at": self.at, "kind": self.kind, "id": self.id}
        for name in ("by", "ask", "text"):
            if (value := getattr(self, name)) is not None:
                data[name] = value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditEvent:
        return cls(
            at=float(data["at"]),
            kind=str(data["kind"]),
            by=data.get("by"),
            ask=data.get("ask"),
            text=data.get("text"),
            id=str(data.get("id") or ""),
        )


def appended(
    trail: tuple[AuditEvent, ...], dropped: int, events: Iterable[AuditEvent]
) -> tuple[tuple[AuditEvent, ...], int]:
    """``trail`` with ``events`` added (each once, by id), cut to the last ``MAX_EVENTS``."""
    merged, seen = list(trail), {e.id for e in trail}
    for event in events:
        if event.id not in seen:
            seen.add(event.id)
            merged.append(event)
    merged.sort(key=lambda e: e.at)
    extra = max(len(merged) - MAX_EVENTS, 0)
    return tuple(merged[extra:]), dropped + extra


def log(run_id: str, events: Iterable[AuditEvent], *, run: Run | None = None) -> None:
    """One log line per event, for the history the record does not keep; with ``run``, the
    record whose landed save added them, also the metrics they count (``engine.metrics``)."""
    events = list(events)
    named = run_id if run_id != "-" else None  # "-": a start refused before it had an id
    about = log_context.fields(run_id=named, graph=run.graph if run is not None else None)
    for event in events:
        extra = {**about, **({"ask_id": event.ask} if event.ask else {})}
        logger.info("audit %s", json.dumps({"run": run_id, **event.to_dict()}, ensure_ascii=False), extra=extra)
    if run is not None:
        metrics.counted(run, events)


def edit_diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """The keys an Edit changed, as ``key: old → new`` (values as compact JSON)."""
    old, new = before or {}, after or {}
    parts = []
    for name in sorted(set(old) | set(new)):
        if old.get(name, _MISSING) != new.get(name, _MISSING):
            parts.append(f"{name}: {_short(old.get(name, _MISSING))} → {_short(new.get(name, _MISSING))}")
    return "; ".join(parts) or "no change"


_MISSING: Any = object()


def _short(value: Any) -> str:
    if value is _MISSING:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= 60 else text[:59] + "…"
