"""The store port: the storage contract every backend meets, and the errors it raises.

The engine owns this protocol and the rules (which status may follow which);
``persistence/`` implements it twice (SQLite, DynamoDB). Each method is one atomic,
conditional operation: a store only guarantees that a write happens exactly when the
record still is what the caller last saw. Both backends pass the same contract suite
(``tests/persistence/test_contract.py``, ``test_inbox_contract.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from engine.audit import AuditEvent
from engine.policy import Refusal
from engine.records import Ask, Decision, MessageRef, Run, RunStatus, Verdict

if TYPE_CHECKING:
    from engine.start_limits import StartBook


@dataclass(frozen=True, kw_only=True)
class Lease:
    owner: str
    until: float


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """What Slack accepted for one run, to record with ``RunStore.record_delivery``."""

    thread: MessageRef | None = None
    cards: dict[str, MessageRef] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)
    final: MessageRef | None = None
    notified: dict[str, int] = field(default_factory=dict)  # ask key -> notices Slack accepted
    progress: MessageRef | None = None  # the status message, posted or found
    progress_shown: int | None = None  # the progress ``rev`` Slack now shows
    # When a sweeper's delivery left something owed (Slack kept failing): the record counts
    # such rounds and backs off from the last one, so a channel that is gone is not hammered.
    stalled_at: float | None = None

    @property
    def empty(self) -> bool:
        return (
            self.thread is None
            and not self.cards
            and not self.shown
            and not self.notified
            and self.final is None
            and self.stalled_at is None
            and self.progress is None
        )


class StoreError(Exception):
    """Base class for every error a store raises: callers handle one family.

    Each backend maps its own errors (botocore's ``ClientError`` and ``BotoCoreError``,
    ``sqlite3.Error``) into ``StoreUnavailable`` or ``StoreBroken``, so the engine's
    retries and fallbacks cover all of them.
    """


class StoreUnavailable(StoreError):
    """Transient: throttled, timed out, unreachable, locked. The same call may work later.

    The write may or may not have happened (a lost response): every write is conditional
    and recognises its own earlier attempt, so retrying it is safe.
    """


class StoreBroken(StoreError):
    """Permanent for this call: refused as invalid, too large, not permitted, corrupt."""


class RunExists(StoreError):
    pass


class RunNotFound(StoreError):
    pass


class AskNotFound(StoreError):
    pass


class VersionConflict(StoreError):
    """The record changed since the caller read it (another process won)."""


class AskNotPending(StoreError):
    """Someone decided first. Carries the run as stored, so the caller can say who."""

    def __init__(self, run: Run, ask_key: str) -> None:
        super().__init__(f"ask {ask_key} of run {run.run_id} is {run.asks[ask_key].status}")
        self.run = run
        self.ask_key = ask_key


class VerdictNotOffered(StoreError):
    """The ask is pending but has no button for this verdict.

    Each ask fixes its verdicts when it is raised (``Ask.verdicts``: the engine could see
    the graph then); a request naming another one is forged, stale or a bug, and must
    not become a decision the graph cannot act on. Carries the run as stored, like
    AskNotPending, so the caller can redraw the card with the buttons it really has.
    """

    def __init__(self, run: Run, ask_key: str, verdict: Verdict) -> None:
        offered = ", ".join(v.value for v in run.asks[ask_key].verdicts)
        super().__init__(f"ask {ask_key} of run {run.run_id} offers {offered}, not {verdict.value}")
        self.run = run
        self.ask_key = ask_key
        self.verdict = verdict


class DecisionRefused(StoreError):
    """The policy does not let this person give this answer (``engine.policy.refusal``).

    Carries the run as stored, so the caller can name who may decide. Nothing was written.
    """

    def __init__(self, run: Run, ask_key: str, refusal: Refusal) -> None:
        super().__init__(f"ask {ask_key} of run {run.run_id}: {refusal.value}")
        self.run = run
        self.ask_key = ask_key
        self.refusal = refusal


# The most runs one ``RunStore.recent`` call returns: a bound on what a listing may read.
RECENT_LIMIT = 1000


class RunStore(Protocol):
    def create(self, run: Run) -> None:
        """Insert a new run. Raises RunExists if the id is taken."""
        ...

    def load(self, run_id: str, *, snapshot: bool = True) -> Run | None:
        """Strongly consistent read of the run, snapshot included unless ``snapshot=False``.

        With ``snapshot=False`` the run comes back with ``snapshot=None`` and the store
        neither fetches an offloaded snapshot nor decodes one: Slack's 3-second ack paths
        (opening the Edit modal, validating its submission) need an ask's tool input and
        schema, not a snapshot that may be megabytes. Such a run is for reading only;
        saving it would drop the snapshot.
        """
        ...

    def decide(
        self,
        run_id: str,
        ask_key: str,
        decision: Decision,
        *,
        now: float,
        claim: Lease | None = None,
        card: MessageRef | None = None,
        member_of: frozenset[str] = frozenset(),
        event: AuditEvent | None = None,
        known: Run | None = None,
    ) -> Run:
        """Record ``decision`` on ask ``ask_key`` iff that ask is still pending and the
        ask's policy lets its author give it (``engine.store_rules.decided`` states the
        rules; ``member_of`` is the user groups the author is in).

        Under a quorum, an approval that does not reach it is recorded as a vote
        (``Ask.votes``) and the ask stays pending; the approval that reaches it decides
        the ask. ``event`` is appended to the audit trail in the same write (as a
        ``voted`` event when the approval only counted).

        Sets the ask's status to decided, bumps ``version``, sets ``updated_at`` to
        ``now`` and returns the whole run as stored afterwards: its state is included when
        it is stored with the record (``snapshot``), else ``state_ref`` names it
        (``fetch_state``). With ``claim``, a run that is waiting and held by nobody is
        claimed in the same write (status resuming, the lease given); the returned run's
        ``lease_owner`` says whether that happened. A run someone holds is decided alone:
        its holder adopts the decision when its own save finds the version moved.
        A claim marks the decided ask as handed to it (``Ask.handed = claim.owner``).
        ``card`` is where the click came from: recorded if the ask has no card yet (a
        process died between posting the card and recording it), so it gets updated.
        Raises DecisionRefused (with the stored run) when the policy forbids it,
        AskNotPending (with the stored run) when the ask is no longer pending,
        VerdictNotOffered (with the stored run) when it is pending but
        ``decision.verdict`` is not one of its ``verdicts``, RunNotFound / AskNotFound
        when there is no such run or ask. A refused call changes nothing. Exactly one of
        any number of concurrent calls for the same ask succeeds; the same call repeated
        after it succeeded (a retry after a lost response, or the same person submitting
        the same answer again) returns the stored run again.

        The verdict is checked by the store, inside the same atomic step, rather than by
        the caller after a read: a check before the write would cost the ack path a read
        and still leave the write unguarded.

        ``known`` is the run as a refusal of this same decision carried it (the caller then
        looked the person up and asks again). It is a hint, never a judgement: a store may
        use it to choose the shape of its first write (a vote, the ``all_of`` entry it fills,
        with or without the claim) instead of writing blind, but the outcome is what the
        rules say of the stored record, whatever ``known`` says.
        """
        ...

    def claim(
        self,
        run_id: str,
        *,
        expected_version: int,
        status: RunStatus,
        owner: str,
        lease_until: float,
        now: float,
        handing: Sequence[str] = (),
        takeovers: int | None = None,
    ) -> int:
        """Take the run's lease iff its version is ``expected_version``.

        Sets status, lease owner and expiry and ``updated_at``; bumps version and returns
        the new version. Writes no snapshot (cheap). Raises VersionConflict. A retry
        whose first attempt landed (its response was lost) finds its own lease token
        stored and succeeds, whatever the version is by then.

        In the same write, the asks named in ``handing`` (decided ones the pass will send)
        get ``handed = owner``, and ``takeovers`` (when given) is stored as
        ``Run.takeovers``: the record says which answers reached a pass before it runs
        (``engine.takeover``).
        """
        ...

    def renew(self, run_id: str, *, owner: str, lease_until: float, now: float | None = None) -> bool:
        """Extend the lease iff ``owner`` still holds it and, given ``now``, it has not run
        out by then (``store_rules.lease_free``: a lease that ran out may already be claimed
        by a process that read the run before; renewing it would let both hold the run).
        Does not bump version."""
        ...

    def save(self, run: Run, *, expected_version: int, write_id: str | None = None) -> Run:
        """Replace the record iff the stored version is ``expected_version``.

        The stored version becomes ``expected_version + 1``; returns the run as stored.
        The state is written only when it changed: ``run.snapshot`` None with
        ``state_ref`` set keeps the stored state, both None drops it, and a snapshot whose
        digest matches ``state_ref`` is not written again. It may be any size: backends
        keep it apart from the record and must never leave the record pointing at a
        half-written state. Raises VersionConflict. ``write_id`` names the write: a
        caller that retries a save after an error passes the same one, so a first attempt
        that landed (its response lost) is recognised instead of reported as a conflict.
        """
        ...

    def record_delivery(self, seen: Run, delivery: Delivery) -> Run:
        """Record what Slack accepted: the thread, card refs, what cards show, the final post.

        ``seen`` is the run as the caller last read it. The write does not depend on its
        version, so it never fails because a click landed, and touches only those
        attributes, so it never clobbers a decision. A ref that is already recorded stays
        (first one wins; the returned run tells a duplicate poster that its message is
        the duplicate). Bumps ``version`` so that a holder whose save was computed before
        it merges rather than overwrites, and brings ``sweep_at`` up to date (an empty
        delivery only does that). Raises RunNotFound.
        """
        ...

    def note(self, run_id: str, event: AuditEvent) -> None:
        """Append ``event`` to the run's audit trail (a refused click: nothing else is written).

        Bumps ``version`` so a holder's save merges it rather than overwrites it. A trail
        that is full (``engine.audit.MAX_EVENTS``) is left as it is; the event is still
        logged. Raises RunNotFound.
        """
        ...

    def fetch_state(self, run: Run) -> bytes | None:
        """The state ``run.state_ref`` names (for runs returned without it)."""
        ...

    def recent(self, *, channel: str, limit: int = 20, since: float | None = None) -> list[Run]:
        """The channel's latest runs, newest first, without their state: at most ``limit``
        (itself at most ``RECENT_LIMIT``), and with ``since`` only those created at or after it.

        Found through an index (DynamoDB's ``by_channel``, SQLite's on the channel), never a
        scan: the cost of a listing does not grow with the table. ``since`` bounds the
        index's range key, so runs older than it are never read (``/graph stats`` reads a
        window of them); DynamoDB pages its keys-only query while it has fewer than
        ``limit`` keys, and reads the records 100 to a BatchGetItem.
        """
        ...

    def stuck(self, *, now: float, limit: int = 25) -> list[str]:
        """Ids of runs whose ``Run.sweep_at`` is at or before ``now``, oldest first."""
        ...

    def started_by(self, user: str, *, limit: int = 20) -> list[Run]:
        """``user``'s latest runs (``Run.started_by``), newest first, without their state.

        Through an index (DynamoDB's keys-only ``by_starter``, SQLite's on the starter),
        never a scan, like ``recent``: "my runs" costs the same in any size of table.
        """
        ...

    # -- start limits (engine.start_limits holds the rule; these are its primitives) -------

    def take_start(self, user: str, *, run_id: str, at: float, per_minute: int, open_limit: int) -> StartBook:
        """Count ``run_id`` in ``user``'s clock minute ``at // 60`` and add it to their open
        runs (with ``at``), iff that minute has fewer than ``per_minute`` starts (0: no
        condition) and the open runs are fewer than ``open_limit``; a ``run_id`` open
        already is taken as it stands (a retried start counts once).

        One conditional write to one small record per person (DynamoDB: an item that
        expires a retention period after the last start; SQLite: one transaction), so
        concurrent starts from any number of processes let exactly the limits through.
        A refusal writes nothing and returns the book as it stood.
        """
        ...

    def forget_starts(self, user: str, *, run_ids: Sequence[str]) -> None:
        """Remove ``run_ids`` from ``user``'s open runs (missing ones are no-ops): one write."""
        ...

    def run_statuses(self, run_ids: Sequence[str]) -> dict[str, RunStatus]:
        """The status of each of ``run_ids`` (at most 100) that is recorded, read strongly:
        one read of the statuses only (DynamoDB: one BatchGetItem); missing runs left out."""
        ...

    # -- the approvals inbox -----------------------------------------------------------
    # An ask's card is posted in its run's channel; an approver also needs one place that
    # lists everything waiting for them, in every channel. Reading every run to find those
    # would cost as much as the table, so each pending ask is indexed under each of its
    # principals (``engine.store_rules.principals``: its approvers, its escalation group
    # once escalated, or ``ANYONE``).

    def index_asks(self, run: Run) -> None:
        """Make ``run``'s pending asks findable by ``pending_for`` under each of their principals.

        The engine calls it after the save that created the asks and before their cards
        are posted (an ask on a card is then always in the inbox), again on every delivery
        retry and after an escalation (which adds a principal): it is idempotent, and a
        run whose copy is out of date only leaves entries that ``pending_for`` skips.
        """
        ...

    def pending_for(self, principals: Sequence[str], *, limit: int = 50) -> list[tuple[Run, Ask]]:
        """The asks indexed under any of ``principals`` that are still pending in the run as
        stored now, newest first (``Ask.created_at``), at most ``limit``, each with its run
        (without state).

        An entry whose ask is no longer pending (decided, obsolete, its run gone) is
        skipped, and removed when met: best effort, never failing the listing. A backend
        may leave such entries behind when an ask changes (DynamoDB does, so that a
        decision stays one write); the listing, not the index, is exact.
        """
        ...

    # -- App Home --------------------------------------------------------------------------

    def saw_home(self, user: str, *, at: float) -> None:
        """Remember that ``user`` opened the bot's App Home tab at ``at`` (a later time wins).

        People who have not opened it for 30 days are forgotten on this write
        (``engine.store_rules.HOME_KEPT_SECONDS``), so what ``home_viewers`` reads stays small.
        """
        ...

    def home_viewers(self, *, since: float) -> dict[str, float]:
        """Who opened App Home at or after ``since``, with when they last did.

        The bot refreshes Home only for them: publishing a view to everyone an ask
        concerns would cost a Slack call per person, most of whom never look.
        """
        ...
