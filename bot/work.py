"""The work a Slack request leaves for after its ack, as small records of ids.

A listener acks within Slack's 3 seconds and hands one of these to a ``Handoff``
(``bot.handoff``): on a server it runs in the same process as a task, on Lambda it
travels to a fresh invocation of the same function. Either way it carries ids and the
few words a person typed (a task), never run state: everything else is read from the
store, so the work may run anywhere, later, or twice (Lambda delivers an asynchronous
event at least once), and does the same thing.

``to_wire`` / ``from_wire`` are the only encoding; ``from_wire`` checks every field,
because even a signed envelope should not be trusted to hold the right types.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any, Final

from bot.payloads import CHANNEL_ID, USER_ID
from engine.records import Decision, MessageRef

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class StartRun:
    run_id: str
    graph: str
    task: str
    user: str
    channel: str
    response_url: str


@dataclass(frozen=True, kw_only=True)
class ListGraphs:
    response_url: str


@dataclass(frozen=True, kw_only=True)
class Decide:
    """A one-click verdict (Approve, Trust, Retry): decided, and resumed, after the ack."""

    run_id: str
    ask_key: str
    decision: Decision
    card: MessageRef | None
    response_url: str
    where: str = "card"  # "home": clicked in App Home, where the outcome is shown (no response_url)


@dataclass(frozen=True, kw_only=True)
class PickUp:
    """A decision already recorded (in a modal's ack): resume the run if nobody holds it."""

    run_id: str


@dataclass(frozen=True, kw_only=True)
class SweepRun:
    """One run the sweeper found with work left (a dead holder, decisions, Slack owed)."""

    run_id: str


@dataclass(frozen=True, kw_only=True)
class CancelRun:
    """``/graph cancel <run id>``: end the run if this person may."""

    run_id: str
    user: str
    response_url: str
    channel: str = ""  # where the command was typed (a graph without approvers: only there)


@dataclass(frozen=True, kw_only=True)
class ShowAudit:
    """``/graph audit <run id>``: show the run's audit trail to this person, if they may read it."""

    run_id: str
    user: str
    response_url: str
    channel: str = ""


@dataclass(frozen=True, kw_only=True)
class ListRuns:
    """``/graph runs``: the channel's recent runs, to this person."""

    channel: str
    user: str
    response_url: str


@dataclass(frozen=True, kw_only=True)
class ShowStats:
    """``/graph stats [graph]``: how approvals went in the channel, to this person, for the
    graphs they may oversee."""

    channel: str
    user: str
    response_url: str
    graph: str = ""  # one graph only, as typed (checked against the graphs after the ack)


@dataclass(frozen=True, kw_only=True)
class ShowStatus:
    """``/graph status <run id>``: where the run stands, to this person, if they may oversee it."""

    run_id: str
    user: str
    response_url: str
    channel: str = ""


@dataclass(frozen=True, kw_only=True)
class ShowHome:
    """``app_home_opened``: publish this person's Home tab."""

    user: str


@dataclass(frozen=True, kw_only=True)
class ListPending:
    """``/graph pending``: the asks this person may decide, to them."""

    user: str
    response_url: str


Work = (
    StartRun
    | ListGraphs
    | Decide
    | PickUp
    | SweepRun
    | CancelRun
    | ShowAudit
    | ListRuns
    | ShowStats
    | ShowStatus
    | ShowHome
    | ListPending
)
_KINDS: Final[dict[str, type[Work]]] = {
    "start": StartRun,
    "list": ListGraphs,
    "decide": Decide,
    "pick_up": PickUp,
    "sweep_run": SweepRun,
    "cancel": CancelRun,
    "audit": ShowAudit,
    "runs": ListRuns,
    "stats": ShowStats,
    "status": ShowStatus,
    "home": ShowHome,
    "pending": ListPending,
}
_KIND_OF: Final = {cls: kind for kind, cls in _KINDS.items()}


def kind_of(work: Work) -> str:
    """The name a piece of work goes by on the wire and in the log."""
    return _KIND_OF[type(work)]


MAX_GRAPH_TYPED: Final = 200  # characters of a graph name carried by ``ShowStats``

# What ``engine.ids.new_run_id`` and ``run_id_for`` make: 10 bytes in lowercase base32.
RUN_ID: Final = re.compile(r"^[a-z2-7]{16}\Z")


def run_id_for(trigger_id: str | None) -> str | None:
    """The run id a slash command starts, fixed by its ``trigger_id``: a retry of the same
    command (Slack's, or a second delivery of the handoff) finds the run already created."""
    if not trigger_id:
        return None
    digest = hashlib.sha256(f"approval-bot/start/{trigger_id}".encode()).digest()
    return base64.b32encode(digest[:10]).decode().lower()


def to_wire(work: Work) -> dict[str, Any]:
    fields: dict[str, Any] = {"kind": kind_of(work)}
    for name, value in vars(work).items():
        if isinstance(value, Decision):
            value = value.to_dict()
        elif isinstance(value, MessageRef):
            value = {"channel": value.channel, "ts": value.ts}
        fields[name] = value
    return fields


def from_wire(data: object) -> Work:
    """The work ``data`` describes; ValueError when it is not exactly what ``to_wire`` makes."""
    if not isinstance(data, dict) or data.get("kind") not in _KINDS:
        raise ValueError("not a piece of work")
    cls = _KINDS[data["kind"]]
    fields = {k: v for k, v in data.items() if k != "kind"}
    try:
        if cls is Decide:
            fields["decision"] = _decision(fields.get("decision"))
            card = fields.get("card")
            fields["card"] = None if card is None else MessageRef(channel=_str(card["channel"]), ts=_str(card["ts"]))
        work = cls(**fields)
    except (TypeError, KeyError, ValueError) as error:
        raise ValueError(f"malformed {data['kind']} work: {type(error).__name__}") from None
    for name, value in vars(work).items():
        if name not in ("decision", "card"):
            _str(value)
    if isinstance(work, CancelRun | ShowAudit | ShowStatus) and (not RUN_ID.match(work.run_id) or not work.user):
        raise ValueError(f"malformed {data['kind']} work: not a run id or no user")
    if isinstance(work, ListRuns | ShowStats) and (not CHANNEL_ID.fullmatch(work.channel) or not work.user):
        raise ValueError(f"malformed {data['kind']} work: not a channel id or no user")
    if isinstance(work, ShowStats) and len(work.graph) > MAX_GRAPH_TYPED:
        raise ValueError(f"malformed {data['kind']} work: graph name too long")
    if isinstance(work, ShowHome | ListPending) and not USER_ID.fullmatch(work.user):
        raise ValueError(f"malformed {data['kind']} work: not a user id")
    if isinstance(work, Decide) and work.where not in ("card", "home"):
        raise ValueError(f"malformed {data['kind']} work: clicked where?")
    return work


def _decision(data: object) -> Decision:
    if not isinstance(data, dict) or set(data) - {"verdict", "user", "at", "text"}:
        raise ValueError("malformed decision")
    decision = Decision.from_dict(data)
    if decision.text is not None:
        _str(decision.text)
    _str(decision.user)
    return decision


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value
