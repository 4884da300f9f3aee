"""The metric catalog, and the metrics the real engine counts on the real SQLite store.

A recording meter is installed for each test; the engine runs real Strands graphs (the
scripted model) so each count comes from where the facts are saved (``engine.audit.log``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from engine import metrics
from engine.ports import PublishError
from engine.records import Ask, Decision, MessageRef, Run, RunStatus, Verdict
from engine.store import StoreError
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource
from tests.support.meters import RecordingMeter

# The catalog of the issue that asked for the metrics: name, unit, dimensions.
ISSUE_CATALOG = {
    "AsksRaised": ("Count", ("graph",)),
    "Decisions": ("Count", ("graph", "outcome")),
    "TimeToDecision": ("Seconds", ("graph",)),
    "AutoDecisions": ("Count", ("graph",)),
    "Expiries": ("Count", ("graph",)),
    "RunsEnded": ("Count", ("graph", "outcome")),
    "PassDuration": ("Milliseconds", ("graph",)),
    "SlackErrors": ("Count", ()),
    "SlackRetries": ("Count", ()),
    "StoreErrors": ("Count", ()),
    "DeliveriesOwed": ("Count", ()),
    "OldestAskAge": ("Seconds", ()),
    "SweeperRuns": ("Count", ()),
}


def engine_at(store: SqliteRunStore, publisher: RecordingPublisher, ahead: float = 0.0):  # type: ignore[no-untyped-def]
    from engine import RunEngine

    made = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    if ahead:
        made._clock = lambda: time.time() + ahead  # type: ignore[method-assign]
    return made


def test_the_catalog_is_the_issues_with_a_line_each() -> None:
    assert {m.name: (m.unit, m.dimensions) for m in metrics.CATALOG} == ISSUE_CATALOG
    assert all(m.counts for m in metrics.CATALOG)
    with pytest.raises(ValueError, match="takes dimensions"):
        metrics.add(metrics.DECISIONS, graph="g")  # a dimension left out would be another metric


def test_the_docs_list_each_metric_with_its_unit_and_dimensions() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in doc.splitlines() if line.startswith("| `")}
    for metric in metrics.CATALOG:
        row = rows.get(metric.name)
        assert row is not None, f"{metric.name} is missing from docs/metrics.md"
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert cells[1] == metric.unit, row
        assert cells[2] == (", ".join(f"`{d}`" for d in metric.dimensions) or "none"), row


async def test_an_approval_cycle_counts_once_each(store, publisher, meter: RecordingMeter) -> None:  # type: ignore[no-untyped-def]
    engine = engine_at(store, publisher)
    run = await engine.start(graph="guarded-write", task="hello", user="U0", channel="C1")
    key = run.pending_asks()[0].key
    decision = Decision(verdict=Verdict.APPROVE, user="U1", at=time.time() + 5)
    result = await engine.decide(run_id=run.run_id, ask_key=key, decision=decision)
    final = await engine.follow_up(result)
    assert final is not None and final.status is RunStatus.COMPLETED

    g = "guarded-write"
    assert meter.of("AsksRaised", graph=g) == [1.0]
    assert meter.of("Decisions", graph=g, outcome="approved") == [1.0]
    (waited,) = meter.of("TimeToDecision", graph=g)
    assert 5.0 <= waited < 60.0
    assert meter.of("RunsEnded", graph=g, outcome="completed") == [1.0]
    assert len(meter.of("PassDuration", graph=g)) == 2 and all(ms > 0 for ms in meter.of("PassDuration", graph=g))
    assert meter.names() == {"AsksRaised", "Decisions", "TimeToDecision", "RunsEnded", "PassDuration"}


async def test_rules_and_expiries_count_as_their_own_outcomes(store, publisher, meter: RecordingMeter) -> None:  # type: ignore[no-untyped-def]
    auto = await engine_at(store, publisher).start(graph="payout-rules", task="5", user="U0REQ", channel="C1")
    assert auto.status is RunStatus.COMPLETED
    assert meter.of("Decisions", graph="payout-rules", outcome="auto_approved") == [1.0]
    assert meter.of("AutoDecisions", graph="payout-rules") == [1.0]
    assert meter.of("AsksRaised", graph="payout-rules") == [1.0]

    run = await engine_at(store, publisher).start(graph="guarded-expiring", task="t", user="U0REQ", channel="C1")
    (swept,) = await engine_at(store, publisher, ahead=31).sweep()
    assert swept.run_id == run.run_id and swept.status is RunStatus.COMPLETED
    assert meter.of("Expiries", graph="guarded-expiring") == [1.0]
    assert meter.of("Decisions", graph="guarded-expiring", outcome="expired") == [1.0]
    assert meter.of("TimeToDecision", graph="guarded-expiring") == [], "an expiry says nothing of people's speed"
    assert meter.of("SweeperRuns") == [1.0]
    ages = meter.of("OldestAskAge")
    assert max(ages) >= 30.0, "the sweep saw the expiring ask waiting 31 s"


class NoCards(RecordingPublisher):
    """Slack refuses every card: the run waits owing it."""

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        raise PublishError("channel_not_found")


async def test_a_sweep_counts_what_is_owed_and_a_store_error_is_counted(store, meter: RecordingMeter) -> None:  # type: ignore[no-untyped-def]
    run = await engine_at(store, NoCards()).start(graph="guarded-write", task="x", user="U0", channel="C1")
    assert run.owes_slack
    await engine_at(store, NoCards(), ahead=3600).sweep()
    assert meter.of("SweeperRuns") == [1.0]
    assert sum(meter.of("DeliveriesOwed")) == 1.0
    assert max(meter.of("OldestAskAge")) >= 3600.0

    with pytest.raises(StoreError):
        store.run_statuses([object()])  # sqlite3 refuses the parameter: StoreBroken
    assert meter.of("StoreErrors") == [1.0]


class ClickDuringPass(SqliteRunStore):
    """The real store; the pass's first save finds a click that landed on the other ask
    while the pass ran (another process's engine recorded it): the save conflicts, merges."""

    clicked: Decision | None = None
    other_ask: str = ""

    def save(self, run: Run, *, expected_version: int, write_id: str | None = None) -> Run:
        if self.clicked is not None and run.status is RunStatus.WAITING and run.run_id:
            decision, self.clicked = self.clicked, None
            other = engine_at(self, RecordingPublisher())
            asyncio.run(other.decide(run_id=run.run_id, ask_key=self.other_ask, decision=decision))
        return super().save(run, expected_version=expected_version, write_id=write_id)


async def test_a_click_landed_during_a_pass_is_counted_once(tmp_path: Path, publisher, meter: RecordingMeter) -> None:  # type: ignore[no-untyped-def]
    """Its decision is counted by the process that recorded it, not again by the pass whose
    save adopted it (``Saver.save`` merges it into the pass's trail)."""
    store = ClickDuringPass(tmp_path / "runs.db")
    engine = engine_at(store, publisher)
    run = await engine.start(graph="two-asks", task="t", user="U0", channel="C1")
    left, right = sorted(a.key for a in run.pending_asks())
    store.other_ask = right
    store.clicked = Decision(verdict=Verdict.APPROVE, user="U2", at=time.time())
    approve = Decision(verdict=Verdict.APPROVE, user="U1", at=time.time())
    decided = await engine.decide(run_id=run.run_id, ask_key=left, decision=approve, claim=True)
    await engine.follow_up(decided)
    assert store.clicked is None, "the click landed during the pass"

    assert meter.of("Decisions", graph="two-asks", outcome="approved") == [1.0, 1.0], "each answer once"
    assert len(meter.of("TimeToDecision", graph="two-asks")) == 2


async def test_the_sweep_sees_a_waiting_ask_at_its_reminder_not_before(store, publisher, meter: RecordingMeter) -> None:  # type: ignore[no-untyped-def]
    """What the asks-waiting alarm can see (docs/operations.md, "Asks waiting too long"):
    a waiting run is read by a sweep only when something is due on it, so an ask's age is
    reported at its reminder (halfway to its expiry by default), not at any earlier age."""
    run = await engine_at(store, publisher).start(graph="guarded-write", task="t", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    (remind_at,) = ask.rules.remind_at
    early = (remind_at - ask.created_at) / 2
    await engine_at(store, publisher, ahead=early).sweep()
    assert max(meter.of("OldestAskAge")) == 0.0, "not due: not read, whatever its age"
    await engine_at(store, publisher, ahead=remind_at - ask.created_at + 1).sweep()
    assert max(meter.of("OldestAskAge")) >= remind_at - ask.created_at


async def test_an_ask_raised_again_after_a_takeover_counts_as_raised(store, publisher, meter: RecordingMeter) -> None:  # type: ignore[no-untyped-def]
    """A "may have acted" ask is a new ask on a card that someone decides: counted as raised,
    so that the asks raised and the decisions add up on the dashboard."""
    from tests.engine.conftest import died_holding_approval

    died = await died_holding_approval(store, publisher)
    sweeper = engine_at(store, publisher)
    (swept,) = await sweeper.sweep()
    (again,) = swept.pending_asks()
    retry = Decision(verdict=Verdict.RETRY, user="U1", at=time.time())
    done = await sweeper.follow_up(
        await sweeper.decide(run_id=died.run_id, ask_key=again.key, decision=retry, claim=True)
    )
    assert done is not None and done.status is RunStatus.COMPLETED
    g = "guarded-write"
    raised = sum(meter.of("AsksRaised", graph=g))
    decided = sum(sum(meter.of("Decisions", graph=g, outcome=o)) for o in metrics.DECISION_OUTCOMES)
    assert (raised, decided) == (2.0, 2.0)
