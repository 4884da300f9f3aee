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
