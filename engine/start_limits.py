"""A fair share of the channel: how many runs one person may start.

Every run posts an announcement and cards in a shared channel and keeps approvers busy,
so one person (or one script with their token) must not flood it. Two limits, each 0
for none, checked by ``RunEngine.start`` before anything is recorded or posted:

* ``per_minute``: runs started in one clock minute (Unix time // 60). Exact: each start
  is counted by the store's conditional counter (``RunStore.count_start``, one small
  write per start), so two processes starting runs for the same person at the same
  moment cannot both take the last place. A retried command (same run id) counts once.
  A start refused for it may start again when the next minute begins.
* ``waiting``: runs of theirs that have not finished (running, waiting for a decision,
  resuming), counted among their latest ``waiting`` runs through the store's starter
  index (``RunStore.started_by``): one read of that many records, whose cost does not
  grow with the table. A start is refused when all of them are unfinished. Unfinished
  runs are nearly always the newest, so this is the count of them, except that runs
  left waiting behind ``waiting`` later ones are no longer seen. A read, then the create:
  exact to within starts made at the same moment (each may see the other's room) and
  the index's lag (DynamoDB's global index is eventually consistent, by well under a
  second). An exact count would need a counter that every way a run ends keeps in step:
  a write at every run's end, for a limit that only needs to hold roughly.

The waiting limit is read first, so a start it refuses takes no place in the minute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.ports import StartLimited

if TYPE_CHECKING:
    from engine.store import RunStore

DEFAULT_PER_MINUTE = 10
DEFAULT_WAITING = 20
LOOKBACK = 100  # the most a waiting limit may be: the latest runs read, within one BatchGetItem
NAMED_RUNS = 3  # unfinished runs a refusal names, oldest first


@dataclass(frozen=True, kw_only=True)
class StartLimits:
    """Per person; 0 means no limit. The engine's default is none; the bot's settings
    (``MAX_STARTS_PER_MINUTE``, ``MAX_WAITING_RUNS``) give every deployment one."""

    per_minute: int = 0
    waiting: int = 0

    def __post_init__(self) -> None:
        if self.per_minute < 0 or not 0 <= self.waiting <= LOOKBACK:
            raise ValueError(f"start limits are 0 (none) or more, and at most {LOOKBACK} waiting runs")

    @property
    def any(self) -> bool:
        return bool(self.per_minute or self.waiting)


def check_start(store: RunStore, limits: StartLimits, *, user: str, run_id: str, now: float) -> None:
    """Take one of ``user``'s starts for ``run_id``, or raise ``StartLimited`` (nothing counted
    then, apart from a per-minute place the run id already held). Store calls; off the loop."""
    if limits.waiting:
        mine = store.started_by(user, limit=limits.waiting)
        # A retried start's own run is not in its way (the create then finds it: RunExists).
        unfinished = [r for r in mine if not r.status.terminal and r.run_id != run_id]
        if len(unfinished) >= limits.waiting:
            oldest = sorted(unfinished, key=lambda r: r.created_at)[:NAMED_RUNS]
            raise StartLimited(
                limit="waiting",
                allowed=limits.waiting,
                have=len(unfinished),
                runs=tuple(r.run_id for r in oldest),
            )
    if limits.per_minute:
        minute = int(now // 60)
        if not store.count_start(user, run_id=run_id, minute=minute, limit=limits.per_minute):
            raise StartLimited(
                limit="per_minute", allowed=limits.per_minute, have=limits.per_minute, retry_at=(minute + 1) * 60.0
            )
