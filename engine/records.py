"""The run record: everything the bot knows about one graph run, in one document.

A run and its asks live together in one record (one DynamoDB item, one SQLite row) on
purpose. A decision is then a single conditional write on ``asks.<key>.status`` that
also bumps ``version``; a resume that claimed the run at version N can only release it
at version N, so a decision made while it ran makes the release fail and the holder
notices the new decision without an extra read. See ``engine/store.py`` for the
operations and ``engine/lifecycle.py`` for the rules built on them.

Records are plain dataclasses with ``to_dict``/``from_dict`` so that both backends share
one JSON-compatible shape; the snapshot is opaque bytes (UTF-8 JSON from the engine,
compressed and, when large, moved out of the record by the store).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

from engine.audit import AuditEvent
from engine.policy import AskRules
from engine.progress import Progress

# How long the process that made a state change has to deliver what it owes Slack before
# a sweeper delivers it instead (checking Slack first for what was already posted).
# ``DELIVERY_GRACE_SECONDS`` overrides it (tests shorten it; a sweeper that runs rarely
# gains nothing from a shorter one).
DEFAULT_DELIVERY_GRACE_SECONDS = 60.0


def _grace_from_environment() -> float:
    """The override, or the default for a value that is not a positive number of seconds.

    This module is imported before any setting is checked (it is the engine's vocabulary),
    so it must not fail on a typo: ``bot.settings`` reports a bad value in one line and
    stops the bot before anything here is used.
    """
    try:
        value = float(os.environ.get("DELIVERY_GRACE_SECONDS") or DEFAULT_DELIVERY_GRACE_SECONDS)
    except ValueError:
        return DEFAULT_DELIVERY_GRACE_SECONDS
    return value if 0 < value < math.inf else DEFAULT_DELIVERY_GRACE_SECONDS


DELIVERY_GRACE_SECONDS = _grace_from_environment()
MAX_TRAIL = 200
MAX_BACKOFF_DOUBLINGS = 10  # a delivery that keeps failing is retried at most ~17 h apart (60 s grace)
# A waiting run's offloaded state carries a TTL; the sweeper rewrites it this long before
# it would expire, so a run may wait for a person indefinitely.
STATE_REFRESH_MARGIN_SECONDS = 7 * 86400.0


class RunStatus(StrEnum):
    RUNNING = "running"
    WAITING = "waiting"
    RESUMING = "resuming"
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"  # a node gate said no; the node did not run
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.REJECTED, RunStatus.CANCELLED)

    @property
    def leased(self) -> bool:
        """A process is working on the run and holds a lease on it."""
        return self in (RunStatus.RUNNING, RunStatus.RESUMING)


class AskStatus(StrEnum):
    PENDING = "pending"  # waiting for a human
    DECIDED = "decided"  # a human decided; the graph has not received it yet
    CONSUMED = "consumed"  # the graph received the decision
    OBSOLETE = "obsolete"  # the run moved on, failed or asked again (``Ask.closed`` says which)


class Closed(StrEnum):
    """Why an ask can no longer be answered; its card says so."""

    MOVED_ON = "moved_on"  # the run went on or ended without needing this answer
    CHANGED = "changed"  # the question was asked again with other content: a new card asks it
    FAILED = "failed"  # the run failed; nothing will act on an answer
    CANCELLED = "cancelled"  # someone cancelled the run


# What a card shows: "live" (with buttons), "decided" or "closed:<why>". An ask whose card
# shows something else than its view is owed a card update.
LIVE = "live"


class Verdict(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    REPLY = "reply"
    TRUST = "trust"  # HumanInTheLoop with enable_trust: approve and stop asking for this tool
    RETRY = "retry"  # review_after: run the reviewed tool again
    EDIT = "edit"  # BeforeToolCallEvent gates: approve with an edited tool input


# What an ask offers when its record names no verdicts (``Ask.from_dict``); stores that
# check a verdict without parsing the record must treat a missing list the same way.
DEFAULT_VERDICTS = (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY)


@dataclass(frozen=True, kw_only=True)
class MessageRef:
    """Where a Slack message lives; kept so any process can update it later."""

    channel: str
    ts: str


@dataclass(frozen=True, kw_only=True)
class Decision:
    verdict: Verdict
    user: str
    at: float
    text: str | None = None
    edited_input: dict[str, Any] | None = None
    expired: bool = False  # the bot's own rejection of an ask nobody answered in time
    # The label of the policy rule that decided the ask by itself (``AskPolicy.auto``):
    # ``user`` is empty then, as for an expiry: nobody decided.
    policy: str | None = None
    # The ``all_of`` entry (user or group id) this approval filled, chosen by the store from
    # the record when it is recorded (the first missing entry the person is shown to be in):
    # kept with the vote so the decision is explainable. Not part of the answer's identity.
    counts_for: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v is not False}

    def same_answer(self, other: Decision | None) -> bool:
        """The same person gave the same answer (a retry or a resubmission), whenever."""
        return other is not None and replace(other, at=self.at) == self

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        return cls(
            verdict=Verdict(data["verdict"]),
            user=data["user"],
            at=float(data["at"]),
            text=data.get("text"),
            edited_input=data.get("edited_input"),
            expired=bool(data.get("expired")),
            policy=data.get("policy"),
            counts_for=data.get("counts_for"),
        )


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """The tool call an ask gates (BeforeToolCallEvent asks): shown on the card, and the
    starting point and schema of an Edit."""

    name: str
    input: dict[str, Any]
    input_schema: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "input": self.input, "input_schema": self.input_schema}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(name=data["name"], input=dict(data.get("input") or {}), input_schema=data.get("input_schema"))


@dataclass(frozen=True, kw_only=True)
class RetryOf:
    """What a "may have acted" ask stands in for (``engine.takeover``).

    An approval was handed to a pass that died before saving: the tool may have run. The
    new ask offers Retry (send ``response`` again: the original answer, with the original
    ask's ``approval_id``) or Skip. ``key`` is the original ask's, so every delivery of
    that answer carries the same ``approval_id`` whatever card it comes from.
    """

    key: str
    response: Any

    def to_dict(self) -> dict[str, Any]:
        # As JSON text: both stores keep it as it is (DynamoDB maps cannot hold every value).
        return {"key": self.key, "response": json.dumps(self.response, sort_keys=True, default=str)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetryOf:
        return cls(key=str(data["key"]), response=json.loads(data["response"]))


@dataclass(frozen=True, kw_only=True)
class Ask:
    """One interrupt of one run, shown to people as one card.

    ``key`` is short, random and unique within the run: Strands interrupt ids are
    deterministic but repeat across runs and across revisits of a node in a cycle, so
    the id alone cannot name a card. ``verdicts`` are the buttons this ask accepts,
    fixed when it is raised (the engine can see the graph then; a click cannot).
    """

    key: str
    interrupt_id: str
    name: str
    reason: Any
    node_id: str | None
    status: AskStatus
    created_at: float
    decision: Decision | None = None
    card: MessageRef | None = None
    verdicts: tuple[Verdict, ...] = DEFAULT_VERDICTS
    tool: ToolCall | None = None
    digest: str = ""
    shown: str | None = None
    closed: Closed | None = None
    rules: AskRules = field(default_factory=AskRules)  # who may decide, how many, until when
    votes: dict[str, Decision] = field(default_factory=dict)  # approvals so far under a quorum, by user
    escalated: bool = False  # the escalation group was added to who may decide
    notices: tuple[str, ...] = ()  # reminders and escalations claimed by a sweeper, in order
    notified: int = 0  # how many of ``notices`` Slack accepted
    # The lease token of the pass this ask's answer was first handed to, written by the
    # claim that starts that pass (``RunStore.claim``, ``RunStore.decide`` with a claim):
    # a takeover that finds it on an ask still decided knows the answer reached a pass
    # that died, and an approval is then not sent again silently (``engine.takeover``).
    handed: str | None = None
    retry_of: RetryOf | None = None  # a "may have acted" ask: what Retry sends again
    # What will happen if it is approved (``engine.previews``): text, or a flat table. Part
    # of the digest; an approval is handed to the graph only while it still holds.
    preview: str | dict[str, str] | None = None
    # The gated tool's name when its call was too big to keep (``tool`` is None then): its
    # rules and preview are keyed by it (``engine.policy``, ``engine.previews``).
    tool_name: str | None = None
    # The trace context of the pass that raised it (``<trace id>-<span id>``, hex), when
    # that pass was traced: the ask's span, emitted once it is answered or closed, hangs
    # under it (``engine.tracing``). 49 characters, and absent when tracing is off.
    trace: str | None = None

    @property
    def gated_tool(self) -> str | None:
        """The name of the tool this ask gates, if any, whether or not its call is kept."""
        return self.tool.name if self.tool is not None else self.tool_name

    @property
    def view(self) -> str:
        """What this ask's card should show now (see ``LIVE``): a live card also shows the
        approvals gathered so far and whether it was escalated."""
        if self.status is AskStatus.PENDING:
            if self.votes or self.escalated:
                return f"{LIVE}:{len(self.votes)}{':escalated' if self.escalated else ''}"
            return LIVE
        if self.status is AskStatus.OBSOLETE:
            return f"closed:{(self.closed or Closed.MOVED_ON).value}"
        return "decided"

    @property
    def card_owed(self) -> bool:
        """The card exists but shows something else than the ask's state.

        A card is posted live, so a card with no ``shown`` recorded shows ``LIVE``:
        recording a posted card never needs to say what it shows, and a late copy that
        lost the race to be recorded can never overwrite what the recorded card shows.
        """
        return self.card is not None and (self.shown or LIVE) != self.view

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "key": self.key,
            "digest": self.digest,
            "verdicts": [v.value for v in self.verdicts],
            "interrupt_id": self.interrupt_id,
            "name": self.name,
            "reason": self.reason,
            "node_id": self.node_id,
            "status": self.status.value,
            "created_at": self.created_at,
        }
        if self.decision is not None:
            data["decision"] = self.decision.to_dict()
        if self.card is not None:
            data["card"] = asdict(self.card)
        if self.tool is not None:
            data["tool"] = self.tool.to_dict()
        if self.shown is not None:
            data["shown"] = self.shown
        if self.closed is not None:
            data["closed"] = self.closed.value
        if self.rules != AskRules():
            data["rules"] = self.rules.to_dict()
        if self.rules.quorum > 1 or self.votes or self.rules.all_of:
            # Present (if empty) under a quorum: DynamoDB adds a vote at votes.<user>, and
            # counts the approvals still missing in ``short`` (its conditions cannot add).
            data["votes"] = {user: vote.to_dict() for user, vote in self.votes.items()}
            data["short"] = self.rules.quorum - len(self.votes)
        if self.rules.all_of:
            # Likewise the ``all_of`` entries filled (entry -> user) and how many are not.
            data["filled"] = self.filled
            data["gaps"] = len([i for i in self.rules.all_of if i not in self.filled])
        if self.escalated:
            data["escalated"] = True
        if self.notices:
            data["notices"] = list(self.notices)
        if self.notified:
            data["notified"] = self.notified
        if self.handed is not None:
            data["handed"] = self.handed
        if self.retry_of is not None:
            data["retry_of"] = self.retry_of.to_dict()
        if self.preview is not None:
            data["preview"] = self.preview
        if self.tool_name is not None:
            data["tool_name"] = self.tool_name
        if self.trace is not None:
            data["trace"] = self.trace
        return data

    def next_deadline(self) -> float | None:
        """When a sweeper has something to do for this pending ask: expire it, remind, escalate."""
        times = [self.rules.expires_at]
        # A reminder skipped (``engine.deadlines``: overdue with a later one) is claimed too:
        # counting only those posted would leave a past time here, due at every sweep.
        reminded = self.notices.count("remind") + self.notices.count("skip")
        if reminded < len(self.rules.remind_at):
            times.append(self.rules.remind_at[reminded])
        if not self.escalated:
            times.append(self.rules.escalate_at)
        due = [t for t in times if t is not None]
        return min(due) if due else None

    @property
    def filled(self) -> dict[str, str]:
        """The ``all_of`` entries the votes so far filled, and by whom."""
        return {v.counts_for: u for u, v in self.votes.items() if v.counts_for is not None}

    def voters(self) -> list[str]:
        """Who approved so far, in the order they did."""
        return [u for u, _ in sorted(self.votes.items(), key=lambda kv: kv[1].at)]

    @property
    def notices_owed(self) -> bool:
        return self.notified < len(self.notices)

    @property
    def line_owed(self) -> bool:
        """A policy rule decided this ask (no card) and its line in the thread is not posted yet."""
        decision = self.decision
        auto = decision is not None and decision.policy is not None and self.retry_of is None
        return auto and self.card is None and self.status in (AskStatus.DECIDED, AskStatus.CONSUMED)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ask:
        return cls(
            key=data["key"],
            interrupt_id=data["interrupt_id"],
            name=data["name"],
            reason=data.get("reason"),
            node_id=data.get("node_id"),
            status=AskStatus(data["status"]),
            created_at=float(data["created_at"]),
            decision=Decision.from_dict(data["decision"]) if data.get("decision") else None,
            card=MessageRef(**data["card"]) if data.get("card") else None,
            verdicts=tuple(Verdict(v) for v in data.get("verdicts") or DEFAULT_VERDICTS),
            tool=ToolCall.from_dict(data["tool"]) if data.get("tool") else None,
            digest=str(data.get("digest") or ""),
            shown=data.get("shown"),
            closed=Closed(data["closed"]) if data.get("closed") else None,
            rules=AskRules.from_dict(data["rules"]) if data.get("rules") else AskRules(),
            votes={u: Decision.from_dict(v) for u, v in (data.get("votes") or {}).items()},
            escalated=bool(data.get("escalated")),
            notices=tuple(data.get("notices") or ()),
            notified=int(data.get("notified") or 0),
            handed=data.get("handed"),
            retry_of=RetryOf.from_dict(data["retry_of"]) if data.get("retry_of") else None,
            preview=data.get("preview"),
            tool_name=data.get("tool_name"),
            trace=data.get("trace"),
        )


def ask_digest(*, name: str, reason: Any, tool: ToolCall | None, preview: Any = None) -> str:
    """A fingerprint of everything an ask's card shows: its name, reason, tool and input,
    and what will happen (``engine.previews``; left out when there is none, so the digest
    of an ask without a preview is what it always was).

    A decision answers the content its card displayed. When an interrupt is raised again
    with other content (an Edit changed the tool input another gate asks about, a node
    re-ran after a takeover with a different model answer), the digests differ and the
    old card is closed instead of silently answering the new question.
    """
    shown = {"name": name, "reason": reason, "tool": [tool.name, tool.input] if tool else None}
    if preview is not None:
        shown["preview"] = preview
    text = json.dumps(shown, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, kw_only=True)
class Run:
    run_id: str
    graph: str
    task: str
    started_by: str
    status: RunStatus
    version: int
    created_at: float
    updated_at: float
    thread: MessageRef | None = None
    asks: dict[str, Ask] = field(default_factory=dict)
    snapshot: bytes | None = None
    lease_owner: str | None = None
    lease_until: float | None = None
    output: str | None = None
    error: str | None = None
    channel: str | None = None
    final: MessageRef | None = None
    trail: tuple[str, ...] = ()  # the nodes run so far, in order (the last ``MAX_TRAIL``)
    stalled: int = 0  # sweeper deliveries in a row that left something owed
    stalled_at: float | None = None  # when the last of them was tried
    audit: tuple[AuditEvent, ...] = ()  # the last ``engine.audit.MAX_EVENTS`` events
    audit_dropped: int = 0  # older events let go (they are in the log)
    cancelled_by: str | None = None  # who asked to cancel (a holder ends the run at its save)
    progress: Progress | None = None  # its nodes as saved, and its status message
    # Takeovers of the current step in a row without a landed save (``engine.takeover``):
    # set by the claim that takes a dead holder's run over, reset by a save that lands.
    takeovers: int = 0
    # The lease end of the pass whose save made this record (``engine.settle``). What that
    # save owes Slack is the pass's own to deliver until then, when it comes soon enough
    # (``sweep_at``): the sweep index's key, set by the claim, then stays put.
    held_until: float | None = None
    # Where the store keeps the state (store-owned; the engine only passes it back). Not
    # part of a run's identity: the same run read from two stores compares equal.
    state_ref: dict[str, Any] | None = field(default=None, compare=False)

    def evolve(self, **changes: Any) -> Run:
        return replace(self, **changes)

    @property
    def sweep_at(self) -> float | None:
        """When a sweeper should look at this run, or None when nothing can be stuck.

        A leased run is stuck once its lease expires; a waiting run with a decision
        nobody picked up (the process that took the click died before it claimed) is
        stuck at once; a run that still owes Slack something (a card, a card update, its
        final message) is due once the process that owes it had time to deliver; a waiting
        run whose offloaded state would expire is due before it does.
        """
        if self.status.leased:
            return self.lease_until
        due: list[float] = []
        if self.status is RunStatus.WAITING and self.decided_asks():
            due.append(self.updated_at)
        if self.owes_slack:
            since = self.stalled_at or self.updated_at
            grace_end = since + DELIVERY_GRACE_SECONDS * 2 ** min(self.stalled, MAX_BACKOFF_DOUBLINGS)
            held = self.held_until
            # A pass's own debt waits for the pass's lease end when that comes within one
            # more grace: the index key the claim set (the lease end) then does not move
            # with the save (a moved key is two index writes). Never before the grace ends,
            # so the holder is never raced; at most one grace later than without it.
            extended = not self.stalled and held is not None and grace_end <= held <= grace_end + DELIVERY_GRACE_SECONDS
            due.append(held if extended and held is not None else grace_end)
        if self.status is RunStatus.WAITING:
            due.extend(t for a in self.pending_asks() if (t := a.next_deadline()) is not None)
        state_expires = (self.state_ref or {}).get("expires_at")
        if self.status is RunStatus.WAITING and state_expires is not None:
            due.append(float(state_expires) - STATE_REFRESH_MARGIN_SECONDS)
        return min(due) if due else None

    @property
    def owes_slack(self) -> bool:
        """Whether a state change is saved that Slack does not show yet.

        Derived from the record rather than kept as a list: what a card shows (``Ask.shown``),
        whether it was posted (``Ask.card``) and whether the end was posted (``final``) are
        recorded once Slack accepted them, so what is owed is exactly the difference.
        """
        if self.thread is None:
            # A run without a thread (its announcement failed on a takeover) owes the
            # announcement, then the rest. One whose announcement failed at the start owes
            # nothing: the person who started it was told, and its record keeps no channel.
            return self.channel is not None and not self.status.leased
        if self.status.terminal and self.final is None:
            return True
        return (
            any(a.card_owed or (a.line_owed and not self.status.leased) for a in self.asks.values())
            or (self.status is RunStatus.WAITING and any(a.card is None or a.notices_owed for a in self.pending_asks()))
            or (self.progress is not None and self.progress.owed and not self.status.leased)
        )

    def pending_asks(self) -> list[Ask]:
        return [a for a in self.asks.values() if a.status is AskStatus.PENDING]

    def decided_asks(self) -> list[Ask]:
        return [a for a in self.asks.values() if a.status is AskStatus.DECIDED]

    def live_ask_for(self, interrupt_id: str, node_id: str | None) -> Ask | None:
        """The pending or decided ask that an interrupt raised again refers to."""
        for ask in self.asks.values():
            if (
                ask.interrupt_id == interrupt_id
                and ask.node_id == node_id
                and ask.status in (AskStatus.PENDING, AskStatus.DECIDED)
            ):
                return ask
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form without the snapshot (backends store it their own way)."""
        return {
            "run_id": self.run_id,
            "graph": self.graph,
            "task": self.task,
            "started_by": self.started_by,
            "status": self.status.value,
            "version": self.version,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "thread": asdict(self.thread) if self.thread else None,
            "asks": {k: a.to_dict() for k, a in self.asks.items()},
            "lease_owner": self.lease_owner,
            "lease_until": self.lease_until,
            "output": self.output,
            "error": self.error,
            "channel": self.channel,
            "final": asdict(self.final) if self.final else None,
            "trail": list(self.trail),
            "stalled": self.stalled,
            "stalled_at": self.stalled_at,
            "state_ref": self.state_ref,
            "audit": [e.to_dict() for e in self.audit] or None,
            "audit_dropped": self.audit_dropped or None,
            "cancelled_by": self.cancelled_by,
            "progress": self.progress.to_dict() if self.progress is not None else None,
            "takeovers": self.takeovers or None,
            "held_until": self.held_until,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], snapshot: bytes | None = None) -> Run:
        return cls(
            run_id=data["run_id"],
            graph=data["graph"],
            task=data["task"],
            started_by=data["started_by"],
            status=RunStatus(data["status"]),
            version=int(data["version"]),
            created_at=float(data["created_at"]),
            updated_at=float(data["updated_at"]),
            thread=MessageRef(**data["thread"]) if data.get("thread") else None,
            asks={k: Ask.from_dict(a) for k, a in (data.get("asks") or {}).items()},
            snapshot=snapshot,
            lease_owner=data.get("lease_owner"),
            lease_until=float(data["lease_until"]) if data.get("lease_until") is not None else None,
            output=data.get("output"),
            error=data.get("error"),
            channel=data.get("channel"),
            final=MessageRef(**data["final"]) if data.get("final") else None,
            trail=tuple(data.get("trail") or ()),
            stalled=int(data.get("stalled") or 0),
            stalled_at=float(data["stalled_at"]) if data.get("stalled_at") is not None else None,
            state_ref=data.get("state_ref"),
            audit=tuple(AuditEvent.from_dict(e) for e in data.get("audit") or ()),
            audit_dropped=int(data.get("audit_dropped") or 0),
            cancelled_by=data.get("cancelled_by"),
            progress=Progress.from_dict(data["progress"]) if data.get("progress") else None,
            takeovers=int(data.get("takeovers") or 0),
            held_until=float(data["held_until"]) if data.get("held_until") is not None else None,
        )
