"""The audit trail as Slack messages: one line per event, escaped, cut to Slack's limits."""

from __future__ import annotations

from typing import Any

import pytest

from bot.render.audit import MAX_LINES, audit_trail, event_line, who_may
from engine.audit import KINDS, MAX_EVENTS, AuditEvent
from engine.records import Run, RunStatus
from tests.bot.render import all_text, assert_harmless, assert_within_limits

NOW = 1_800_000_000.0


def make_run(**changes: Any) -> Run:
    base = Run(
        run_id="abcdefghijklmnop",
        graph="deploy",
        task="ship v2",
        started_by="U0ALICE",
        status=RunStatus.WAITING,
        version=1,
        created_at=NOW,
        updated_at=NOW,
    )
    return base.evolve(**changes)


def event_lines(messages: list[Any]) -> list[str]:
    return [
        line
        for m in messages
        for b in m.blocks
        if b["type"] == "section"
        for line in b["text"]["text"].split("\n")
        if line.startswith("<!date^")
    ]


def test_an_event_line_says_when_who_what_which_card_and_what_was_said() -> None:
    event = AuditEvent(at=NOW, kind="decided", by="U0BOB", ask="k7", text="approve: looks <b>good</b> & <!channel>")
    line = event_line(event)
    assert line.startswith(f"<!date^{int(NOW)}^{{date_short_pretty}} at {{time}}|2027-01-15 08:00 UTC>")
    assert "<@U0BOB>" in line and KINDS["decided"] in line and "card `k7`" in line
    assert "approve: looks &lt;b&gt;good&lt;/b&gt; &amp; &lt;!channel&gt;" in line
    assert_harmless(line)


def test_the_bot_acts_without_a_mention() -> None:
    line = event_line(AuditEvent(at=NOW, kind="expired", ask="k1"))
    assert "the bot · expired" in line and "<@" not in line


@pytest.mark.parametrize(
    "event",
    [
        AuditEvent(at=NOW, kind="<!here> new kind", by="U0BOB"),
        AuditEvent(at=NOW, kind="decided", by="not an id <!channel>"),
        AuditEvent(at=NOW, kind="decided", by="U0BOB", ask="`<@U0EVE>`"),
        AuditEvent(at=NOW, kind="decided", by="U0BOB", text="line one\nline two\n> quoted <https://x|y>"),
    ],
)
def test_foreign_text_stays_inert_and_on_one_line(event: AuditEvent) -> None:
    line = event_line(event)
    assert_harmless(line)
    assert "\n" not in line
    assert "<@U0EVE>" not in line


def test_a_short_trail_is_one_message() -> None:
    events = (
        AuditEvent(at=NOW + 1, kind="asked", ask="k1", text="Deploy?"),
        AuditEvent(at=NOW, kind="started", by="U0ALICE", text="deploy: ship v2"),
        AuditEvent(at=NOW + 2, kind="decided", by="U0BOB", ask="k1", text="approve"),
    )
    [message] = audit_trail(run=make_run(audit=events))
    assert_within_limits(message)
    text = all_text(message)
    assert "Audit trail of run `abcdefghijklmnop`" in text and "(deploy)" in text
    lines = event_lines([message])
    assert [KINDS[k] in line for k, line in zip(["started", "asked", "decided"], lines, strict=True)] == [True] * 3
    assert "not kept" not in text


def test_an_empty_trail_says_so() -> None:
    [message] = audit_trail(run=make_run())
    assert_within_limits(message)
    assert "No events are recorded" in all_text(message)


def test_dropped_events_are_counted_and_the_log_named() -> None:
    [message] = audit_trail(run=make_run(audit=(AuditEvent(at=NOW, kind="resumed"),), audit_dropped=42))
    assert_within_limits(message)
    assert "42 earlier events are not kept here; the bot's log has every event" in all_text(message)


def test_a_full_trail_is_cut_into_messages_within_limits() -> None:
    events = tuple(
        AuditEvent(at=NOW + i, kind="decided", by="U0BOB", ask=f"k{i}", text=f"event {i} " + "x" * 100)
        for i in range(MAX_EVENTS)
    )
    messages = audit_trail(run=make_run(audit=events))
    assert len(messages) == 3  # 100 events, at most 40 lines a message
    for message in messages:
        assert_within_limits(message)
        assert len(event_lines([message])) <= MAX_LINES
    lines = event_lines(messages)
    assert len(lines) == MAX_EVENTS
    assert "event 0 " in lines[0] and f"event {MAX_EVENTS - 1} " in lines[-1]
    assert "continued (2 of 3)" in all_text(messages[1])


def test_the_worst_trail_keeps_the_newest_events_and_counts_the_rest() -> None:
    """Texts full of characters that grow when escaped: more than the messages allowed can hold."""
    events = tuple(
        AuditEvent(at=NOW + i, kind="refused", by="U0BOB", ask="k" * 40, text=f"{i:03}" + "&" * 400)
        for i in range(MAX_EVENTS)
    )
    messages = audit_trail(run=make_run(audit=events, audit_dropped=7))
    assert len(messages) == 4
    for message in messages:
        assert_within_limits(message)
        for block in message.blocks:
            assert len(block.get("text", {}).get("text", "")) <= 3000
        assert len(message.blocks) < 50
    lines = event_lines(messages)
    assert 0 < len(lines) < MAX_EVENTS
    assert f"{MAX_EVENTS - 1:03}" in lines[-1]  # the newest event is shown
    first = all_text(messages[0])
    assert "7 earlier events are not kept here" in first
    assert f"{MAX_EVENTS - len(lines)} earlier events are not shown" in first


@pytest.mark.parametrize(
    ("ids", "first", "expected"),
    [
        ((), "", ""),
        (("U0BOB",), "", "<@U0BOB>"),
        (("U0BOB", "S0OPS"), "", "<@U0BOB> or <!subteam^S0OPS>"),
        (("U0BOB", "W0ENT", "S0OPS"), "", "<@U0BOB>, <@W0ENT> or <!subteam^S0OPS>"),
        (("U0BOB",), "whoever started it", "whoever started it or <@U0BOB>"),
        ((), "whoever started it", "whoever started it"),
        (("U0BOB", "U0BOB", "<!channel>", "u0lower", "C0CHAN", "S0OPS|@here"), "", "<@U0BOB>"),
        (("U0ALICE", "U0BOB"), "<@U0ALICE>", "<@U0ALICE> or <@U0BOB>"),
    ],
)
def test_who_may(ids: tuple[str, ...], first: str, expected: str) -> None:
    assert who_may(ids, first=first) == expected


def test_who_may_lists_at_most_ten_items() -> None:
    text = who_may([f"U0USER{i:02}" for i in range(25)])
    assert text.count("<@") == 9 and text.endswith(" or 16 more"), "ten items: nine named, the rest counted"
