"""What the engine needs from the outside world, as protocols.

The engine never imports Slack or boto3: it talks to storage through
``engine.store.RunStore``, to people through a ``Publisher`` and to graph code
through a ``GraphSource``. The bot supplies Slack-backed implementations, the tests
supply recording fakes, and the offline demo supplies the real Slack publisher
pointed at the local stand-in for Slack.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Literal, Protocol

from engine.policy import Policy, Refusal
from engine.progress import NodeProgress
from engine.records import Ask, AskStatus, Closed, MessageRef, Run, RunStatus

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph

FINAL = "final"  # what ``Publisher.find_posted`` looks for: an ask key, or the run's end
PROGRESS = "progress"  # ... or the run's status message


class StartRefused(Exception):
    """The graph's ``starters`` do not include this person; nothing was created."""

    def __init__(self, *, graph: str, allowed: tuple[str, ...]) -> None:
        super().__init__(f"not allowed to start {graph!r}")
        self.graph = graph
        self.allowed = allowed


class StartLimited(Exception):
    """This person has started their share of runs (``engine.start_limits``); nothing was created.

    ``limit`` says which share: ``per_minute`` (runs started in this clock minute; they
    may start again at ``retry_at``) or ``waiting`` (runs of theirs not finished yet;
    ``runs`` names the oldest of them, to finish or cancel first). ``have`` is how many
    they have, ``allowed`` the limit.
    """

    def __init__(
        self,
        *,
        limit: Literal["per_minute", "waiting"],
        allowed: int,
        have: int,
        retry_at: float | None = None,
        runs: tuple[str, ...] = (),
    ) -> None:
        super().__init__(f"start limit reached: {have} of {allowed} ({limit})")
        self.limit = limit
        self.allowed = allowed
        self.have = have
        self.retry_at = retry_at
        self.runs = runs


class UnknownGraph(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown graph {name!r}")
        self.name = name


class Outcome(StrEnum):
    """Every way a click can end, as the engine judges it; the Slack side only words it."""

    DECIDED = "decided"  # recorded, and it decided the ask
    COUNTED = "counted"  # recorded as one approval of several; the ask still waits
    REFUSED = "refused"  # the policy refused this person's answer (``DecideResult.refusal``)
    TAKEN = "taken"  # someone decided first (``DecideResult.decided_by``)
    EXPIRED = "expired"  # the ask expired before anyone decided
    CANCELLED = "cancelled"  # the run was cancelled (``DecideResult.decided_by``: by whom)
    CHANGED = "changed"  # the question changed after the card was posted
    MOVED_ON = "moved_on"  # the run moved on before anyone answered
    NOT_OFFERED = "not_offered"  # the ask waits, but does not offer this answer
    CLOSED = "closed"  # the ask cannot be answered now (and no one is named for it)
    UNKNOWN = "unknown"  # no such run or ask (gone, or the card is out of date)
    UNRECORDED = "unrecorded"  # the store failed: nothing recorded, the card stays live


@dataclass(frozen=True, kw_only=True)
class DecideResult:
    """What a click achieved, as the store recorded it.

    ``accepted`` is False when someone decided first (``ask.decision`` says who), when the
    run or ask does not exist (``ask`` None), or when nothing could be recorded
    (``unrecorded``: the store failed; the card stays live and the person may try again).
    ``claimed``: the same write gave this process the run to resume.
    """

    accepted: bool
    run: Run | None
    ask: Ask | None
    claimed: bool = False
    unrecorded: bool = False
    refusal: Refusal | None = None  # the policy refused this person's answer; nothing was recorded

    @property
    def counted(self) -> bool:
        """Accepted as one approval of several: the ask still waits for more."""
        return self.accepted and self.ask is not None and self.ask.decision is None

    @property
    def outcome(self) -> Outcome:
        """What this click achieved, classified once, here (first matching wins)."""
        ask, run = self.ask, self.run
        if self.accepted:
            return Outcome.COUNTED if self.counted else Outcome.DECIDED
        if self.unrecorded:
            return Outcome.UNRECORDED
        if ask is None:
            return Outcome.UNKNOWN
        if self.refusal is not None:
            return Outcome.REFUSED
        if ask.closed is Closed.CHANGED:
            return Outcome.CHANGED
        cancelled = run is not None and run.status is RunStatus.CANCELLED
        if ask.closed is Closed.CANCELLED or (ask.status is AskStatus.OBSOLETE and cancelled):
            return Outcome.CANCELLED
        if ask.decision is not None:
            return Outcome.EXPIRED if ask.decision.expired else Outcome.TAKEN
        if ask.status is AskStatus.PENDING:
            return Outcome.NOT_OFFERED
        return Outcome.MOVED_ON if ask.status is AskStatus.OBSOLETE else Outcome.CLOSED

    @property
    def decided_by(self) -> str | None:
        """Who decided first (``TAKEN``) or cancelled the run (``CANCELLED``), when known."""
        outcome = self.outcome
        if outcome is Outcome.TAKEN and self.ask is not None and self.ask.decision is not None:
            return self.ask.decision.user
        if outcome is Outcome.CANCELLED and self.run is not None:
            return self.run.cancelled_by
        return None


class PublishError(Exception):
    """The run's messages could not be posted (e.g. the bot is not in the channel)."""


class PublishUnconfirmed(Exception):
    """Slack gave no verdict (a timeout, a lost connection, a 5xx or a rate limit after the
    retries): the message may have been posted all the same, so it is looked for, not
    reported as refused."""


class Publisher(Protocol):
    """Every call is made only after the state it shows is saved.

    A call that raises delivered nothing as far as the engine knows; the record keeps it
    owed and a later delivery (the sweeper's) first asks ``find_posted`` whether it landed
    after all, so a message is never posted twice because a response was lost.
    """

    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        """Announce the run; the returned message is the thread all its messages go to."""
        ...

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        """Post the ask's card in the run's thread."""
        ...

    async def update_card(self, *, run: Run, ask: Ask) -> None:
        """Make the ask's card show ``ask.view``: live, decided, or closed and why."""
        ...

    async def post_final(self, *, run: Run) -> MessageRef:
        """Post the final output, the failure, the rejection or the cancellation."""
        ...

    async def post_notice(self, *, run: Run, ask: Ask, index: int) -> MessageRef:
        """Post ``ask.notices[index]`` (a reminder or an escalation) in the run's thread,
        mentioning who may decide."""
        ...

    async def find_posted(self, *, run: Run, what: str) -> MessageRef | None:
        """The message already posted for ``what`` (an ask key, ``FINAL``, or the run's
        announcement when the run has no thread yet), or None."""
        ...

    async def retract(self, *, ref: MessageRef) -> None:
        """Delete a message that turned out to be a duplicate."""
        ...


class LiveProgress(Protocol):
    """The status message while a pass runs: shown as it happens, at the pace Slack allows.

    Best effort by design: a failure here is logged and never stops the pass, because
    the saved progress is delivered afterwards like a card (``Publisher.update_progress``).
    """

    def show(self, nodes: tuple[NodeProgress, ...]) -> None:
        """The nodes changed; show them soon (coalesced, throttled). Never blocks, never raises."""
        ...

    def output(self, node_id: str, text: str) -> None:
        """A node finished with ``text``: post it in the thread. Never blocks, never raises."""
        ...

    async def close(self) -> MessageRef | None:
        """The pass is over: send what is pending, end a stream; the status message, if any."""
        ...


class ProgressPublisher(Protocol):
    """What a publisher adds for live progress (``RunEngine(progress=True)``) and for views
    that list runs (the bot's App Home)."""

    def live_progress(self, *, run: Run) -> LiveProgress:
        """A live view of the pass about to run."""
        ...

    async def update_progress(self, *, run: Run) -> MessageRef:
        """Make the status message show ``run.progress`` (posting it if it has none yet)."""
        ...

    async def run_changed(self, *, run: Run) -> None:
        """``run`` as just saved and delivered: refresh whatever else shows it. Never raises."""
        ...


class GraphSource(Protocol):
    def build(self, name: str) -> Graph:
        """Build a fresh graph from its definition (the same nodes, tools and hooks each time)."""
        ...

    def exists(self, name: str) -> bool: ...

    def policy(self, name: str) -> Policy:
        """The graph's approval policy (the default policy for a graph that declares none)."""
        ...
