"""Whether this process can do its work: graphs loaded, and a store that answers.

``GET /healthz`` asks ``HealthCheck``; ``bot.preflight`` asks ``probe_store`` once at start.
A load balancer that polls ``/healthz`` every second must not cost a read per poll, so a
result is kept for ``CACHE_SECONDS`` and at most one probe is in flight per process
(pollers that arrive meanwhile wait for that one): on DynamoDB that is at most one
``GetItem`` (strongly consistent, of an item that does not exist: one read request unit)
every ``CACHE_SECONDS``, whatever the polling rate; on SQLite one indexed ``SELECT``.

``/healthz`` is public (it sits beside ``/slack/events``), so its reason is one of a few
fixed sentences: AWS's own message would show the account id, the role, the table and the
region to anyone. The full line (worded as ``approval-bot`` words it at start) goes to the
log, once each time the cause changes.

The probe is a read the bot does anyway (``RunStore.load``), not ``DescribeTable``: the
least-privilege role in ``template.yaml`` grants only the item calls the store makes, and
a health check must not need a permission the bot does not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from bot.cli_errors import explain

if TYPE_CHECKING:
    from bot.services import Services
    from engine.store import RunStore

log = logging.getLogger(__name__)

NOT_LOADED: Final = "the graph modules are not loaded yet (the bot is still starting)"
STORE_FAILED: Final = "the store did not answer (the bot's log says why)"

NO_WORKER: Final = "no worker process is running (one is starting or restarting)"
WORKERS_FAILING: Final = "no worker process is running: they die at start-up (the bot's log says why)"

PROBE_RUN_ID: Final = "healthz-probe"
"""A run id no run can have (``engine.ids``: 16 base32 characters, no dash): a read that finds nothing."""
CACHE_SECONDS: Final = 2.0
TIMEOUT_SECONDS: Final = 2.0
"""How long ``/healthz`` waits for the store; a dead endpoint is retried by botocore for longer."""


@dataclass(frozen=True)
class Health:
    ok: bool
    reason: str = ""

    def body(self, *, graphs_loaded: bool) -> dict[str, object]:
        """The JSON ``/healthz`` answers: ``{"ok": true, "graphs_loaded": true}`` as before, and
        ``"reason"`` (one line) when not ok."""
        body: dict[str, object] = {"ok": self.ok, "graphs_loaded": graphs_loaded}
        if not self.ok:
            body["reason"] = self.reason
        return body


def no_worker_reason(failing_at_start: int) -> str:
    """Why ``/healthz`` is 503 with ``--workers`` and none ready: a fixed sentence (it is public)."""
    return WORKERS_FAILING if failing_at_start >= 2 else NO_WORKER


def probe_store(store: RunStore) -> None:
    """One read of the store; raises what the store raises (``StoreError``, its cause chained)."""
    store.load(PROBE_RUN_ID, snapshot=False)


def store_reason(error: BaseException) -> str:
    """One line saying why the store did not answer, worded as ``approval-bot`` words it at start."""
    explained = explain(error)
    if explained is not None:
        return explained.line
    lines = str(error).strip().splitlines()
    return f"the store did not answer ({type(error).__name__}{': ' + lines[0] if lines else ''})"


class HealthCheck:
    """The cached, single-flight check behind ``GET /healthz``."""

    def __init__(
        self,
        *,
        services: Services,
        cache_seconds: float = CACHE_SECONDS,
        timeout: float = TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._services = services
        self._cache_seconds = cache_seconds
        self._timeout = timeout
        self._clock = clock
        self._last: Health | None = None
        self._checked_at = 0.0
        self._probe: asyncio.Future[None] | None = None
        self._logged = ""

    async def check(self) -> Health:
        if not self._services.graphs.loaded:
            return Health(ok=False, reason=NOT_LOADED)
        if self._last is not None and self._clock() - self._checked_at < self._cache_seconds:
            return self._last
        if self._probe is None or self._probe.done():
            # A probe still running after a timeout is waited for again, not doubled.
            self._probe = asyncio.ensure_future(asyncio.to_thread(probe_store, self._services.store))
            self._probe.add_done_callback(_retrieve)
        try:
            await asyncio.wait_for(asyncio.shield(self._probe), self._timeout)
            health = Health(ok=True)
        except TimeoutError:
            health = Health(ok=False, reason=f"the store did not answer within {self._timeout:g} s")
            self._probe.add_done_callback(self._explain_late)
        except Exception as error:
            health = Health(ok=False, reason=STORE_FAILED)
            self._log_once(store_reason(error))
        else:
            self._logged = ""
        self._last, self._checked_at = health, self._clock()
        return health

    def _explain_late(self, probe: asyncio.Future[None]) -> None:
        """A probe that outlived its wait: when it fails at last, the log says why (a hung
        endpoint is the likeliest outage, and /healthz only said it did not answer)."""
        error = None if probe.cancelled() else probe.exception()
        if error is not None:
            self._log_once(store_reason(error))

    def _log_once(self, detail: str) -> None:
        if detail != self._logged:
            self._logged = detail
            log.warning("/healthz: %s", detail)


def _retrieve(probe: asyncio.Future[None]) -> None:
    """Read a finished probe's error, so a probe nobody awaited any more is not logged as lost."""
    if not probe.cancelled():
        probe.exception()
