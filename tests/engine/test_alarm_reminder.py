"""``ASK_ALARM_AFTER``: every ask raised gets a reminder just past the asks-waiting alarm's
threshold, so that the sweeper reads its run then and reports ``OldestAskAge`` above the
threshold (the alarm is GreaterThanThreshold; docs/operations.md, "Asks waiting too long").
"""

from __future__ import annotations

import time

from engine.policy import ALARM_MARGIN, AskRules, Policy
from engine.records import Ask, AskStatus
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource
from tests.support.meters import RecordingMeter

DAY = 86400.0


def _reminders(policy: Policy, *, alarm_after: float | None, expires_after: float = 3 * DAY) -> tuple[float, ...]:
    rules = policy.rules_for(
        name="approve", tool=None, now=1000.0, default_expires_after=expires_after, alarm_after=alarm_after
    )
    return tuple(t - 1000.0 for t in rules.remind_at)


def test_the_alarm_adds_one_reminder_just_past_its_threshold() -> None:
    assert _reminders(Policy(), alarm_after=None) == (1.5 * DAY,), "unset: the policy's reminders only"
    assert _reminders(Policy(), alarm_after=DAY) == (DAY + ALARM_MARGIN, 1.5 * DAY)
    # A graph's own reminders are kept, and a graph that asks for none still gets the alarm's.
    assert _reminders(Policy(remind_after=(60.0, 2 * DAY)), alarm_after=DAY) == (60.0, DAY + ALARM_MARGIN, 2 * DAY)
    assert _reminders(Policy(remind_after=()), alarm_after=DAY) == (DAY + ALARM_MARGIN,)
    # A reminder of the graph's at the threshold becomes the alarm's: one nudge, not two.
    assert _reminders(Policy(remind_after=(DAY,)), alarm_after=DAY) == (DAY + ALARM_MARGIN,)
    # An ask that expires first is read at its expiry anyway: no reminder at or past it.
    assert _reminders(Policy(), alarm_after=DAY, expires_after=DAY) == (0.5 * DAY,)


def test_the_rule_is_frozen_with_the_ask() -> None:
    rules = Policy().rules_for(name="a", tool=None, now=0.0, default_expires_after=3 * DAY, alarm_after=DAY)
    assert AskRules.from_dict(rules.to_dict()).remind_at == (DAY + ALARM_MARGIN, 1.5 * DAY)


def test_a_skipped_reminder_counts_as_claimed_for_the_next_sweep_time() -> None:
    """Two reminders overdue at one sweep: the first is skipped, the second posted. The
    next deadline is then the expiry, not the skipped one's past time (due at every sweep)."""
    rules = AskRules(expires_at=100.0, remind_at=(10.0, 20.0))
    ask = Ask(
        key="k",
        interrupt_id="i",
        name="n",
        reason=None,
        node_id=None,
        status=AskStatus.PENDING,
        created_at=0.0,
        rules=rules,
        notices=("skip", "remind"),
    )
    assert ask.next_deadline() == 100.0


async def test_the_sweep_at_the_threshold_reports_an_age_above_it(
    store: SqliteRunStore, publisher: RecordingPublisher, meter: RecordingMeter
) -> None:
    """Through the engine: the alarm's reminder makes the run due just past the threshold,
    the sweep that posts it reads the run, and ``OldestAskAge`` > the threshold (with the
    defaults alone the run would not be read until the reminder at 36 h)."""
    from engine import RunEngine

    def engine(ahead: float = 0.0) -> RunEngine:
        made = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, ask_alarm_after=DAY)
        made._clock = lambda: time.time() + ahead  # type: ignore[method-assign]
        return made

    run = await engine().start(graph="guarded-write", task="t", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    await engine(ahead=DAY - 60).sweep()
    assert max(meter.of("OldestAskAge")) == 0.0, "before the threshold: not read"
    await engine(ahead=DAY + ALARM_MARGIN + 1).sweep()
    assert max(meter.of("OldestAskAge")) > DAY
    assert [e for e in publisher.events if e[0] == "notice"] == [("notice", run.run_id, f"{ask.key}:remind")]
