"""Publisher calls that must never undo stored progress.

The store is the source of truth: a Slack outage while a card is posted or updated is
logged, and the run's state stays saved (cards missing after a failed post are posted
again by the sweeper, see ``Run.sweep_at``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from engine.ports import Publisher
from persistence.records import Ask, MessageRef, Run

logger = logging.getLogger(__name__)


class Notifier:
    def __init__(self, publisher: Publisher) -> None:
        self._publisher = publisher

    async def asks_raised(self, run: Run, asks: Sequence[Ask]) -> dict[str, MessageRef]:
        try:
            return await self._publisher.asks_raised(run=run, asks=asks)
        except Exception:
            logger.exception("run %s: posting %d card(s) failed", run.run_id, len(asks))
            return {}

    async def ask_changed(self, run: Run, ask: Ask) -> None:
        try:
            await self._publisher.ask_changed(run=run, ask=ask)
        except Exception:
            logger.exception("run %s: updating the card of ask %s failed", run.run_id, ask.key)

    async def run_finished(self, run: Run) -> None:
        try:
            await self._publisher.run_finished(run=run)
        except Exception:
            logger.exception("run %s: posting the outcome failed", run.run_id)
