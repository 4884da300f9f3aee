"""The emergency brake of a graph pass: a cancel stops the pass before its next node.

Why a brake and not only the save: a cancel used to be noticed when the pass saved, so
every node after the one running went on (and its side effects with it) before the run
ended. The brake is a Strands ``BeforeNodeCallEvent`` hook on the graph (public API:
``cancel_node`` stops the node; ``engine.execution`` tells that stop apart from a gate's
"no") that reads the run's cancel mark from the store.

Its cost is kept off the approval cycle: the first node of a pass is never looked for
(the claim or the start just read or wrote the record, mark included) and later nodes
cause a read at most once every ``CANCEL_CHECK_SECONDS`` (default 1 s; 0 in tests). A
node that starts within that time of the last look runs even if a cancel landed
meanwhile; a pass's save still finds the mark then (``engine.saving``).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph

logger = logging.getLogger(__name__)

DEFAULT_CANCEL_CHECK_SECONDS = 1.0


def _cancel_check_from_environment() -> float:
    """``CANCEL_CHECK_SECONDS``, or the default for a value that is not a number >= 0."""
    try:
        value = float(os.environ.get("CANCEL_CHECK_SECONDS") or DEFAULT_CANCEL_CHECK_SECONDS)
    except ValueError:
        return DEFAULT_CANCEL_CHECK_SECONDS
    return value if 0 <= value < math.inf else DEFAULT_CANCEL_CHECK_SECONDS


CANCEL_CHECK_SECONDS = _cancel_check_from_environment()


@dataclass(kw_only=True)
class Brake:
    """The emergency brake of one pass: before each node, is the run cancelled?

    A look costs a store read, so the first node of a pass is never looked for (the
    claim or the start just read or wrote the record, mark included), and later nodes
    at most once every ``every`` seconds. ``look`` returns who cancelled, or None.
    """

    look: Callable[[], Awaitable[str | None]]
    every: float = CANCEL_CHECK_SECONDS
    clock: Callable[[], float] = time.monotonic
    by: str | None = None  # who cancelled, once a look found the mark
    before: str | None = None  # the node the pass stopped before
    looks: int = 0  # store reads made
    _nodes: int = 0
    _last: float | None = None

    async def stops(self, node_id: str) -> bool:
        """Whether the pass must stop before ``node_id``."""
        self._nodes += 1
        now = self.clock()
        if self._last is None:
            self._last = now
        if self.by is None and self._nodes > 1 and now - self._last >= self.every:
            self._last, self.looks = now, self.looks + 1
            try:
                self.by = await self.look()
            except Exception:  # an unreadable store stops nothing: the save still finds the mark
                logger.warning("the cancel check before node %s could not read the run", node_id, exc_info=True)
        if self.by is not None and self.before is None:
            self.before = node_id
        return self.by is not None

    def install(self, graph: Graph) -> None:
        from strands.hooks import BeforeNodeCallEvent

        async def before_node(event: BeforeNodeCallEvent) -> None:
            if await self.stops(event.node_id):
                event.cancel_node = f"the run was cancelled by {self.by}"

        graph.hooks.add_callback(BeforeNodeCallEvent, before_node)
