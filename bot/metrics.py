"""The metrics of ``engine.metrics`` as CloudWatch embedded metric format (EMF) lines, by Powertools.

``METRICS=on`` (the default on Lambda) installs ``EmfMeter``: counting is a list append,
and Powertools is imported only by a flush that has something to write, so the path that
acks a command or a click never imports it (an ack that counted nothing flushes nothing).
On Lambda the runtime flushes at the end of every invocation (a container is frozen once
it returns); a server flushes every ``FLUSH_SECONDS`` and once more at shutdown. Each
flush writes one JSON line per combination of dimension values to stdout, where Lambda's
log stream (or, on a host, the CloudWatch agent or any EMF reader) turns it into metrics.

One Powertools EMF provider per combination: Powertools' ``Metrics`` keeps one set of
dimensions for all the metrics of a flush, and ours differ per metric (``graph``, then
``graph`` and ``outcome``, or none). Powertools adds a ``service`` dimension whenever a
service name is set; ours is given as empty so the metrics carry exactly the catalog's
dimensions, the ones the stack's alarms name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator
from typing import Final

from bot.slack_access import ConfigError, bad_value
from engine import metrics
from engine.metrics import Metric

logger = logging.getLogger(__name__)

NAMESPACE_ENV: Final = "POWERTOOLS_METRICS_NAMESPACE"
DEFAULT_NAMESPACE: Final = "ApprovalBot"
FLUSH_SECONDS: Final = 60.0
_ON: Final = frozenset({"on", "true", "1", "yes"})
_OFF: Final = frozenset({"off", "false", "0", "no"})


def metrics_on(value: str | None, *, on_lambda: bool) -> bool:
    """Whether ``METRICS`` (``value``) turns metrics on; unset: on Lambda only.

    Raises:
        ConfigError: a value that is neither on nor off, in one line.
    """
    text = (value or "").strip().lower()
    if not text:
        return on_lambda
    if text in _ON | _OFF:
        return text in _ON
    default = "on on Lambda, off elsewhere"
    raise ConfigError(bad_value("METRICS", value or "", expected="on or off", example="on", default=default))


class EmfMeter:
    """Counts in memory; ``flush`` writes them as EMF lines through Powertools and forgets them."""

    def __init__(self, *, namespace: str | None = None) -> None:
        self.namespace = namespace or os.environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE
        self._counted: list[tuple[Metric, float, tuple[tuple[str, str], ...]]] = []
        self._lock = threading.Lock()  # store calls count from worker threads

    def add(self, metric: Metric, value: float, **dimensions: str) -> None:
        with self._lock:
            self._counted.append((metric, float(value), tuple(sorted(dimensions.items()))))

    def flush(self) -> None:
        with self._lock:
            counted, self._counted = self._counted, []
        if not counted:
            return
        from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

        providers: dict[tuple[tuple[str, str], ...], AmazonCloudWatchEMFProvider] = {}
        for metric, value, dimensions in counted:
            provider = providers.get(dimensions)
            if provider is None:
                provider = providers[dimensions] = AmazonCloudWatchEMFProvider(namespace=self.namespace, service="")
                for name, value_of in dimensions:
                    provider.add_dimension(name=name, value=value_of)
            provider.add_metric(name=metric.name, unit=metric.unit, value=value)
        for provider in providers.values():
            provider.flush_metrics()
        sys.stdout.flush()  # a server's stdout is a pipe (block-buffered): a flush is when it is read


def start(*, on: bool) -> metrics.Meter | None:
    """Install an ``EmfMeter`` when ``on``; the meter installed, or None."""
    if not on:
        return None
    meter = EmfMeter()
    metrics.install(meter)
    return meter


def flush() -> None:
    """Flush this process's meter; a failure is logged, never raised (metrics must not fail work)."""
    try:
        metrics.meter().flush()
    except Exception:
        logger.warning("metrics could not be written", exc_info=True)


async def flush_every(seconds: float = FLUSH_SECONDS) -> None:
    """A server's flush, every ``seconds`` until cancelled, and once more then."""
    try:
        while True:
            await asyncio.sleep(seconds)
            flush()
    finally:
        flush()


@contextlib.asynccontextmanager
async def flushing(seconds: float = FLUSH_SECONDS) -> AsyncIterator[None]:
    """While the block runs, flush every ``seconds``; at its end, once more."""
    task = asyncio.create_task(flush_every(seconds))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
