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

Each write hands the store the last record of the ask this process saw (``known``): the
one a refusal returned, an earlier click's, or the one whose card it posted (the engine
tells it: ``remember``). DynamoDB shapes its write by it (a vote, the ``all_of`` entry it
fills) instead of writing blind and being refused, and the lookups that record calls for
are made before the write. So an ``all_of`` approval or a quorum vote costs one write in
the process that posted the card or saw the ask before, and one refusal more elsewhere.
That record is a hint, never a judgement: only lookups follow from it here, and the store
judges the decision on the record as stored (a stale hint costs the refused write it
would have cost anyway). The last ``ASKS_KEPT`` asks are kept, each as its run's record with
that ask alone and without the state or the audit trail (a few MB at most).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable

from engine import audit
from engine.audit import AuditEvent
from engine.decision_rules import ALL_OF_LOOKED_UP
from engine.oversight import groups_of, in_channel
from engine.policy import GROUP_ID, LOOKUP_TIMEOUT_SECONDS, Directory, Refusal, deciders
from engine.ports import DecideResult
from engine.records import AskStatus, Decision, MessageRef, Run
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
from engine.store_rules import decided
from engine.threads import in_thread

logger = logging.getLogger(__name__)

REFUSALS_KEPT = audit.MAX_EVENTS // 5  # refused clicks the trail holds at most
ASKS_KEPT = 256  # pending asks whose last record a process keeps, to shape the next click's write


class Ballot:
    def __init__(self, *, store: RunStore, directory: Directory | None, clock: Callable[[], float]) -> None:
        self._store = store
        self._directory = directory
        self._clock = clock
        self._seen: OrderedDict[tuple[str, str], Run] = OrderedDict()  # the last record of each pending ask

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
        facts = _Facts(user=decision.user)
        if card is not None and not decision.expired:
            # The card's channel is the run's (cards are posted in its thread): show the
            # clicker to be in it before the write, so a click in the channel costs one write.
            facts.channel_checked = card.channel
            facts.member_of |= await self._in_channel(decision.user, card.channel)
        known = self._seen.get((run_id, ask_key))  # the record a refusal or an earlier click returned
        if known is not None and not decision.expired:
            # This process saw the ask before: the lookups a write would be refused for want
            # of are made first, rather than after a refused write. Only lookups follow from
            # a record seen earlier; whether the decision is recorded, the store says.
            for _ in range(2):
                why = _foreseen(known, ask_key, decision, member_of=facts.member_of, now=self._clock())
                if why is None or not await self._look_up(facts, known, ask_key, why):
                    break
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
                    member_of=facts.member_of,
                    event=event,
                    known=known,
                )
                break
            except DecisionRefused as refused:
                known = self._keep(refused.run, ask_key)  # so the next write is shaped right, not blind
                if await self._look_up(facts, refused.run, ask_key, refused.refusal):
                    continue
                await self._note_refusal(refused, decision)
                ask = refused.run.asks[ask_key]
                return DecideResult(accepted=False, run=refused.run, ask=ask, refusal=refused.refusal)
            except (AskNotPending, VerdictNotOffered) as lost:
                self._keep(lost.run, ask_key)
                return DecideResult(accepted=False, run=lost.run, ask=lost.run.asks[lost.ask_key])
            except (RunNotFound, AskNotFound):
                self._seen.pop((run_id, ask_key), None)
                return DecideResult(accepted=False, run=None, ask=None)
            except StoreError:
                logger.warning("run %s: a decision could not be recorded", run_id, exc_info=True)
                return DecideResult(accepted=False, run=None, ask=None, unrecorded=True)
        else:  # pragma: no cover - each pass adds a new fact, and there are at most two
            return DecideResult(accepted=False, run=None, ask=None, unrecorded=True)
        self._keep(run, ask_key)
        audit.log(run_id, [e for e in run.audit if e.id == event.id], run=run)
        claimed = claim is not None and run.lease_owner == claim.owner
        return DecideResult(accepted=True, run=run, ask=run.asks[ask_key], claimed=claimed)

    def remember(self, run: Run) -> None:
        """Keep ``run``'s pending asks as this process last saw them (a card it just posted),
        so the first click on one is shaped right: a hint for the store, never a judgement."""
        for ask in run.pending_asks():
            self._keep(run, ask.key)

    def _keep(self, run: Run, ask_key: str) -> Run:
        """Remember the record of ``ask_key`` while it is pending (the run with that ask alone,
        without state or audit trail); ``run`` as it is, for the write that follows."""
        where = (run.run_id, ask_key)
        ask = run.asks.get(ask_key)
        self._seen.pop(where, None)
        if ask is not None and ask.status is AskStatus.PENDING:
            self._seen[where] = run.evolve(asks={ask_key: ask}, audit=(), snapshot=None)
            while len(self._seen) > ASKS_KEPT:
                self._seen.popitem(last=False)
        return run

    async def _look_up(self, facts: _Facts, run: Run, ask_key: str, refusal: Refusal) -> bool:
        """Look the person up where ``refusal`` on ``run`` says a fact is missing; whether a
        new fact was found (then a write may succeed where the last was refused)."""
        ask = run.asks[ask_key]
        found: frozenset[str] = frozenset()
        unchecked = {g for g in (*(deciders(ask) or ()), *ask.rules.all_of) if GROUP_ID.match(g)} - facts.checked
        if refusal in (Refusal.NOT_APPROVER, Refusal.UNCOUNTED) and (
            unchecked or (ask.rules.all_of and ALL_OF_LOOKED_UP not in facts.member_of)
        ):
            facts.checked |= unchecked
            found = await groups_of(self._directory, facts.user, unchecked)
            if ask.rules.all_of:  # looked up in every all_of group (a failed lookup: not in it)
                found |= {ALL_OF_LOOKED_UP}
        elif refusal is Refusal.NOT_IN_CHANNEL and run.channel and run.channel != facts.channel_checked:
            facts.channel_checked = run.channel
            found = await self._in_channel(facts.user, run.channel)
        if found - facts.member_of:
            facts.member_of |= found
            return True
        return False

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


class _Facts:
    """What one ``Ballot.record`` has shown about the person so far, and what it looked up."""

    def __init__(self, *, user: str) -> None:
        self.user = user
        self.member_of: frozenset[str] = frozenset()  # the groups and channels shown
        self.checked: frozenset[str] = frozenset()  # the groups looked up
        self.channel_checked: str | None = None


def _foreseen(run: Run, ask_key: str, decision: Decision, *, member_of: frozenset[str], now: float) -> Refusal | None:
    """The refusal the rules would give ``decision`` on ``run`` (a record seen earlier), if any."""
    try:
        decided(run, run.run_id, ask_key, decision, now=now, member_of=member_of)
    except DecisionRefused as refused:
        return refused.refusal
    except StoreError:
        return None
    return None
