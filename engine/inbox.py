"""What waits for one person: the asks they may decide now, found through the store's index.

An ask is indexed under who may decide it (its approvers' user and group ids, or
``ANYONE`` when anyone in the run's channel may), so a person's inbox is a read of the
entries for themselves, their groups and ``ANYONE``: its cost follows what waits for
them, not the size of the table. What the index returns is then judged by the very rules a
click is (``engine.decision_rules.judge``), with the groups and channels the person is in as
facts: an ask shows only when this person's Approve would be allowed, so the inbox never
offers a button that would be refused (asks open to anyone show only in the run's channel).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from engine.decision_rules import ALL_OF_LOOKED_UP, counted, judge, record_of
from engine.policy import Directory
from engine.records import Ask, Decision, Run, Verdict
from engine.store import RunStore
from engine.store_rules import ANYONE
from engine.threads import in_thread

logger = logging.getLogger(__name__)

MAX_WAITING = 25  # asks one listing shows (App Home, /graph pending)


class Memberships(Protocol):
    """Which user groups and channels a person is in (Slack's ``usergroups.list`` and
    ``users.conversations``), briefly cached."""

    async def groups_of(self, user: str) -> frozenset[str]: ...

    async def channels_of(self, user: str) -> frozenset[str]: ...


class Inbox:
    def __init__(self, *, store: RunStore, directory: Directory | None, clock: Callable[[], float]) -> None:
        self._store = store
        self._directory = directory
        self._clock = clock

    async def waiting_for(self, user: str, *, limit: int = MAX_WAITING) -> list[tuple[Run, Ask]]:
        """The pending asks ``user`` may approve now, newest first."""
        groups = await self._lookup("groups_of", user)
        principals = [user, *sorted(groups), ANYONE]
        found = await in_thread(self._store.pending_for, principals, limit=limit * 2)
        now = self._clock()
        channels: frozenset[str] | None = None
        mine: list[tuple[Run, Ask]] = []
        for run, ask in found:
            if ask.rules.approvers is None and channels is None:
                channels = await self._lookup("channels_of", user)
            # Every group of the person was looked up, the ask's all_of groups among them.
            facts = groups | (channels or frozenset()) | {ALL_OF_LOOKED_UP}
            # Judged as the ask's own yes would be (Approve, or a "may have acted" card's
            # Retry): listed only when that click would be recorded, every rule passed.
            record = record_of(run, ask.key)
            yes = counted(record, ask.key, Decision(verdict=_yes_verdict(ask), user=user, at=now), member_of=facts)
            if judge(record, ask.key, yes, member_of=facts, now=now) is None:
                mine.append((run, ask))
        return mine[:limit]

    async def _lookup(self, what: str, user: str) -> frozenset[str]:
        """Groups or channels of ``user``; none when the directory cannot say (fewer asks
        show, never more)."""
        method = getattr(self._directory, what, None)
        if method is None:
            return frozenset()
        try:
            found: frozenset[str] = await method(user)
        except Exception as error:
            logger.warning("inbox: could not look up the %s (%s)", what.replace("_of", ""), type(error).__name__)
            return frozenset()
        return found


def _yes_verdict(ask: Ask) -> Verdict:
    """The verdict that says yes on ``ask``'s card: Approve, or what the card offers instead
    (a question's Answer, which is a Reply)."""
    offered = [v for v in ask.verdicts if v not in (Verdict.REJECT, Verdict.REPLY)]
    if not offered and Verdict.REPLY in ask.verdicts:
        return Verdict.REPLY
    return Verdict.APPROVE if Verdict.APPROVE in offered or not offered else offered[0]
