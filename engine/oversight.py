"""Acting on a run as a whole: cancelling it, and who may (also who may read its trail).

Whoever started a run, and whoever may decide one of its asks, may cancel it. A run
nobody holds ends at once (its cards say cancelled; nothing resumes it). A run a process
holds is marked: the holder's brake (``engine.execution.Brake``) finds the mark before
the pass's next node and stops it there, and the run ends as cancelled; a pass whose
last node was already running ends at its save, which fails its version check, finds
the mark and ends the run as cancelled unless the pass itself ended it (``engine.saving``).
Whoever cancelled is told the truth: what had run when they asked (:func:`what_ran`).

User groups are resolved through the ``Directory`` port, failing closed: a group that
cannot be read counts as one the person is not in, and the failure is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from engine import audit, tracing
from engine.audit import AuditEvent, appended
from engine.crash import crash_point
from engine.delivery import Courier
from engine.invariants import enforced
from engine.policy import GROUP_ID, LOOKUP_TIMEOUT_SECONDS, AskPolicy, Directory, Policy, deciders
from engine.ports import FINAL
from engine.records import AskStatus, Run
from engine.saving import cancelled_record
from engine.store import RunStore, VersionConflict
from engine.threads import in_thread

CANCEL_ATTEMPTS = 25  # writes that lose to another change before the canceller is told to retry

logger = logging.getLogger(__name__)


class CancelOutcome(StrEnum):
    CANCELLED = "cancelled"  # ended now; its cards say so
    STOPPING = "stopping"  # a pass is running: it stops before its next node
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
    ran: str | None = None  # what the run had done (nodes, approvals used), from its record


def what_ran(run: Run) -> str:
    """What ``run`` did before it was stopped (or so far), in words, from its record.

    The nodes that finished (its trail), the answers the graph received, those a pass
    running now received (what they approved may be running), and, when the brake
    stopped a pass, the node it stopped before (the audit trail's ``cancelled`` event).
    """
    nodes = ", ".join(dict.fromkeys(run.trail))
    said = [f"nodes finished: {nodes}" if nodes else "no node finished"]
    used = [a.name for a in run.asks.values() if a.status is AskStatus.CONSUMED and a.decision is not None]
    if used:
        said.append(f"answers the graph received: {', '.join(used)}")
    sending = [a.name for a in run.decided_asks()] if run.status.leased else []
    if sending:
        said.append(f"the pass running now received {', '.join(sending)} (what they approved may be running)")
    stop = next((e for e in reversed(run.audit) if e.kind == "cancelled" and e.text), None)
    if stop is not None and stop.text is not None and stop.text.startswith("stopped before"):
        said.append(stop.text.split(";", 1)[0])
    return "; ".join(said)


async def groups_of(directory: Directory | None, user: str, ids: Iterable[str]) -> frozenset[str]:
    """The user groups among ``ids`` that ``user`` is in."""
    if directory is None:
        return frozenset()
    groups = sorted({i for i in ids if GROUP_ID.match(i)})

    async def member(group: str) -> bool:
        try:
            return user in await asyncio.wait_for(directory.members(group), LOOKUP_TIMEOUT_SECONDS)
        except Exception as error:  # fail closed: not shown to be a member
            logger.warning("could not read the members of user group %s: %s", group, type(error).__name__)
            return False

    # At once, not one after another: a modal's ack waits for this within Slack's 3 s.
    found = await asyncio.gather(*(member(g) for g in groups))
    return frozenset(g for g, yes in zip(groups, found, strict=True) if yes)


async def in_channel(
    directory: Directory | None, user: str, channel: str, *, timeout: float = LOOKUP_TIMEOUT_SECONDS
) -> bool:
    """Whether ``user`` is shown to be in ``channel`` (a failed lookup: not, fail closed).
    Without a directory (the engine used outside Slack, as in its own tests) there is
    nobody to ask, and the channel is taken as shown."""
    if directory is None:
        return True
    try:
        return bool(await asyncio.wait_for(directory.in_channel(user, channel), timeout))
    except Exception as error:  # fail closed: not shown to be in the channel
        logger.warning("could not tell whether a user is in channel %s: %s", channel, type(error).__name__)
        return False


def graph_deciders(policy: Policy) -> tuple[tuple[str, ...], bool]:
    """Who a graph's policy lets decide its asks: the users and groups it names (its
    approvers and escalation group, and each ``AskPolicy`` rule's approvers, ``all_of``
    entries and escalation group), and whether its own terms name no approvers, which
    leaves the asks no rule covers to anyone in the run's channel."""
    ids = [*(policy.approvers or ()), *policy.escalate_to]
    for rules in policy.asks.values():
        for rule in (rules,) if isinstance(rules, AskPolicy) else rules:
            ids += [*(rule.approvers or ()), *(rule.all_of or ()), *(rule.escalate_to or ())]
    return tuple(dict.fromkeys(ids)), policy.approvers is None


async def may_oversee_graph(directory: Directory | None, policy: Policy, user: str, *, channel: str) -> bool:
    """Whether ``user``, acting from ``channel``, may oversee the graph as a whole (its
    statistics there): whoever its policy lets decide its asks (``graph_deciders``), named
    or through a user group, and, when its own terms name no approvers, the members of
    ``channel``. Each lookup that fails counts as not shown (fail closed)."""
    named, open_to_channel = graph_deciders(policy)
    if user in named:
        return True
    if open_to_channel and await in_channel(directory, user, channel):
        return True
    return bool(await groups_of(directory, user, named))


def overseer_ids(asks_deciders: Iterable[tuple[str, ...] | None], policy: Policy | None) -> tuple[str, ...] | None:
    """Everyone named as a decider of the run (None: anyone may decide something)."""
    ids: list[str] = []
    sets = list(asks_deciders) or [policy.approvers if policy else None]
    for s in sets:
        if s is None:
            return None
        ids += [i for i in s if i not in ids]
    return tuple(ids)


class Oversight:
    def __init__(
        self,
        *,
        store: RunStore,
        courier: Courier,
        directory: Directory | None,
        clock: Callable[[], float],
        policy: Callable[[str], Policy],
    ) -> None:
        self._store = store
        self._courier = courier
        self._directory = directory
        self._clock = clock
        self._policy = policy

    async def cancel(self, *, run_id: str, user: str, channel: str | None = None) -> Cancelled:
        for _ in range(CANCEL_ATTEMPTS):
            run = await in_thread(self._store.load, run_id, snapshot=False)
            if run is None:
                return Cancelled(outcome=CancelOutcome.UNKNOWN)
            if run.status.terminal:
                return Cancelled(outcome=CancelOutcome.FINISHED, status=run.status.value, ran=what_ran(run))
            allowed, who = await self.may_oversee(run, user, channel=channel)
            if not allowed:
                return Cancelled(outcome=CancelOutcome.NOT_ALLOWED, allowed=who)
            if run.cancelled_by:
                return Cancelled(outcome=CancelOutcome.ALREADY, ran=what_ran(run))
            now = self._clock()
            held = run.status.leased and (run.lease_until or 0.0) >= now
            marked = run.evolve(cancelled_by=user, updated_at=now)
            if held:
                trail, dropped = appended(
                    run.audit, run.audit_dropped, [AuditEvent(at=now, kind="cancel_requested", by=user)]
                )
                marked = marked.evolve(audit=trail, audit_dropped=dropped)
            target = enforced(marked if held else cancelled_record(marked, now=now), now=now, where="a cancel")
            try:
                saved = await in_thread(self._store.save, target, expected_version=run.version)
            except VersionConflict:
                continue
            audit.log(run_id, [e for e in saved.audit if e not in run.audit], run=saved)
            tracing.asks_finished(run, saved)
            crash_point("cancel_saved")
            if held:
                return Cancelled(outcome=CancelOutcome.STOPPING, ran=what_ran(saved))
            await self._courier.deliver(saved, unposted={FINAL})
            return Cancelled(outcome=CancelOutcome.CANCELLED, ran=what_ran(saved))
        return Cancelled(outcome=CancelOutcome.BUSY)  # nothing was written: try again

    async def may_oversee(self, run: Run, user: str, *, channel: str | None) -> tuple[bool, tuple[str, ...]]:
        """Whether ``user``, acting from ``channel``, may; and when not, who may besides the
        requester. A graph without approvers lets anyone *in the run's channel* decide, so
        it lets them oversee the run only from that channel: a run id alone (pasted into a
        DM or another channel) shows nothing to someone who cannot see the run."""
        ids = overseer_ids([deciders(a) for a in run.asks.values()], self._policy(run.graph))
        if user == run.started_by or (ids is not None and user in ids):
            return True, ()
        if ids is None:
            return bool(channel) and channel == run.channel, ()
        return bool(await groups_of(self._directory, user, ids)), ids
