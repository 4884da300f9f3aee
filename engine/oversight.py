"""Who may act on a run as a whole (cancel it, read its audit trail), and group lookups.

The rules are ``engine.policy.may_oversee``; this module resolves the user groups they
name through the ``Directory`` port, failing closed: a group that cannot be read counts
as one the person is not in, and the failure is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from engine.policy import GROUP_ID, Directory, Policy, deciders

logger = logging.getLogger(__name__)


class CancelOutcome(StrEnum):
    CANCELLED = "cancelled"  # ended now; its cards say so
    STOPPING = "stopping"  # a pass is running: it ends the run at its next save
    ALREADY = "already"  # someone asked before
    FINISHED = "finished"  # it had ended already
    NOT_ALLOWED = "not_allowed"
    UNKNOWN = "unknown"  # no such run
    BUSY = "busy"  # the run kept changing under the cancel; nothing was written


@dataclass(frozen=True, kw_only=True)
class Cancelled:
    outcome: CancelOutcome
    status: str | None = None  # the run's status when it had finished already
    allowed: tuple[str, ...] | None = None  # who may cancel, when refused (besides the starter)


async def groups_of(directory: Directory | None, user: str, ids: Iterable[str]) -> frozenset[str]:
    """The user groups among ``ids`` that ``user`` is in."""
    if directory is None:
        return frozenset()
    groups = sorted({i for i in ids if GROUP_ID.match(i)})

    async def member(group: str) -> bool:
        try:
            return user in await directory.members(group)
        except Exception as error:  # fail closed: not shown to be a member
            logger.warning("could not read the members of user group %s: %s", group, type(error).__name__)
            return False

    # At once, not one after another: a modal's ack waits for this within Slack's 3 s.
    found = await asyncio.gather(*(member(g) for g in groups))
    return frozenset(g for g, yes in zip(groups, found, strict=True) if yes)


def overseer_ids(asks_deciders: Iterable[tuple[str, ...] | None], policy: Policy | None) -> tuple[str, ...] | None:
    """Everyone named as a decider of the run (None: anyone may decide something)."""
    ids: list[str] = []
    sets = list(asks_deciders) or [policy.approvers if policy else None]
    for s in sets:
        if s is None:
            return None
        ids += [i for i in s if i not in ids]
    return tuple(ids)


__all__ = ["CancelOutcome", "Cancelled", "deciders", "groups_of", "overseer_ids"]
