"""The storage contract every backend meets, and the errors it raises.

Each method is one atomic, conditional operation. The engine (``engine/``) owns the
rules (which status may follow which); a store only guarantees that a write happens
exactly when the record still is what the caller last saw. Both backends pass the same
contract suite (``tests/persistence/test_contract.py``).
"""

from __future__ import annotations

from typing import Protocol

from persistence.records import Decision, Run, RunStatus


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


class RunStore(Protocol):
    def create(self, run: Run) -> None:
        """Insert a new run. Raises RunExists if the id is taken."""
        ...

    def load(self, run_id: str) -> Run | None:
        """Strongly consistent read of the run, snapshot included."""
        ...

    def decide(self, run_id: str, ask_key: str, decision: Decision, *, now: float) -> Run:
        """Record ``decision`` on ask ``ask_key`` iff that ask is still pending.

        Sets the ask's status to decided, bumps ``version``, sets ``updated_at`` to
        ``now`` and returns the whole run as stored afterwards (snapshot included).
        Raises AskNotPending (with the stored run) when the ask is no longer pending,
        RunNotFound / AskNotFound when there is no such run or ask. Exactly one of any
        number of concurrent calls for the same ask succeeds.
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
