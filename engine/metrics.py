"""What the bot counts, and the port it counts through: the metric catalog, in one place.

The catalog below is the contract the docs (``docs/metrics.md``), the stack's alarms and
dashboard (``template.yaml``) and the tests read: a name, a CloudWatch unit, its
dimensions, and one line on what it counts. Dimensions are kept to ``graph`` and, where
named, ``outcome``: CloudWatch bills each combination of a metric's dimension values as a
metric of its own, so a run id or a user id as a dimension would make the bill grow with
the traffic.

The counts are derived where the facts are saved, once: ``engine.audit.log`` is called
after every save that landed with the events it added (asked, decided, expired, auto-
decided, completed...), and the run it saved, so ``counted`` turns those events into
metrics there, for every path (a click, App Home, a modal, the sweeper, either store).

Like ``logging``, the meter is one per process (``install``): the places that count are
deep (the store's error mapping, the Slack client's retry handlers) and a process has one
sink for its metrics. Until one is installed the null meter drops everything, so the engine,
the tests and a process with metrics off pay nothing; ``bot.metrics`` installs the
Powertools one (EMF) when ``METRICS`` is on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from engine.audit import AuditEvent
    from engine.records import Run


@dataclass(frozen=True, kw_only=True)
class Metric:
    name: str
    unit: str  # a CloudWatch unit: Count, Seconds, Milliseconds
    dimensions: tuple[str, ...]
    counts: str  # when it is emitted, in one line

    def __str__(self) -> str:
        return self.name


GRAPH: Final = "graph"
OUTCOME: Final = "outcome"

ASKS_RAISED = Metric(
    name="AsksRaised",
    unit="Count",
    dimensions=(GRAPH,),
    counts="a new ask is saved (auto-decided ones too, and one asked again after a takeover)",
)
DECISIONS = Metric(
    name="Decisions",
    unit="Count",
    dimensions=(GRAPH, OUTCOME),
    counts="an ask is decided: approved, rejected, replied, edited, expired, auto_approved or auto_rejected "
    "(under a quorum, once: when the last approval needed is recorded)",
)
TIME_TO_DECISION = Metric(
    name="TimeToDecision",
    unit="Seconds",
    dimensions=(GRAPH,),
    counts="a person's answer decides an ask: seconds from the ask being raised to that answer",
)
AUTO_DECISIONS = Metric(
    name="AutoDecisions", unit="Count", dimensions=(GRAPH,), counts="a policy rule decides an ask by itself"
)
EXPIRIES = Metric(name="Expiries", unit="Count", dimensions=(GRAPH,), counts="the sweeper expires an ask")
RUNS_ENDED = Metric(
    name="RunsEnded",
    unit="Count",
    dimensions=(GRAPH, OUTCOME),
    counts="a run ends: completed, failed, rejected or cancelled",
)
PASS_DURATION = Metric(
    name="PassDuration", unit="Milliseconds", dimensions=(GRAPH,), counts="a graph pass ends: how long it ran"
)
SLACK_ERRORS = Metric(
    name="SlackErrors", unit="Count", dimensions=(), counts="a Slack Web API call fails, after slack_sdk's retries"
)
SLACK_RETRIES = Metric(
    name="SlackRetries",
    unit="Count",
    dimensions=(),
    counts="slack_sdk retries a call (rate limited, a server error, a lost connection)",
)
STORE_ERRORS = Metric(
    name="StoreErrors",
    unit="Count",
    dimensions=(),
    counts="a store call fails (StoreUnavailable or StoreBroken, after botocore's retries)",
)
DELIVERIES_OWED = Metric(
    name="DeliveriesOwed",
    unit="Count",
    dimensions=(),
    counts="each sweep: the runs it looked at that owe Slack a delivery (Sum per period)",
)
OLDEST_ASK_AGE = Metric(
    name="OldestAskAge",
    unit="Seconds",
    dimensions=(),
    counts="each sweep: the age of the oldest pending ask in the runs it looked at, 0 if none (Maximum per period)",
)
SWEEPER_RUNS = Metric(
    name="SweeperRuns",
    unit="Count",
    dimensions=(),
    counts="a sweep completes: its heartbeat, whose absence means the sweeper is not running",
)

CATALOG: Final = (
    ASKS_RAISED,
    DECISIONS,
    TIME_TO_DECISION,
    AUTO_DECISIONS,
    EXPIRIES,
    RUNS_ENDED,
    PASS_DURATION,
    SLACK_ERRORS,
    SLACK_RETRIES,
    STORE_ERRORS,
    DELIVERIES_OWED,
    OLDEST_ASK_AGE,
    SWEEPER_RUNS,
)
BY_NAME: Final = {m.name: m for m in CATALOG}

DECISION_OUTCOMES: Final = ("approved", "rejected", "replied", "edited", "expired", "auto_approved", "auto_rejected")
RUN_OUTCOMES: Final = ("completed", "failed", "rejected", "cancelled")


class Meter(Protocol):
    """Where the engine and the Slack edge count. ``dimensions`` are exactly the metric's."""

    def add(self, metric: Metric, value: float, **dimensions: str) -> None: ...

    def flush(self) -> None:
        """Write out what was counted since the last flush (no-op when nothing was)."""
        ...


class NullMeter:
    """Counts nothing: the meter until one is installed."""

    def add(self, metric: Metric, value: float, **dimensions: str) -> None:
        return None

    def flush(self) -> None:
        return None


_meter: Meter = NullMeter()


def install(meter: Meter) -> Meter:
    """Make ``meter`` this process's meter; returns the one it replaces."""
    global _meter
    previous, _meter = _meter, meter
    return previous


def meter() -> Meter:
    return _meter


def add(metric: Metric, value: float = 1.0, **dimensions: str) -> None:
    """Count ``value`` of ``metric``; a meter that fails must never fail the bot's work."""
    if set(dimensions) != set(metric.dimensions):
        raise ValueError(f"{metric.name} takes dimensions {metric.dimensions}, not {tuple(dimensions)}")
    with contextlib.suppress(Exception):
        _meter.add(metric, value, **dimensions)


@contextlib.contextmanager
def timed(metric: Metric, **dimensions: str) -> Iterator[None]:
    """Count the milliseconds the block took (by the monotonic clock: tests move the engine's)."""
    began = time.monotonic()
    try:
        yield
    finally:
        add(metric, (time.monotonic() - began) * 1000.0, **dimensions)


def counted(run: Run, events: Iterable[AuditEvent]) -> None:
    """The metrics of the ``events`` one landed save of ``run`` added (``engine.audit.log``)."""
    from engine.stats import Ending, ending

    graph = run.graph
    for event in events:
        ask = run.asks.get(event.ask) if event.ask else None
        if event.kind in ("asked", "may_have_acted"):  # asked again after a takeover: a new ask too
            add(ASKS_RAISED, graph=graph)
        elif event.kind in ("decided", "expired", "auto_decided") and ask is not None and ask.decision is not None:
            end = ending(ask)
            outcome = "replied" if end is Ending.ANSWERED else end.value
            if outcome in DECISION_OUTCOMES:
                add(DECISIONS, graph=graph, outcome=outcome)
            if event.kind == "auto_decided":
                add(AUTO_DECISIONS, graph=graph)
            elif event.kind == "expired":
                add(EXPIRIES, graph=graph)
            elif not ask.decision.expired and ask.decision.policy is None:
                add(TIME_TO_DECISION, max(ask.decision.at - ask.created_at, 0.0), graph=graph)
        elif event.kind in RUN_OUTCOMES:
            add(RUNS_ENDED, graph=graph, outcome=event.kind)


def surveyed(runs: Iterable[Run], *, now: float) -> None:
    """The sweep's gauges for the runs it looked at (``RunEngine.sweep_run``), one run or many.

    Emitted per look, so that the same rule holds where one process sweeps them all (a
    server: one sweep, many runs) and where each run is swept in an invocation of its own
    (Lambda): ``DeliveriesOwed`` is read as a Sum per period, ``OldestAskAge`` as a Maximum.
    """
    for run in runs:
        if run.owes_slack:
            add(DELIVERIES_OWED)
        waiting = [now - a.created_at for a in run.pending_asks()]
        add(OLDEST_ASK_AGE, max([0.0, *waiting]))


def swept() -> None:
    """One sweep completed: its heartbeat, with the gauges' zero so that a quiet period reads 0."""
    add(SWEEPER_RUNS)
    add(DELIVERIES_OWED, 0.0)
    add(OLDEST_ASK_AGE, 0.0)
