"""``ASK_ALARM_AFTER`` through the real server and its sweeper, on both stores.

The asks-waiting alarm reads ``OldestAskAge``, which a sweep reports only for the runs it
reads; a waiting run is read only when one of its asks has a deadline due. With the setting,
every ask gets a reminder just past the threshold: the approvers are nudged then, and the
sweep that posts the nudge reports an age above the threshold (the alarm goes off), where
without it the graph's default terms (a reminder halfway to three days) would keep the run
unread for 36 hours.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.policy import ALARM_MARGIN
from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, all_text, cards, run_of
from tests.support.emf import datapoints, values_of

THRESHOLD = 1.0  # ASK_ALARM_AFTER, seconds


@pytest.fixture(autouse=True)
def usergroups(local_slack: LocalSlack) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])


def _reminders(slack: LocalSlack) -> list[dict[str, Any]]:
    return [m for m in slack.messages(CHANNEL) if "Reminder" in all_text(m)]


async def test_an_ask_past_the_alarm_threshold_is_reminded_and_reported(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    bot = await start_bot(
        backend=backend,
        extra_env={"METRICS": "on", "ASK_ALARM_AFTER": f"{THRESHOLD:g}"},
        args=["--sweep-seconds", "1"],
    )
    user = user_for(bot)
    # guarded-approvers: U0ALICE or S0OPS decide, and the deployment's three-day expiry.
    await user.slash_command(text="run guarded-approvers hello", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the card")
    (reminder,) = await local_slack.wait_for(lambda: _reminders(local_slack), timeout=15, what="the alarm's reminder")
    assert "<@U0ALICE>" in all_text(reminder) and reminder.get("thread_ts") == card["thread_ts"]
    await bot.stop()  # the last EMF flush

    run = run_of(backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert ask.rules.remind_at[0] == pytest.approx(ask.created_at + THRESHOLD + ALARM_MARGIN)
    assert ask.notices == ("remind",), "one nudge, at the threshold; the default one is 36 h away"
    (reminded,) = [e for e in run.audit if e.kind == "reminded"]
    assert reminded.at >= ask.created_at + THRESHOLD + ALARM_MARGIN

    ages = values_of(datapoints(bot.output()), "OldestAskAge")
    assert max(ages) > THRESHOLD, f"the alarm (GreaterThanThreshold) would not go off: {ages}"
    assert max(ages) < 30, ages
