"""One line going wrong costs that line, never the session and its runs."""

from __future__ import annotations

import io
from typing import Any

from demo.commands import CHANNEL, FINAL, USERS, DemoSession
from demo.console import Console
from demo.session import _handle
from engine import ports
from localslack import LocalSlack


class BrokenUser:
    """A user whose every request fails the way a dropped connection does."""

    async def slash_command(self, **_: Any) -> Any:
        raise ConnectionResetError("connection reset\nby peer")


async def test_an_unexpected_error_is_one_line_and_the_prompt_comes_back() -> None:
    stream = io.StringIO()
    slack = LocalSlack(users=USERS, channels={CHANNEL: "demo"})
    session = DemoSession(slack=slack, user=BrokenUser(), console=Console(stream=stream))  # type: ignore[arg-type]
    assert await _handle(session, "/graph run deploy billing 1.2.3") is True
    assert stream.getvalue() == "  that went wrong: ConnectionResetError: connection reset\n"
    assert await _handle(session, "quit") is False


def test_the_demo_knows_a_runs_last_message_as_the_bot_marks_it() -> None:
    assert ports.FINAL == FINAL


class OneCardSlack:
    """A channel holding one card with Reject, Reply and Edit buttons."""

    def __init__(self) -> None:
        self.on_change: list[Any] = []

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        buttons = [{"type": "button", "text": {"type": "plain_text", "text": t}} for t in ("Reject", "Reply", "Edit")]
        return {"blocks": [{"type": "actions", "elements": buttons}]}


class ClickingUser:
    def __init__(self) -> None:
        self.clicks: list[str] = []

    async def click(self, *, label: str, **_: Any) -> Any:
        self.clicks.append(label)
        raise AssertionError("the demo clicked")


async def test_text_over_slacks_limit_and_odd_card_numbers_are_one_line_and_click_nothing() -> None:
    stream, user = io.StringIO(), ClickingUser()
    session = DemoSession(slack=OneCardSlack(), user=user, console=Console(stream=stream))  # type: ignore[arg-type]
    session.cards.append((CHANNEL, "1.0"))
    for line, says in (
        (
            "reject 1 " + "r" * 4213,
            "a reason can be at most 3,000 characters (Slack's limit for a text box); yours has 4,213",
        ),
        ("reply 1 " + "y" * 3001, "a reply can be at most 3,000 characters"),
        ("edit 1 {" + '"a": 1, ' * 500 + "}", "the new input can be at most 3,000 characters"),
    ):
        stream.seek(0), stream.truncate()
        assert await _handle(session, line) is True
        said = " ".join(stream.getvalue().split())  # one message, wrapped to the width
        assert said.startswith(says), said
    for line in ("approve ²", "reject \u0661", "reply " + "9" * 5000 + " hi", "reject 1.0"):
        stream.seek(0), stream.truncate()
        assert await _handle(session, line) is True
        assert stream.getvalue().startswith("  which card?"), stream.getvalue()
    assert user.clicks == []


def test_a_walk_through_step_waits_longer_than_the_bot_takes_between_two_status_edits() -> None:
    from bot.progress import UPDATE_INTERVAL
    from demo.session import STEP_QUIET

    assert STEP_QUIET > UPDATE_INTERVAL
