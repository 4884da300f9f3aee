"""A run's status message in the terminal: one box when it appears, then one line per change.

Driven through the local Slack's real Web API (the calls the bot makes, in the bot's shapes),
so the demo reads the streamed and edited message exactly as ``LocalSlack`` keeps it.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from demo.commands import CHANNEL, CHANNELS, USERS, DemoSession
from demo.console import Console
from demo.progress import PROGRESS, key
from engine import ports
from localslack import LocalSlack


@dataclass
class Channel:
    slack: LocalSlack
    client: AsyncWebClient
    session: DemoSession
    out: io.StringIO

    def said(self) -> list[str]:
        """What was printed since last asked, line by line."""
        lines = self.out.getvalue().splitlines()
        self.out.seek(0), self.out.truncate()
        return lines

    def notes(self) -> list[str]:
        """The one-line notes printed since last asked, each unwrapped."""
        notes: list[str] = []
        for line in self.said():
            if line.startswith("    ") and notes:
                notes[-1] += " " + line.strip()
            else:
                notes.append(line.strip())
        return notes


async def _channel(*, streaming: bool) -> AsyncIterator[Channel]:
    slack = LocalSlack(users=USERS, channels=CHANNELS, streaming=streaming)
    await slack.start()
    out = io.StringIO()
    session = DemoSession(slack=slack, user=None, console=Console(stream=out))  # type: ignore[arg-type]
    try:
        yield Channel(slack, AsyncWebClient(token=slack.bot_token, base_url=slack.api_url), session, out)
    finally:
        await slack.stop()


@pytest.fixture
async def channel() -> AsyncIterator[Channel]:
    async for made in _channel(streaming=True):
        yield made


@pytest.fixture
async def no_streaming() -> AsyncIterator[Channel]:
    async for made in _channel(streaming=False):
        yield made


CARD_LINK = ":raised_hand: <https://local.slack.com/archives/C0DEMO/p1700000000000100?thread_ts=1.2|Approve deploy>"


def _meta(what: str, run: str = "r1") -> dict[str, Any]:
    return {"event_type": "approval_bot_message", "event_payload": {"run_id": run, "what": what}}


def _task(node: str, status: str, word: str) -> dict[str, Any]:
    return {"type": "task_update", "id": node, "title": f"{node} · {word}", "status": status}


def _status(headline: str, lines: list[str], elapsed: float) -> list[dict[str, Any]]:
    """The bot's Block Kit status message: headline, node lines, then a context footer that ticks."""
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{headline}* · 2 nodes"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"Elapsed {elapsed} s · run `r1`"}]},
    ]


async def _announce(c: Channel, run: str = "r1") -> str:
    root = await c.client.chat_postMessage(
        channel=CHANNEL, text="<@U0YOU> started *deploy*", metadata=_meta("announcement", run)
    )
    return str(root["ts"])


async def test_a_streamed_status_message_is_one_box_then_a_line_per_change(channel: Channel) -> None:
    c = channel
    thread = await _announce(c)
    assert c.said()[:2] == ["┌─ run 1 ────────────", "│ @you started deploy"]
    stream = await c.client.chat_startStream(
        channel=CHANNEL,
        thread_ts=thread,
        recipient_user_id="U0YOU",
        recipient_team_id="T0LOCAL",
        task_display_mode="plan",
        chunks=[
            {"type": "plan_update", "title": "deploy: billing 1.2.3"},
            _task("planner", "in_progress", "running"),
            _task("deployer", "pending", "not started"),
        ],
    )
    assert c.said() == [
        "┌─ run 1 status ──────────",
        "│ deploy: billing 1.2.3",
        "│ ◐ planner · running",
        "│ ○ deployer · not started",
        "└─────────────────────────",
    ]
    ts = str(stream["ts"])
    chunks = [_task("planner", "complete", "done"), _task("deployer", "in_progress", "running")]
    await c.client.chat_appendStream(channel=CHANNEL, ts=ts, chunks=chunks)
    assert c.notes() == ["run 1 status: ✓ planner · done; ◐ deployer · running"]
    await c.client.chat_appendStream(channel=CHANNEL, ts=ts, chunks=chunks[1:])  # nothing new
    await c.client.chat_stopStream(channel=CHANNEL, ts=ts, metadata=_meta(PROGRESS))
    assert c.said() == []

    # Saved: the bot edits it into Block Kit. What the stream showed is not repeated, the
    # clock ticking is no change, and a node moving on is; a card's link is its title.
    done = ":white_check_mark: *planner* · done · 0.1 s · 52 tokens"
    edits = [
        ("Waiting for a person", [done, ":raised_hand: *deployer* · waiting for a person · 0.0 s", CARD_LINK], 1.0),
        ("Running", [done, ":large_blue_circle: *deployer* · running · 0.0 s · ran 2 times"], 2.0),
        ("Running", [done, ":large_blue_circle: *deployer* · running · 1.0 s · ran 2 times"], 3.0),
        ("Completed", [done, ":white_check_mark: *deployer* · done · 1.5 s · 90 tokens · ran 2 times"], 3.5),
    ]
    for headline, lines, elapsed in edits:
        blocks = _status(headline, lines, elapsed)
        await c.client.chat_update(channel=CHANNEL, ts=ts, text=headline, blocks=blocks, metadata=_meta(PROGRESS))
    assert c.notes() == [
        "run 1 status: Waiting for a person · 2 nodes; ✋ deployer · waiting for a person · 0.0 s; ✋ Approve deploy",
        "run 1 status: Running · 2 nodes; 🔵 deployer · running · 0.0 s · ran 2 times",
        "run 1 status: Completed · 2 nodes; ✅ deployer · done · 1.5 s · 90 tokens · ran 2 times",
    ]
    assert c.session.updated == 0  # no card changed: a decision is not waited for on these


async def test_where_slack_refuses_streams_the_posted_status_message_is_edited_the_same_way(
    no_streaming: Channel,
) -> None:
    c = no_streaming
    thread = await _announce(c)
    c.said()
    running = _status("Running", [":large_blue_circle: *planner* · running"], 0.0)
    posted = await c.client.chat_postMessage(
        channel=CHANNEL, thread_ts=thread, text="Running", blocks=running, metadata=_meta(PROGRESS)
    )
    shown = c.said()
    assert shown[0].startswith("┌─ run 1 status ─") and "│ 🔵 planner · running" in shown
    assert "│ Elapsed 0.0 s · run 1" in shown  # the box has the footer (the id as its number); lines leave it out
    done = _status("Completed", [":white_check_mark: *planner* · done · 0.2 s"], 0.3)
    await c.client.chat_update(channel=CHANNEL, ts=posted["ts"], text="Done", blocks=done, metadata=_meta(PROGRESS))
    assert c.notes() == ["run 1 status: Completed · 2 nodes; ✅ planner · done · 0.2 s"]


async def test_a_runs_other_replies_are_labelled_with_its_number(channel: Channel) -> None:
    c = channel
    first, second = await _announce(c), await _announce(c, "r2")
    c.said()
    output = [{"type": "context", "elements": [{"type": "mrkdwn", "text": "*planner* finished"}]}]
    await c.client.chat_postMessage(channel=CHANNEL, thread_ts=second, text="planner finished", blocks=output)
    await c.client.chat_postMessage(channel=CHANNEL, thread_ts=first, text="done", metadata=_meta(ports.FINAL))
    await c.client.chat_postMessage(channel=CHANNEL, text="not a run's")
    labels = [line for line in c.said() if line.startswith("┌─")]
    assert [label.split(" ─")[0] for label in labels] == ["┌─ run 2", "┌─ run 1", "┌─ bot"]
    assert c.session.ended == {"r1"}


async def test_a_run_that_fails_before_any_node_starts_shows_no_box_of_nodes_about_to_run(channel: Channel) -> None:
    """A graph whose agent has no offline model fails at once; the stream the bot starts then
    still shows its plan, nothing started. The demo holds it back: the failure, then one line."""
    c = channel
    thread = await _announce(c)
    c.said()
    stream = await c.client.chat_startStream(
        channel=CHANNEL,
        thread_ts=thread,
        recipient_user_id="U0YOU",
        recipient_team_id="T0LOCAL",
        chunks=[{"type": "plan_update", "title": "plain: hello"}, _task("writer", "pending", "not started")],
    )
    await c.client.chat_stopStream(channel=CHANNEL, ts=stream["ts"], metadata=_meta(PROGRESS))
    assert c.said() == []  # held: nothing under way yet
    failed = ":x: *plain* failed at node `writer`: NoCredentialsError: Unable to locate credentials"
    await c.client.chat_postMessage(channel=CHANNEL, thread_ts=thread, text=failed, metadata=_meta(ports.FINAL))
    shown = c.said()
    assert shown[0].startswith("┌─ run 1 ─") and shown[1].startswith("│ ❌ plain failed at node writer")
    blocks = _status("Failed", [":x: *writer* · failed · 0.0 s"], 0.0)
    await c.client.chat_update(channel=CHANNEL, ts=stream["ts"], text="Failed", blocks=blocks, metadata=_meta(PROGRESS))
    assert c.notes() == ["run 1 status: Failed · 2 nodes; ❌ writer · failed · 0.0 s"]  # a line, not a box
    assert c.session.summary() == "0 runs finished, 1 failed, 0 waiting"
    assert c.session.finished() == 0


async def test_a_status_message_first_seen_after_the_runs_end_is_one_line(no_streaming: Channel) -> None:
    c = no_streaming
    thread = await _announce(c)
    failed = ":x: *plain* failed at node `writer`: boom"
    await c.client.chat_postMessage(channel=CHANNEL, thread_ts=thread, text=failed, metadata=_meta(ports.FINAL))
    c.said()
    blocks = _status("Failed", [":x: *writer* · failed · 0.0 s"], 0.0)
    await c.client.chat_postMessage(
        channel=CHANNEL, thread_ts=thread, text="Failed", blocks=blocks, metadata=_meta(PROGRESS)
    )
    assert c.notes() == ["run 1 status: Failed · 2 nodes; ❌ writer · failed · 0.0 s"]


async def test_a_held_status_message_is_shown_whole_once_a_node_starts(channel: Channel) -> None:
    c = channel
    thread = await _announce(c)
    c.said()
    stream = await c.client.chat_startStream(
        channel=CHANNEL,
        thread_ts=thread,
        recipient_user_id="U0YOU",
        recipient_team_id="T0LOCAL",
        chunks=[{"type": "plan_update", "title": "deploy: x"}, _task("planner", "pending", "not started")],
    )
    assert c.said() == []
    await c.client.chat_appendStream(
        channel=CHANNEL, ts=stream["ts"], chunks=[_task("planner", "in_progress", "running")]
    )
    shown = c.said()
    assert shown[0].startswith("┌─ run 1 status ─") and shown[1:3] == ["│ deploy: x", "│ ◐ planner · running"]


@pytest.mark.parametrize(
    ("text", "ending"),
    [
        (":white_check_mark: *deploy* finished: ok", "finished"),
        (":no_entry: *cleanup* finished after a rejection by <@U0YOU>: no", "finished"),
        (":no_entry: *node-gate* stopped: rejected, node not run", "stopped"),
        (":x: *plain* failed at node `writer`: boom", "failed"),
        (":no_entry_sign: *deploy* was cancelled by <@U0YOU>", "cancelled"),
    ],
)
async def test_the_summary_counts_each_run_by_how_it_ended(channel: Channel, text: str, ending: str) -> None:
    c = channel
    thread = await _announce(c)
    await c.client.chat_postMessage(channel=CHANNEL, thread_ts=thread, text=text, metadata=_meta(ports.FINAL))
    assert c.session.endings == {"r1": ending}
    expected = "1 run finished, 0 waiting" if ending == "finished" else f"0 runs finished, 1 {ending}, 0 waiting"
    assert c.session.summary() == expected


def test_a_line_is_known_by_its_node_and_state_not_its_clock() -> None:
    assert key("✅ planner · done · 0.1 s · 52 tokens") == "planner · done"
    assert key("✓ planner · done") == "planner · done"
    assert key("🔵 deployer · running · 3.0 s · ran 2 times") == key("◐ deployer · running")
    assert key("Waiting for a person · 3 nodes") == "Waiting for a person · 3 nodes"
    assert key("✋ Approve deploy (its card is in this thread)") == "Approve deploy (its card is in this thread)"


def test_the_demo_knows_the_status_message_as_the_bot_marks_it() -> None:
    assert ports.PROGRESS == PROGRESS
