"""What the engine needs from the outside world, as protocols.

The engine never imports Slack or boto3: it talks to storage through
``persistence.base.RunStore``, to people through a ``Publisher`` and to graph code
through a ``GraphSource``. The bot supplies Slack-backed implementations, the tests
supply recording fakes, and the offline demo supplies the real Slack publisher
pointed at the local stand-in for Slack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from persistence.records import Ask, MessageRef, Run

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph


class PublishError(Exception):
    """The run's messages could not be posted (e.g. the bot is not in the channel)."""


class Publisher(Protocol):
    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        """Announce the run; the returned message is the thread all its messages go to."""
        ...

    async def asks_raised(self, *, run: Run, asks: Sequence[Ask]) -> dict[str, MessageRef]:
        """Post one card per ask; returns where each card landed, by ask key.

        Called before the asks are saved, so a card that is posted is always found by
        its ask key. An ask missing from the result is saved without a card reference.
        """
        ...

    async def ask_changed(self, *, run: Run, ask: Ask) -> None:
        """Replace an ask's card after a decision or when the run moved on without it."""
        ...

    async def run_finished(self, *, run: Run) -> None:
        """Post the final output, the failure or the cancellation in the run's thread."""
        ...


class GraphSource(Protocol):
    def build(self, name: str) -> Graph:
        """Build a fresh graph from its definition (the same nodes, tools and hooks each time)."""
        ...

    def exists(self, name: str) -> bool: ...
