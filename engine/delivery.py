"""Delivering what a run owes Slack, and recording what Slack accepted.

What is owed is derived from the record (``Run.owes_slack``): a pending ask without a
card, a card that shows something else than its ask's state, a finished run without its
final message. Delivery happens only after the state is saved, and what Slack accepted
is recorded with one small write (``RunStore.record_delivery``). A Slack failure leaves
the debt in the record, where the sweeper finds it; a process that dies between posting
and recording leaves a message the sweeper finds in Slack (``check_slack``) instead of
posting it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import replace

from engine.crash import crash_point
from engine.deadlines import SKIPPED
from engine.ports import FINAL, PROGRESS, ProgressPublisher, Publisher
from engine.records import Ask, MessageRef, Run, RunStatus
from engine.store import Delivery, RunStore, StoreError
from engine.store_rules import apply_delivery
from engine.threads import in_thread

logger = logging.getLogger(__name__)


def card_order(ask: Ask) -> tuple[float, str, str, str]:
    """The order cards are posted in: oldest question first, and the questions one pass
    raised together (parallel nodes, in whatever order Strands saw them finish, read back
    from a store that keeps no order) by node id, then name: the same order every time."""
    return (ask.created_at, ask.node_id or "", ask.name, ask.key)


class Courier:
    def __init__(
        self,
        *,
        publisher: Publisher,
        store: RunStore,
        clock: Callable[[], float],
        progress: ProgressPublisher | None = None,
    ) -> None:
        self._publisher = publisher
        self._store = store
        self._clock = clock
        self._progress = progress  # status messages and views of runs, when the publisher has them

    async def card_updates(self, run: Run) -> Run:
        """Bring existing cards up to date; returns ``run`` with what they now show.

        Used by a process that holds the run: its save records ``shown``.
        """
        asks = dict(run.asks)
        for ask in run.asks.values():
            if ask.card_owed and await self._update(run, ask):
                asks[ask.key] = replace(ask, shown=ask.view)
        return run.evolve(asks=asks)

    async def deliver(
        self, run: Run, *, unposted: Collection[str] = (), sweeping: bool = False, again: bool = True
    ) -> Run:
        """Deliver everything ``run`` owes Slack and record it; returns the run as stored.

        ``unposted`` names what this process knows was never posted: the asks its own
        save just created, and ``FINAL`` if that save ended the run. Any other message
        owed may have been posted by a process that died before recording it, so it is
        looked for in Slack first. ``sweeping``: a sweeper's round, counted (for backing
        off) when Slack is still owed something after it.
        """
        delivery = Delivery()
        if run.thread is None and run.owes_slack:
            thread = await self.find(run, "") or await self.announce(run)
            if thread is None:
                stalled_at = self._clock() if sweeping else None
                return await self._record(run, replace(delivery, stalled_at=stalled_at), sweeping=sweeping)
            recorded = await self._record_thread(run, thread)
            if recorded is None:
                return run
            run = recorded
        if run.thread is None:
            return run
        if run.status is RunStatus.WAITING and await self._indexed(run):
            for ask in sorted(run.pending_asks(), key=card_order):
                if ask.card is None and (ref := await self._post_card(run, ask, look=ask.key not in unposted)):
                    delivery.cards[ask.key] = ref  # posted live: nothing to record of what it shows
        for ask in run.asks.values():
            if ask.card_owed and await self._update(run, ask):
                delivery.shown[ask.key] = ask.view
            elif ask.line_owed and not run.status.leased and (ref := await self._post_card(run, ask, look=True)):
                delivery.cards[ask.key], delivery.shown[ask.key] = ref, ask.view
        if run.status is RunStatus.WAITING and (sweeping or "notices" in unposted):
            # Notices are posted by the sweeper that claimed them, or by a later sweeper once
            # that one had its grace; a click's delivery leaves them alone, or it could post
            # a reminder the claimer is still posting (notices are not retracted).
            for ask in run.pending_asks():
                if ask.notices_owed and (count := await self._post_notices(run, ask, look="notices" not in unposted)):
                    delivery.notified[ask.key] = count
        # A status message still to post goes before the final message, so the thread reads in
        # order; an existing one is edited after it, so the end is never held up by the pace
        # of edits (an edit does not move the message).
        progress_owed = run.progress is not None and run.progress.owed and not run.status.leased
        if progress_owed and run.progress is not None and run.progress.message is None:
            delivery = await self._with_progress(run, delivery, look=PROGRESS not in unposted)
            progress_owed = False
        if run.status.terminal and run.final is None:
            delivery = replace(delivery, final=await self._post_final(run, look=FINAL not in unposted))
        if progress_owed:
            delivery = await self._with_progress(run, delivery, look=False)
        if sweeping and apply_delivery(run, delivery).owes_slack:
            delivery = replace(delivery, stalled_at=self._clock())
        stored = await self._record(run, delivery, sweeping=sweeping)
        if self._progress is not None and not replace(delivery, stalled_at=None).empty:
            # Only when Slack took something: a sweeper round that changed nothing refreshes nothing.
            await self._progress.run_changed(run=stored)
        if (
            again
            and not sweeping
            and stored.version > run.version + 1
            and stored.owes_slack
            and not stored.status.leased
        ):
            # Something landed while we delivered (a cancel, a decision): what we showed may
            # already be out of date (a card still live, a status edit of an older state).
            # One more round now, instead of leaving it to the sweeper's grace period.
            return await self.deliver(stored, again=False)
        return stored

    async def auto_lines(self, run: Run, *, unposted: Collection[str]) -> Run:
        """Post the line of each ask a policy rule just decided (no card: one line naming the
        rule and what it decided), for a holder that goes on: its next save records them.
        One that fails stays owed (``Ask.line_owed``); a line posted by a pass that died
        before saving it is found in Slack before it is posted again."""
        if run.thread is None:
            return run
        asks = dict(run.asks)
        for ask in sorted(run.asks.values(), key=card_order):
            if ask.line_owed and (ref := await self._post_card(run, ask, look=ask.key not in unposted)):
                asks[ask.key] = replace(ask, card=ref, shown=ask.view)
        return run.evolve(asks=asks)

    async def _indexed(self, run: Run) -> bool:
        """Make the run's pending asks findable by who may decide them (App Home, ``/graph
        pending``) before their cards or escalations are posted; False when that failed, and
        the cards wait with it: every card shown is then in its deciders' inboxes."""
        if not any(a.card is None or a.notices_owed for a in run.pending_asks()):
            return True
        try:
            await in_thread(self._store.index_asks, run)
        except StoreError:
            logger.warning("run %s: could not index its asks; their cards stay owed", run.run_id)
            return False
        return True

    async def _with_progress(self, run: Run, delivery: Delivery, *, look: bool) -> Delivery:
        assert run.progress is not None
        if ref := await self._show_progress(run, look=look):
            return replace(delivery, progress=ref, progress_shown=run.progress.rev)
        return delivery

    async def _show_progress(self, run: Run, *, look: bool) -> MessageRef | None:
        assert run.progress is not None
        if self._progress is None:
            return None
        if look and (found := await self.find(run, PROGRESS)):
            run = run.evolve(progress=replace(run.progress, message=found))
        try:
            return await self._progress.update_progress(run=run)
        except Exception:
            logger.warning("run %s: updating its status message failed; it stays owed", run.run_id, exc_info=True)
            return None

    async def _record(self, run: Run, delivery: Delivery, *, sweeping: bool) -> Run:
        if delivery.empty and not sweeping:
            return run
        crash_point("posted")
        try:
            stored = await in_thread(self._store.record_delivery, run, delivery)
        except StoreError:
            logger.warning("run %s: could not record what Slack accepted; the sweeper will check", run.run_id)
            return run
        crash_point("recorded")
        await self._retract_duplicates(stored, delivery)
        return stored

    async def _record_thread(self, run: Run, thread: MessageRef) -> Run | None:
        """Record the thread before posting into it, so that every card of the run lands in
        the thread that is recorded: two deliverers racing here post one thread each, and
        the one whose thread lost deletes its own."""
        try:
            stored = await in_thread(self._store.record_delivery, run, Delivery(thread=thread))
        except StoreError:
            logger.warning("run %s: could not record its thread; the sweeper will check", run.run_id)
            return None
        if stored.thread != thread:
            await self._retract(stored, [thread])
        return stored

    async def announce(self, run: Run) -> MessageRef | None:
        assert run.channel is not None
        try:
            return await self._publisher.run_started(run=run, channel=run.channel)
        except Exception:
            logger.warning("run %s: announcing it failed; it stays owed", run.run_id, exc_info=True)
            return None

    async def _post_card(self, run: Run, ask: Ask, *, look: bool) -> MessageRef | None:
        if look and (found := await self.find(run, ask.key)):
            return found
        try:
            return await self._publisher.post_card(run=run, ask=ask)
        except Exception:
            logger.warning(
                "run %s: posting the card of ask %s failed; it stays owed", run.run_id, ask.key, exc_info=True
            )
            return None

    async def _post_notices(self, run: Run, ask: Ask, *, look: bool) -> int:
        """Post the reminders and escalations claimed for ``ask`` and not yet accepted, in
        order; returns how many of its notices Slack has now (0: none newly)."""
        count = ask.notified
        for index in range(ask.notified, len(ask.notices)):
            if ask.notices[index] == SKIPPED:
                count = index + 1
                continue
            if not (look and await self.find(run, f"{ask.key}:notice:{index}")):
                try:
                    await self._publisher.post_notice(run=run, ask=ask, index=index)
                except Exception:
                    logger.warning("run %s: posting a reminder for ask %s failed; it stays owed", run.run_id, ask.key)
                    break
            count = index + 1
        return count if count > ask.notified else 0

    async def _update(self, run: Run, ask: Ask) -> bool:
        try:
            await self._publisher.update_card(run=run, ask=ask)
        except Exception:
            logger.warning(
                "run %s: updating the card of ask %s failed; it stays owed", run.run_id, ask.key, exc_info=True
            )
            return False
        return True

    async def _post_final(self, run: Run, *, look: bool) -> MessageRef | None:
        if look and (found := await self.find(run, FINAL)):
            return found
        try:
            return await self._publisher.post_final(run=run)
        except Exception:
            logger.warning("run %s: posting its end failed; it stays owed", run.run_id, exc_info=True)
            return None

    async def find(self, run: Run, what: str) -> MessageRef | None:
        """A message already posted for ``what``; None when there is none or Slack cannot say.

        A lookup that fails (a missing history scope, a channel the bot cannot read) must
        not block delivery for ever: posting again risks a duplicate, never delivering
        loses the message. The first is the lesser harm.
        """
        try:
            return await self._publisher.find_posted(run=run, what=what)
        except Exception:
            logger.warning("run %s: could not look for %s in Slack; posting it", run.run_id, what or "the run")
            return None

    async def _retract_duplicates(self, stored: Run, delivery: Delivery) -> None:
        """Two deliverers raced and both posted: the recorded message stays, ours goes."""
        duplicates = [
            ref for key, ref in delivery.cards.items() if (a := stored.asks.get(key)) is None or a.card != ref
        ]
        if delivery.final is not None and stored.final != delivery.final:
            duplicates.append(delivery.final)
        if (
            delivery.progress is not None
            and stored.progress is not None
            and stored.progress.message != delivery.progress
        ):
            duplicates.append(delivery.progress)
        await self._retract(stored, duplicates)

    async def _retract(self, run: Run, duplicates: list[MessageRef]) -> None:
        for ref in duplicates:
            try:
                await self._publisher.retract(ref=ref)
            except Exception:
                logger.warning("run %s: could not delete a duplicate message", run.run_id, exc_info=True)
