"""``runs`` and ``status <run id>``: parsed and checked in the ack, handed off as work."""

from __future__ import annotations

import pytest

from bot.handoff import HandoffFailed
from bot.listeners.commands import Command, UsageError, parse_command
from bot.render.usage import help_text
from bot.work import ListRuns, ShowStatus, Work
from tests.bot.listeners.test_commands_oversight import FakeHandoff, run_command

RUN = "abcdefghijklmnop"


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("runs", Command(action="runs")),
        ("  RUNS  ", Command(action="runs")),
        (f"status {RUN}", Command(action="status", run_id=RUN)),
        (f"Status `{RUN.upper()}`", Command(action="status", run_id=RUN)),
        ("status 234567abcdefghij", Command(action="status", run_id="234567abcdefghij")),
    ],
)
def test_parse_runs_and_status(text: str, command: Command) -> None:
    assert parse_command(text) == command


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("runs all", "`runs` takes no arguments."),
        ("runs C0OTHER", "`runs` takes no arguments."),
        ("status", "Name the run: the id in backticks under its announcement. Usage: `/graph status &lt;run id&gt;`"),
        (f"status {RUN} {RUN}", "`status` takes one run id"),
        ("status abc", "`abc` is not a run id"),
        ("status abcdefghijklmnop1", "is not a run id"),
        ("status <!channel>", "`&lt;!channel&gt;` is not a run id"),
        ("status " + "b" * 100, "`" + "b" * 39 + "…` is not a run id"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_command(text)
    assert problem in str(raised.value)
    assert "\n" not in str(raised.value)


def test_help_names_the_new_subcommands() -> None:
    text = help_text(command="/graph")
    assert "`/graph runs`: show the latest runs in this channel" in text
    assert "`/graph status &lt;run id&gt;`" in text


@pytest.mark.parametrize(
    ("text", "work"),
    [
        ("runs", ListRuns(channel="C1", user="U0ALICE", response_url="https://x/y")),
        (f"status `{RUN}`", ShowStatus(run_id=RUN, user="U0ALICE", response_url="https://x/y", channel="C1")),
    ],
)
async def test_the_listener_hands_off_the_work(text: str, work: Work) -> None:
    handoff = FakeHandoff()
    ack = await run_command(text, handoff)
    assert handoff.submitted == [work]
    assert ack.calls == [{}]


@pytest.mark.parametrize("text", ["status <@U0BOB>", "runs please"])
async def test_bad_input_is_answered_in_the_ack_and_nothing_handed_off(text: str) -> None:
    handoff = FakeHandoff()
    ack = await run_command(text, handoff)
    assert handoff.submitted == []
    [answer] = ack.calls
    assert answer["text"].startswith(":warning:") and "<@U0BOB>" not in answer["text"]


@pytest.mark.parametrize("text", ["runs", f"status {RUN}"])
async def test_a_failed_handoff_is_told_in_the_ack(text: str) -> None:
    ack = await run_command(text, FakeHandoff(fail=HandoffFailed("busy")))
    [answer] = ack.calls
    assert answer["text"] == "I could not do that just now (busy). Try again in a moment."
