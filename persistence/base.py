"""The storage contract every backend meets, and the errors it raises.

Each method is one atomic, conditional operation. The engine (``engine/``) owns the
rules (which status may follow which); a store only guarantees that a write happens
exactly when the record still is what the caller last saw. Both backends pass the same
contract suite (``tests/persistence/test_contract.py``).
"""

from __future__ import annotations

from typing import Protocol

from persistence.records import Decision, Run, RunStatus, Verdict


class StoreError(Exception):
    """Base class for store errors the engine handles."""


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

    def decide(self, run_id: str, ask_key: str, decision: Decision, *, now: float) -> Run:
        """Record ``decision`` on ask ``ask_key`` iff that ask is still pending.

        Sets the ask's status to decided, bumps ``version``, sets ``updated_at`` to
        ``now`` and returns the whole run as stored afterwards (snapshot included).
        Raises AskNotPending (with the stored run) when the ask is no longer pending,
        VerdictNotOffered (with the stored run) when it is pending but
        ``decision.verdict`` is not one of its ``verdicts``, RunNotFound / AskNotFound
        when there is no such run or ask. A refused call changes nothing. Exactly one of
        any number of concurrent calls for the same ask succeeds; the same call repeated
        after it succeeded (a retry after a lost response) returns the stored run again.

        The verdict is checked by the store, inside the same atomic step, rather than by
        the caller after a read: a check before the write would cost the ack path a read
        and still leave the write unguarded.
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
    ) -> int:
        """Take the run's lease iff its version is ``expected_version``.

        Sets status, lease owner and expiry and ``updated_at``; bumps version and returns
        the new version. Writes no snapshot (cheap). Raises VersionConflict.
        """
        ...

    def renew(self, run_id: str, *, owner: str, lease_until: float) -> bool:
        """Extend the lease iff ``owner`` still holds it. Does not bump version."""
        ...

    def save(self, run: Run, *, expected_version: int) -> Run:
        """Replace the whole record iff the stored version is ``expected_version``.

        The stored version becomes ``expected_version + 1``; returns the run as stored.
        ``run.snapshot`` may be any size: backends move what does not fit in a record
        elsewhere and must never leave the record pointing at a half-written snapshot.
        Raises VersionConflict.
        """
        ...

    def stuck(self, *, now: float, limit: int = 25) -> list[str]:
        """Ids of runs whose ``Run.sweep_at`` is at or before ``now``, oldest first."""
        ...
