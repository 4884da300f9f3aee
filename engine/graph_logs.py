"""Strands' graph log, read for what it is: a gate's "no" is no error, a traceback is logged once.

Strands logs two ERROR records, one with a traceback, whenever a graph stops on an
exception. A ``BeforeNodeCallEvent`` gate that sets ``cancel_node`` stops the graph with
one, so a person clicking Reject would read as a crash in the bot's log; and a real
failure, which the engine logs itself with the run it belongs to, would show its
traceback twice. The filter here, on Strands' graph logger, drops exactly the records
about a gate's cancellation (told apart by :func:`engine.strands_internals.node_cancelled`,
never by its wording) and notes which errors Strands logged with their traceback, so the
engine can leave its own out. Every other record passes unchanged.

Importing this module installs the filter (the engine's graph pass imports it lazily,
with the Strands internals it relies on).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from engine.strands_internals import GRAPH_LOGGER, node_cancelled

# Per pass (a context variable: passes of different runs interleave on one event loop).
_TRACEBACKS: ContextVar[list[BaseException] | None] = ContextVar("strands_tracebacks", default=None)


@contextmanager
def tracebacks_logged() -> Iterator[list[BaseException]]:
    """Collect the errors Strands' graph logger logs with a traceback meanwhile, so that
    the engine logs each failure's traceback once rather than twice."""
    seen: list[BaseException] = []
    token = _TRACEBACKS.set(seen)
    try:
        yield seen
    finally:
        _TRACEBACKS.reset(token)


class GraphLogFilter(logging.Filter):
    """Keep a node gate's rejection out of Strands' error log; note the tracebacks it logs.

    For a cancellation Strands logs ``node failed`` (the error in its arguments) and
    ``graph execution failed`` (with the traceback); both are dropped, and the engine
    logs the rejection in one INFO line instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None and isinstance(record.args, tuple):
            error = next((a for a in record.args if isinstance(a, BaseException)), None)
        if error is None:
            return True
        if node_cancelled(error):
            return False
        seen = _TRACEBACKS.get()
        if record.exc_info and seen is not None:
            seen.append(error)
        return True


def install() -> None:
    """Put :class:`GraphLogFilter` on Strands' graph logger, once."""
    strands_logger = logging.getLogger(GRAPH_LOGGER)
    if not any(isinstance(f, GraphLogFilter) for f in strands_logger.filters):
        strands_logger.addFilter(GraphLogFilter())


install()
