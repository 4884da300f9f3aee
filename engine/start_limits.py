"""A fair share of the channel: how many runs one person may start.

Every run posts an announcement and cards in a shared channel and keeps approvers busy,
so one person (or one script with their token) must not flood it. Two limits, each 0
for none, checked by ``RunEngine.start`` before anything is recorded or posted:

* ``per_minute``: runs started in one clock minute (Unix time // 60). A start refused
  for it may start again when the next minute begins.
* ``waiting``: runs of theirs that have not finished (running, waiting for a decision,
  resuming), whatever their age.

Both are exact across processes, and cost the approval cycle one small write: each
person has one book in the store (``RunStore.take_start``), holding the starts of recent
minutes and the person's open runs (run id -> when it started). A start is one
conditional write to it: this run joins the open runs and is counted in its minute, if
the minute has room and the open runs are fewer than ``waiting``. The store applies the
condition and the write as one step, so processes starting runs for the same person at
the same moment let exactly the limits through. A start delivered twice (a retry after a
lost answer, Lambda's at-least-once) finds its run open already: taken, counted once.

Runs leave the open runs lazily, never with a write when a run ends: only when a start
finds them full are their statuses read (``RunStore.run_statuses``, one read), the
finished or gone ones forgotten (``RunStore.forget_starts``, one write) and the start
tried once more. So a person is refused only while they really have ``waiting``
unfinished runs. A run recorded nowhere is gone only once ``GONE_AFTER`` has passed
since its start: until then it may be a start whose create is still on its way.

With no waiting limit the open runs are still kept (they make a retried start count
once), up to ``OPEN_CAP``; a full book then forgets its older half without a read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.ports import StartLimited

if TYPE_CHECKING:
    from engine.store import RunStore

DEFAULT_PER_MINUTE = 10
DEFAULT_WAITING = 20
LOOKBACK = 100  # the most a waiting limit may be: the open runs' statuses are one read of at most 100
OPEN_CAP = LOOKBACK  # open runs kept when there is no waiting limit (retried starts recognised)
NAMED_RUNS = 3  # unfinished runs a refusal names, oldest first
GONE_AFTER = 120.0  # seconds after its start that an open run recorded nowhere is taken as gone


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


@dataclass(frozen=True, kw_only=True)
class StartBook:
    """What ``RunStore.take_start`` found in a person's book.

    ``taken``: the start is counted and its run open (now, or already by an earlier
    attempt of the same start). When not, the book as it stood: ``this_minute``, the
    starts counted in the start's minute, and ``open``, the open runs (run id -> start time).
    """

    taken: bool
    this_minute: int = 0
    open: Mapping[str, float] = field(default_factory=dict)


def check_start(store: RunStore, limits: StartLimits, *, user: str, run_id: str, now: float) -> None:
    """Take one of ``user``'s starts for ``run_id``, or raise ``StartLimited`` (nothing
    counted then). One store write when there is room; store calls, off the loop."""
    if not limits.any:
        return
    room = limits.waiting or OPEN_CAP
    book = _take(store, limits, user=user, run_id=run_id, now=now, room=room)
    if book is None:
        return
    if not limits.waiting:
        # Only the cap: the older half of the open runs are kept only to recognise retries.
        for _ in range(2):
            store.forget_starts(user, run_ids=_oldest(book.open)[: max(1, len(book.open) // 2)])
            if (book := _take(store, limits, user=user, run_id=run_id, now=now, room=room)) is None:
                return
        raise StartLimited(limit="waiting", allowed=room, have=len(book.open), runs=_oldest(book.open)[:NAMED_RUNS])
    statuses = store.run_statuses(list(book.open))
    done = {
        r
        for r, at in book.open.items()
        if ((s := statuses.get(r)) is not None and s.terminal) or (s is None and at <= now - GONE_AFTER)
    }
    if done:
        store.forget_starts(user, run_ids=sorted(done))
        if (book := _take(store, limits, user=user, run_id=run_id, now=now, room=room)) is None:
            return
    # Runs opened since the read are unfinished as far as anyone knows.
    unfinished = {r: at for r, at in book.open.items() if r not in done}
    raise StartLimited(
        limit="waiting", allowed=limits.waiting, have=len(unfinished), runs=_oldest(unfinished)[:NAMED_RUNS]
    )


def _take(store: RunStore, limits: StartLimits, *, user: str, run_id: str, now: float, room: int) -> StartBook | None:
    """None when the start is taken; the book when the open runs are full. Raises the
    per-minute refusal itself: no clean-up makes room in this minute."""
    book = store.take_start(user, run_id=run_id, at=now, per_minute=limits.per_minute, open_limit=room)
    if book.taken:
        return None
    if limits.per_minute and book.this_minute >= limits.per_minute:
        raise StartLimited(
            limit="per_minute",
            allowed=limits.per_minute,
            have=book.this_minute,
            retry_at=(int(now // 60) + 1) * 60.0,
        )
    return book


def _oldest(runs: Mapping[str, float]) -> tuple[str, ...]:
    return tuple(sorted(runs, key=lambda r: (runs[r], r)))
