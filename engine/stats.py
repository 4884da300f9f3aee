"""How approvals went: counts and decision times per graph, ask and rule, from run records.

``/graph stats`` answers from what the records already hold, so that it adds nothing to
the approval cycle (no counter is kept on the write path: a tally item would cost every
decision a second write). A run record keeps its asks with their decisions and frozen
terms (``Ask.rules.label`` names the ``AskPolicy`` rule that applied); a finished run
keeps its last ``engine.settle.KEEP_FINISHED_ASKS`` asks, without their tool input. So
the counts are over the asks the records keep, for the runs the store listed.

Each ask counts once, by how it ended: approved by a person (unchanged, or with an Edit),
rejected by a person, replied to or retried, expired (the bot's rejection when nobody
answered: ``Decision.expired``), decided by a rule (``Decision.policy``: auto-approved or
auto-rejected), still open, or closed unanswered (``Ask.closed``: the run moved on,
failed, was cancelled, or asked again with other content). Decision times are from the
ask being raised to the decision that decided it, for decisions people made (an expiry or
a rule's decision says nothing about how fast people are).

Everything here is pure: the functions take runs and return typed rows, so the rules can
be tested without a store, and the wording lives in ``bot.render.stats``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from engine.records import Ask, AskStatus, Run, Verdict

DAY = 86400.0
WINDOW_SECONDS = 30 * DAY  # the window ``/graph stats`` reads, unless runs are kept for less
MAX_RUNS_READ = 1000  # the newest runs of the window it reads at most (the reply says when cut)
MIN_CANDIDATE_ASKS = 5  # decided asks a row needs before it is offered as a rule to automate


class Ending(StrEnum):
    """How one ask ended, for counting (first that applies, in this order)."""

    AUTO_APPROVED = "auto_approved"  # a rule decided it (``AskPolicy.auto``)
    AUTO_REJECTED = "auto_rejected"
    EXPIRED = "expired"  # nobody answered in time: the bot rejected it
    APPROVED = "approved"  # a person approved what the card showed (Approve or Trust)
    EDITED = "edited"  # a person approved with an Edit of the tool input
    REJECTED = "rejected"  # a person rejected it
    ANSWERED = "answered"  # a person replied, or chose Retry
    OPEN = "open"  # still waiting for an answer (under a quorum: not enough approvals yet)
    CLOSED = "closed"  # no answer will be used: moved on, changed, failed or cancelled


_HUMAN = frozenset({Ending.APPROVED, Ending.EDITED, Ending.REJECTED, Ending.ANSWERED})


def ending(ask: Ask) -> Ending:
    """How ``ask`` ended, from its record. A decided ask counts by its decision whatever
    happened after (its run may have moved on without it); one without a decision is open
    while pending and closed once obsolete."""
    decision = ask.decision
    if decision is None or ask.status is AskStatus.PENDING:
        return Ending.OPEN if ask.status is AskStatus.PENDING else Ending.CLOSED
    if decision.policy is not None:
        return Ending.AUTO_APPROVED if decision.verdict is Verdict.APPROVE else Ending.AUTO_REJECTED
    if decision.expired:
        return Ending.EXPIRED
    if decision.verdict in (Verdict.APPROVE, Verdict.TRUST):
        return Ending.APPROVED
    if decision.verdict is Verdict.EDIT:
        return Ending.EDITED
    if decision.verdict is Verdict.REJECT:
        return Ending.REJECTED
    return Ending.ANSWERED


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0 < q <= 100) by nearest rank: a value that occurred, the
    smallest one with at least ``q`` percent of the values at or below it. None for none.

    Nearest rank rather than interpolation: with the few decisions a row often has, an
    interpolated "p90" would be a time nobody waited.
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, kw_only=True)
class Row:
    """The asks of one graph with one name under one rule (``label`` None: the graph's terms)."""

    name: str
    label: str | None
    counts: dict[Ending, int] = field(default_factory=dict)
    waits: tuple[float, ...] = ()  # seconds from raised to a person's decision, per ask

    @property
    def asks(self) -> int:
        return sum(self.counts.values())

    def count(self, *endings: Ending) -> int:
        return sum(self.counts.get(e, 0) for e in endings)

    @property
    def decided(self) -> int:
        """Asks that got an answer: from a person, a rule or the expiry."""
        return self.asks - self.count(Ending.OPEN, Ending.CLOSED)

    @property
    def auto(self) -> int:
        return self.count(Ending.AUTO_APPROVED, Ending.AUTO_REJECTED)

    @property
    def median(self) -> float | None:
        return percentile(self.waits, 50)

    @property
    def p90(self) -> float | None:
        return percentile(self.waits, 90)

    @property
    def always_approved(self) -> bool:
        """Every decided ask was approved by a person as shown (no Edit, no rejection, no
        expiry, no rule), and there were at least ``MIN_CANDIDATE_ASKS`` of them: people
        keep saying yes to this one, so a rule could (``auto="approve"``, or one by content)."""
        return self.decided >= MIN_CANDIDATE_ASKS and self.count(Ending.APPROVED) == self.decided


@dataclass(frozen=True, kw_only=True)
class GraphStats:
    graph: str
    runs: int
    rows: tuple[Row, ...]

    @property
    def total(self) -> Row:
        """Every ask of the graph as one row."""
        counts: dict[Ending, int] = {}
        for row in self.rows:
            for end, n in row.counts.items():
                counts[end] = counts.get(end, 0) + n
        return Row(name="", label=None, counts=counts, waits=tuple(w for r in self.rows for w in r.waits))


def tally(runs: Iterable[Run], *, since: float | None = None) -> list[GraphStats]:
    """``runs`` (those created at or after ``since``) counted per graph, then per ask name
    and rule; graphs by name, rows by most asks first."""
    per_graph: dict[str, list[Run]] = {}
    for run in runs:
        if since is None or run.created_at >= since:
            per_graph.setdefault(run.graph, []).append(run)
    return [_graph(graph, per_graph[graph]) for graph in sorted(per_graph)]


def _graph(graph: str, runs: list[Run]) -> GraphStats:
    counts: dict[tuple[str, str | None], dict[Ending, int]] = {}
    waits: dict[tuple[str, str | None], list[float]] = {}
    for run in runs:
        for ask in run.asks.values():
            key = (ask.name, ask.rules.label)
            end = ending(ask)
            row = counts.setdefault(key, {})
            row[end] = row.get(end, 0) + 1
            if end in _HUMAN and ask.decision is not None:
                waits.setdefault(key, []).append(max(0.0, ask.decision.at - ask.created_at))
    rows = [Row(name=k[0], label=k[1], counts=c, waits=tuple(waits.get(k, ()))) for k, c in counts.items()]
    rows.sort(key=lambda r: (-r.asks, r.name, r.label or ""))
    return GraphStats(graph=graph, runs=len(runs), rows=tuple(rows))


def candidates(graphs: Iterable[GraphStats]) -> list[tuple[str, Row]]:
    """The rows people approved unchanged every time (``Row.always_approved``), by graph."""
    return [(g.graph, row) for g in graphs for row in g.rows if row.always_approved]


def window_seconds(retention_seconds: float | None) -> float:
    """The window read: ``WINDOW_SECONDS``, or the retention when runs are kept for less
    (older runs may be gone, so a longer window would count a part of them)."""
    if retention_seconds is None or retention_seconds <= 0:
        return WINDOW_SECONDS
    return min(WINDOW_SECONDS, retention_seconds)
