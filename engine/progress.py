"""A run's progress: each node's state, time and tokens, as its status message shows them.

Progress has two lives. While a pass runs, a ``Tracker`` follows Strands' stream events
and hands every change to a live view (``ports.LiveProgress``), which shows it at the
pace Slack allows; that view is a window on work in flight, like a log, and nothing a
person acts on. When the pass is saved, its progress is part of the run record
(``Run.progress``) and the status message is brought to it like a card: owed until Slack
accepts it (``Progress.owed``), retried by the sweeper, so the last state of a run is
never lost to a failed update or a process that died.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.records import MessageRef

MAX_NODES = 60  # a status message lists at most this many nodes (a plan rarely has more)


class NodeState(StrEnum):
    PENDING = "pending"  # not run yet in this run
    RUNNING = "running"
    DONE = "done"
    WAITING = "waiting"  # paused for a person: its asks are in the thread
    FAILED = "failed"
    STOPPED = "stopped"  # a gate said no, or the run was cancelled, before it finished


@dataclass(frozen=True, kw_only=True)
class NodeProgress:
    node_id: str
    state: NodeState = NodeState.PENDING
    seconds: float = 0.0  # over every execution of the node, in every pass
    tokens: int = 0  # as the model reported them (0: none reported)
    runs: int = 0  # executions started
    started_at: float | None = None  # of the execution under way, while RUNNING

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.node_id, "state": self.state.value}
        if self.seconds:
            data["s"] = round(self.seconds, 3)
        if self.tokens:
            data["t"] = self.tokens
        if self.runs:
            data["n"] = self.runs
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeProgress:
        return cls(
            node_id=str(data["id"]),
            state=NodeState(data.get("state") or NodeState.PENDING),
            seconds=float(data.get("s") or 0.0),
            tokens=int(data.get("t") or 0),
            runs=int(data.get("n") or 0),
        )


@dataclass(frozen=True, kw_only=True)
class Progress:
    """The status message's content and where it is.

    ``rev`` counts the saves that changed ``nodes``; ``shown`` is the ``rev`` of the edit
    Slack accepted last. An edit of an older state that lands after a newer one leaves
    ``shown`` behind ``rev``, so the newer state stays owed and is delivered again.
    """

    nodes: tuple[NodeProgress, ...] = ()
    rev: int = 0
    shown: int = 0
    message: MessageRef | None = None

    @property
    def owed(self) -> bool:
        return bool(self.nodes) and (self.message is None or self.shown < self.rev)

    @property
    def tokens(self) -> int:
        return sum(n.tokens for n in self.nodes)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"nodes": [n.to_dict() for n in self.nodes], "rev": self.rev, "shown": self.shown}
        if self.message is not None:
            data["message"] = {"channel": self.message.channel, "ts": self.message.ts}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Progress:
        from engine.records import MessageRef  # records holds a Progress: imported late

        message = data.get("message")
        return cls(
            nodes=tuple(NodeProgress.from_dict(n) for n in data.get("nodes") or ()),
            rev=int(data.get("rev") or 0),
            shown=int(data.get("shown") or 0),
            message=MessageRef(channel=str(message["channel"]), ts=str(message["ts"])) if message else None,
        )


class Tracker:
    """Follows one pass's stream events and keeps the nodes' progress.

    Starts from the progress saved so far (a resumed run keeps its earlier nodes' times),
    with every node of the graph listed, so the message shows the plan before it runs.
    """

    def __init__(self, *, saved: Progress | None, node_ids: list[str], clock: Any) -> None:
        known = {n.node_id: n for n in (saved.nodes if saved else ())}
        order = list(dict.fromkeys([*(n.node_id for n in (saved.nodes if saved else ())), *node_ids]))
        self._nodes: dict[str, NodeProgress] = {
            node_id: known.get(node_id, NodeProgress(node_id=node_id)) for node_id in order[:MAX_NODES]
        }
        self._clock = clock
        self.outputs: list[tuple[str, str]] = []  # (node id, text) of nodes finished in this pass

    @property
    def nodes(self) -> tuple[NodeProgress, ...]:
        return tuple(self._nodes.values())

    def started(self, node_id: str) -> bool:
        node = self._nodes.get(node_id)
        if node is None:
            return False
        self._nodes[node_id] = replace(node, state=NodeState.RUNNING, runs=node.runs + 1, started_at=self._clock())
        return True

    def stopped(self, node_id: str, *, status: str, seconds: float | None, tokens: int) -> bool:
        """A node's execution ended: ``status`` is Strands' (completed, failed, interrupted, ...)."""
        node = self._nodes.get(node_id)
        if node is None:
            return False
        if seconds is None:
            seconds = self._clock() - node.started_at if node.started_at is not None else 0.0
        state = {
            "completed": NodeState.DONE,
            "failed": NodeState.FAILED,
            "interrupted": NodeState.WAITING,
            "cancelled": NodeState.STOPPED,
        }.get(status, NodeState.DONE)
        self._nodes[node_id] = replace(
            node, state=state, seconds=node.seconds + max(seconds, 0.0), tokens=node.tokens + tokens, started_at=None
        )
        return True

    def set_state(self, node_id: str, state: NodeState) -> bool:
        """A node paused (interrupted) or was stopped without a stop event: its time so far counts."""
        node = self._nodes.get(node_id)
        if node is None or node.state is state:
            return False
        ran = self._clock() - node.started_at if node.started_at is not None else 0.0
        self._nodes[node_id] = replace(node, state=state, seconds=node.seconds + max(ran, 0.0), started_at=None)
        return True

    def ended(self, *, failed: bool) -> None:
        """The pass is over: a node still marked running stopped with it."""
        for node_id, node in self._nodes.items():
            if node.state is NodeState.RUNNING:
                seconds = self._clock() - node.started_at if node.started_at is not None else 0.0
                state = NodeState.FAILED if failed else NodeState.STOPPED
                self._nodes[node_id] = replace(node, state=state, seconds=node.seconds + seconds, started_at=None)


def saved_progress(
    before: Progress | None,
    nodes: tuple[NodeProgress, ...],
    message: MessageRef | None,
    *,
    waiting: set[str],
    status: str,
) -> Progress:
    """The progress a save records: the pass's nodes in the states the saved run gives
    them (``settled_states``), and a new ``rev`` when that changes what the message shows."""
    base = before or Progress()
    nodes = settled_states(replace(base, nodes=nodes), waiting=waiting, status=status).nodes
    changed = nodes != base.nodes
    return replace(base, nodes=nodes, rev=base.rev + 1 if changed else base.rev, message=base.message or message)


def ended_progress(progress: Progress | None, *, status: str) -> Progress | None:
    """``progress`` of a run ended outside a pass (cancelled while it waited, failed by a sweeper)."""
    if progress is None:
        return None
    return saved_progress(progress, progress.nodes, None, waiting=set(), status=status)


def settled_states(progress: Progress, *, waiting: set[str], status: str) -> Progress:
    """Node states as the saved run has them: a node with open asks waits; when the run
    ended, nothing runs or waits any more (a cancelled or rejected run stopped it)."""
    ended = status in ("completed", "failed", "rejected", "cancelled")
    nodes = []
    for node in progress.nodes:
        state = node.state
        if not ended and node.node_id in waiting:
            state = NodeState.WAITING
        elif ended and state in (NodeState.RUNNING, NodeState.WAITING):
            state = NodeState.FAILED if status == "failed" and state is NodeState.RUNNING else NodeState.STOPPED
        nodes.append(replace(node, state=state, started_at=None))
    return replace(progress, nodes=tuple(nodes))
