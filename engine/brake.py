"""The emergency brake of a graph pass: a cancel stops the pass before its next node.

Why a brake and not only the save: a cancel used to be noticed when the pass saved, so
every node after the one running went on (and its side effects with it) before the run
ended. The brake is a Strands ``BeforeNodeCallEvent`` hook on the graph (public API:
``cancel_node`` stops the node; ``engine.execution`` tells that stop apart from a gate's
"no") that reads the run's cancel mark from the store.

Its cost is kept off the approval cycle: the claim (or the start) that began the pass
counts as a look, since it read or wrote the record, mark included, and a node causes a
read only when ``CANCEL_CHECK_SECONDS`` (default 1 s; 0 in tests) have passed since the
last look. A node that starts within that time of the last look runs even if a cancel
landed meanwhile (the first node of a pass usually starts milliseconds after its claim,
and nodes that call a model take seconds, so in practice every later node is looked
for); a pass's save still finds the mark then (``engine.saving``), and the requester is
told what ran.
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

    A look costs a store read, so a node is looked for only when ``every`` seconds have
    passed since the last look; ``last`` is when the claim or the start that began the
    pass wrote the record (a look for free), on ``clock``. ``look`` returns who
    cancelled, or None.
    """

    look: Callable[[], Awaitable[str | None]]
    every: float = CANCEL_CHECK_SECONDS
    clock: Callable[[], float] = time.monotonic
    by: str | None = None  # who cancelled, once a look found the mark
    before: str | None = None  # the node the pass stopped before
    looks: int = 0  # store reads made
    last: float | None = None  # when the record was last seen (None: at the first node)

    async def stops(self, node_id: str) -> bool:
        """Whether the pass must stop before ``node_id``."""
        now = self.clock()
        if self.last is None:
            self.last = now
        elif self.by is None and now - self.last >= self.every:
            self.last, self.looks = now, self.looks + 1
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
