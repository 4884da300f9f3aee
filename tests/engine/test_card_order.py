"""Questions raised together get their cards in one order every time: by node id.

Parallel nodes finish in whatever order Strands sees them, and a store need not keep the
order of a run's asks (a DynamoDB map keeps none), so the cards of one pass are posted
sorted (``engine.delivery.card_order``): the same card numbers for a walk-through, every time.
"""

from __future__ import annotations

import time

import pytest

from engine import RunEngine
from engine.delivery import Courier
from engine.records import Ask, MessageRef, Run
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource


class CardsFail(RecordingPublisher):
    """Slack refuses every card: the run is saved with its cards still owed."""

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        raise ConnectionError("Slack is down")


@pytest.mark.parametrize("reverse", [False, True], ids=["as saved", "reversed"])
async def test_the_cards_of_one_pass_are_posted_by_node_id_whatever_order_the_record_holds(
    store: SqliteRunStore, reverse: bool
) -> None:
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=CardsFail())
    started = await engine.start(graph="two-asks", task="t", user="U0", channel="C1")
    owed = store.load(started.run_id, snapshot=False)
    assert owed is not None and [a.card for a in owed.pending_asks()] == [None, None]
    asks = list(owed.asks.values())
    held = owed.evolve(asks={a.key: a for a in (reversed(asks) if reverse else asks)})

    publisher = RecordingPublisher()
    await Courier(publisher=publisher, store=store, clock=time.time).deliver(held, unposted=set(owed.asks))

    posted = [owed.asks[key].node_id for _, _, key in publisher.of("card")]
    assert posted == ["left", "right"]
    delivered = store.load(started.run_id, snapshot=False)
    assert delivered is not None and all(a.card is not None for a in delivered.pending_asks())
