"""Recording one person's answer under the ask's policy, and what a refusal leaves behind.

The store applies the policy inside its decision write (``engine.store_rules.decided``);
this module supplies what the write needs and cannot know: which user groups the person
is in. Groups are looked up only when the ask's terms need them: the first write names
the person alone, and a refusal for want of a group the ask names looks the person up in
those groups (``Directory``, cached) and writes once more. Channel membership (for asks
that name no approvers: anyone in the run's channel) is the same kind of fact: a click on
a card is checked against the card's channel before the write (one cached lookup, so the
click still costs one write), and a refusal NOT_IN_CHANNEL for any other channel (an App
Home button has no card) looks up the run's channel and writes once more. A click by a
listed person therefore costs no second write, and a failed lookup refuses. An ask that
needs one approval from each of several groups (``all_of``) refuses an approval until the
person was looked up in all of them (UNCOUNTED): the store then counts it for the first
missing entry they are in, so the lookup decides which team an approval speaks for.
The write after a lookup hands the store the record the refusal carried (``known``): the
store shapes that write by it (a vote, the entry it fills) rather than writing blind, so
an ``all_of`` approval costs the refusal and one write, not a second refusal as well.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engine import audit
from engine.audit import AuditEvent
from engine.decision_rules import ALL_OF_LOOKED_UP
from engine.oversight import groups_of, in_channel
from engine.policy import GROUP_ID, LOOKUP_TIMEOUT_SECONDS, Directory, Refusal, deciders
from engine.ports import DecideResult
from engine.records import Decision, MessageRef, Run
from engine.store import (
    AskNotFound,
    AskNotPending,
    DecisionRefused,
    Lease,
    RunNotFound,
    RunStore,
    StoreError,
    VerdictNotOffered,
)
from engine.threads import in_thread

logger = logging.getLogger(__name__)

REFUSALS_KEPT = audit.MAX_EVENTS // 5  # refused clicks the trail holds at most


class Ballot:
    def __init__(self, *, store: RunStore, directory: Directory | None, clock: Callable[[], float]) -> None:
        self._store = store
        self._directory = directory
        self._clock = clock

    async def record(
        self, *, run_id: str, ask_key: str, decision: Decision, claim: Lease | None, card: MessageRef | None
    ) -> DecideResult:
        """Record ``decision`` if the ask is open and its policy allows it; what happened."""
        event = AuditEvent(
            at=decision.at,
            kind="expired" if decision.expired else "decided",
            by=decision.user or None,
            ask=ask_key,
            text=_said(decision),
        )
        user = decision.user
        checked: frozenset[str] = frozenset()
        member_of: frozenset[str] = frozenset()
        channel_checked: str | None = None
        known: Run | None = None  # the record the last refusal was judged on
        if card is not None and not decision.expired:
            # The card's channel is the run's (cards are posted in its thread): show the
            # clicker to be in it before the write, so a click in the channel costs one write.
            channel_checked = card.channel
            member_of |= await self._in_channel(user, card.channel)
        for _ in range(4):
            try:
                run = await in_thread(
                    self._store.decide,
                    run_id,
                    ask_key,
                    decision,
                    now=self._clock(),
                    claim=claim,
                    card=card,
                    member_of=member_of,
                    event=event,
                    known=known,
                )
                break
            except DecisionRefused as refused:
                ask = refused.run.asks[ask_key]
                found: frozenset[str] = frozenset()
                unchecked = {g for g in (*(deciders(ask) or ()), *ask.rules.all_of) if GROUP_ID.match(g)} - checked
                channel = refused.run.channel
                if refused.refusal in (Refusal.NOT_APPROVER, Refusal.UNCOUNTED) and (
                    unchecked or (ask.rules.all_of and ALL_OF_LOOKED_UP not in member_of)
                ):
                    checked |= unchecked
                    found = await groups_of(self._directory, user, unchecked)
                    if ask.rules.all_of:  # looked up in every all_of group (a failed lookup: not in it)
                        found |= {ALL_OF_LOOKED_UP}
                elif refused.refusal is Refusal.NOT_IN_CHANNEL and channel and channel != channel_checked:
                    channel_checked = channel
                    found = await self._in_channel(user, channel)
                if found - member_of:
                    member_of |= found
                    known = refused.run  # so the next write is shaped right, not blind again
                    continue
                await self._note_refusal(refused, decision)
                return DecideResult(accepted=False, run=refused.run, ask=ask, refusal=refused.refusal)
            except (AskNotPending, VerdictNotOffered) as lost:
                return DecideResult(accepted=False, run=lost.run, ask=lost.run.asks[lost.ask_key])
            except (RunNotFound, AskNotFound):
                return DecideResult(accepted=False, run=None, ask=None)
            except StoreError:
                logger.warning("run %s: a decision could not be recorded", run_id, exc_info=True)
                return DecideResult(accepted=False, run=None, ask=None, unrecorded=True)
        else:  # pragma: no cover - each pass adds a new fact, and there are at most two
            return DecideResult(accepted=False, run=None, ask=None, unrecorded=True)
        audit.log(run_id, [e for e in run.audit if e.id == event.id], run=run)
        claimed = claim is not None and run.lease_owner == claim.owner
        return DecideResult(accepted=True, run=run, ask=run.asks[ask_key], claimed=claimed)

    async def _in_channel(self, user: str, channel: str) -> frozenset[str]:
        """``{channel}`` when ``user`` is shown to be in it, else nothing (``oversight.in_channel``:
        a failed lookup is not shown, and without a directory the run's channel is taken as shown)."""
        shown = await in_channel(self._directory, user, channel, timeout=LOOKUP_TIMEOUT_SECONDS)
        return frozenset({channel}) if shown else frozenset()

    async def _note_refusal(self, refused: DecisionRefused, decision: Decision) -> None:
        """Add a refused click to the trail, once per person, ask and answer, and only while
        refusals fill less than a fifth of it: clicking again and again must not push the
        run's real history out of its record (every refusal is still logged)."""
        event = AuditEvent(
            at=self._clock(),
            kind="refused",
            by=decision.user,
            ask=refused.ask_key,
            text=f"{decision.verdict.value}: {refused.refusal.value}",
        )
        audit.log(refused.run.run_id, [event])
        earlier = [e for e in refused.run.audit if e.kind == "refused"]
        seen = any((e.by, e.ask, e.text) == (event.by, event.ask, event.text) for e in earlier)
        if seen or len(earlier) >= REFUSALS_KEPT:
            return
        try:
            await in_thread(self._store.note, refused.run.run_id, event)
        except StoreError:
            logger.warning("run %s: could not add a refused click to its audit trail", refused.run.run_id)


def _said(decision: Decision) -> str:
    """A decision as the audit trail words it: the verdict and what was written."""
    said = decision.verdict.value
    if decision.text:
        said += f": {decision.text}"
    if decision.edited_input is not None:
        said += " (edited input)"
    return said
