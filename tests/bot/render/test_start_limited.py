"""The one ephemeral line for a start refused by the person's share."""

from __future__ import annotations

from bot.render.messages import start_limited
from engine.ports import StartLimited


def test_the_per_minute_line_says_the_limit_the_count_and_when() -> None:
    limited = StartLimited(limit="per_minute", allowed=10, have=10, retry_at=120.0)
    assert start_limited(limited=limited, now=96.5) == (
        "You have started 10 runs this minute; one person may start 10 a minute, "
        "so this one did not start: try again in 24 s."
    )
    assert "try again in 1 s." in start_limited(limited=limited, now=119.99), "never 0 s"


def test_the_waiting_line_names_the_oldest_runs_and_where_to_look() -> None:
    limited = StartLimited(limit="waiting", allowed=2, have=2, runs=("aaaa", "bb`b"))
    line = start_limited(limited=limited, now=0.0, command="/ops<x>")
    assert line.startswith("You have 2 unfinished runs (oldest: `aaaa`, `bb'b`); one person may have 2 at once")
    assert "`/ops&lt;x&gt; cancel`" in line and "`/ops&lt;x&gt; pending`" in line and "\n" not in line
