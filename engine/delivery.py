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
from dataclasses import replace

from engine.crash import crash_point
from engine.ports import FINAL, Publisher
from engine.threads import in_thread
from persistence.base import Delivery, RunStore, StoreError
from persistence.records import LIVE, Ask, MessageRef, Run, RunStatus
from persistence.rules import apply_delivery

logger = logging.getLogger(__name__)


class Courier:
    def __init__(self, *, publisher: Publisher, store: RunStore) -> None:
        self._publisher = publisher
        self._store = store

    async def card_updates(self, run: Run) -> Run:
        """Bring existing cards up to date; returns ``run`` with what they now show.

        Used by a process that holds the run: its save records ``shown``.
        """
        asks = dict(run.asks)
        for ask in run.asks.values():
            if ask.card_owed and await self._update(run, ask):
                asks[ask.key] = replace(ask, shown=ask.view)
        return run.evolve(asks=asks)

    async def deliver(self, run: Run, *, check_slack: bool = False) -> Run:
        """Deliver everything ``run`` owes Slack and record it; returns the run as stored.

        ``check_slack``: the debts may be partly paid already (a process died between
        posting and recording), so look for each message before posting it.
        """
        if run.thread is None:
            return run
        delivery = Delivery()
        if run.status is RunStatus.WAITING:
            for ask in run.pending_asks():
                if ask.card is None and (ref := await self._post_card(run, ask, check_slack=check_slack)):
                    delivery.cards[ask.key] = ref
                    delivery.shown[ask.key] = LIVE
        for ask in run.asks.values():
            if ask.card_owed and await self._update(run, ask):
                delivery.shown[ask.key] = ask.view
        if run.status.terminal and run.final is None:
            delivery = replace(delivery, final=await self._post_final(run, check_slack=check_slack))
        if check_slack:  # a sweeper's round: count it if Slack is still owed something
            delivery = replace(delivery, stalled=apply_delivery(run, delivery).owes_slack)
        if delivery.empty and not check_slack:
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

    async def _post_card(self, run: Run, ask: Ask, *, check_slack: bool) -> MessageRef | None:
        if check_slack and (found := await self.find(run, ask.key)):
            return found
        try:
            return await self._publisher.post_card(run=run, ask=ask)
        except Exception:
            logger.warning(
                "run %s: posting the card of ask %s failed; it stays owed", run.run_id, ask.key, exc_info=True
            )
            return None

    async def _update(self, run: Run, ask: Ask) -> bool:
        try:
            await self._publisher.update_card(run=run, ask=ask)
        except Exception:
            logger.warning(
                "run %s: updating the card of ask %s failed; it stays owed", run.run_id, ask.key, exc_info=True
            )
            return False
        return True

    async def _post_final(self, run: Run, *, check_slack: bool) -> MessageRef | None:
        if check_slack and (found := await self.find(run, FINAL)):
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
        duplicates = [ref for key, ref in delivery.cards.items() if (a := stored.asks.get(key)) and a.card != ref]
        if delivery.final is not None and stored.final != delivery.final:
            duplicates.append(delivery.final)
        for ref in duplicates:
            try:
                await self._publisher.retract(ref=ref)
            except Exception:
                logger.warning("run %s: could not delete a duplicate message", stored.run_id, exc_info=True)
