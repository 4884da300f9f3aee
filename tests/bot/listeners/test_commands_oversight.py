"""``cancel <run id>`` and ``audit <run id>``: parsed and checked in the ack, handed off as work."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from bot.handoff import HandoffFailed
from bot.listeners.commands import Command, UsageError, parse_command, register
from bot.render.usage import help_text
from bot.work import CancelRun, ShowAudit, Work

RUN = "abcdefghijklmnop"


@pytest.mark.parametrize(
    ("text", "command"),
    [
        (f"cancel {RUN}", Command(action="cancel", run_id=RUN)),
        (f"  CANCEL   {RUN}  ", Command(action="cancel", run_id=RUN)),
        (f"cancel `{RUN}`", Command(action="cancel", run_id=RUN)),  # copied with its backticks
        (f"cancel {RUN.upper()}", Command(action="cancel", run_id=RUN)),
        (f"audit {RUN}", Command(action="audit", run_id=RUN)),
        ("Audit 234567abcdefghij", Command(action="audit", run_id="234567abcdefghij")),
    ],
)
def test_parse_cancel_and_audit(text: str, command: Command) -> None:
    assert parse_command(text) == command


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("cancel", "Name the run: the id in backticks under its announcement. Usage: `/graph cancel &lt;run id&gt;`"),
        ("audit   ", "Name the run: the id in backticks under its announcement. Usage: `/graph audit &lt;run id&gt;`"),
        (f"cancel {RUN} now", "`cancel` takes one run id"),
        (f"audit {RUN} {RUN}", "`audit` takes one run id"),
        ("cancel abc", "`abc` is not a run id"),
        ("audit abcdefghijklmnop1", "`abcdefghijklmnop1` is not a run id"),  # 1 is not base32
        ("audit abcdefghijklmno8", "is not a run id"),
        ("cancel ../../../etc/passwd", "`../../../etc/passwd` is not a run id"),
        ("cancel <@U0BOB>", "`&lt;@U0BOB&gt;` is not a run id"),
        ("cancel " + "a" * 100, "`" + "a" * 39 + "…` is not a run id"),
        ("cancel `a`b`", "`'a'b'` is not a run id"),
    ],
)
def test_bad_run_ids_are_one_line_usage_errors(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_command(text)
    assert problem in str(raised.value)
    assert "\n" not in str(raised.value)


def test_help_names_the_new_subcommands() -> None:
    text = help_text(command="/graph")
    assert "`/graph cancel &lt;run id&gt;`" in text
    assert "`/graph audit &lt;run id&gt;`" in text


# --- the listener ---------------------------------------------------------------------


class FakeApp:
    def __init__(self) -> None:
        self.handlers: dict[str, Callable[..., Awaitable[None]]] = {}

    def command(self, name: str) -> Callable[[Callable[..., Awaitable[None]]], None]:
        def add(fn: Callable[..., Awaitable[None]]) -> None:
            self.handlers[name] = fn

        return add


class FakeHandoff:
    budget = 0.0

    def __init__(self, fail: HandoffFailed | None = None) -> None:
        self.submitted: list[Work] = []
        self.fail = fail

    async def submit(self, work: Work) -> None:
        if self.fail is not None:
            raise self.fail
        self.submitted.append(work)


class Acks:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)


async def run_command(text: str, handoff: FakeHandoff, *, graphs: list[tuple[str, str]] | None = None) -> Acks:
    """``text`` through the registered listener; ``graphs``: what the process has loaded (None: nothing yet)."""
    app = FakeApp()
    services: Any = SimpleNamespace(slack=SimpleNamespace(command="/graph"), loaded_graphs=lambda: graphs)
    register(app, services=services, handoff=handoff)  # type: ignore[arg-type]
    ack = Acks()
    payload = {"text": text, "user_id": "U0ALICE", "channel_id": "C1", "response_url": "https://x/y"}
    await app.handlers["/graph"](ack=ack, command=payload)
    return ack


@pytest.mark.parametrize(
    ("text", "work"),
    [
        (f"cancel {RUN}", CancelRun(run_id=RUN, user="U0ALICE", response_url="https://x/y", channel="C1")),
        (f"audit `{RUN}`", ShowAudit(run_id=RUN, user="U0ALICE", response_url="https://x/y", channel="C1")),
    ],
)
async def test_the_listener_hands_off_the_work(text: str, work: Work) -> None:
    handoff = FakeHandoff()
    ack = await run_command(text, handoff)
    assert handoff.submitted == [work]
    assert ack.calls == [{}]


async def test_a_bad_id_is_answered_in_the_ack_and_nothing_handed_off() -> None:
    handoff = FakeHandoff()
    ack = await run_command("cancel <!channel>", handoff)
    assert handoff.submitted == []
    [answer] = ack.calls
    assert "is not a run id" in answer["text"] and "<!channel>" not in answer["text"]


async def test_a_failed_handoff_is_told_in_the_ack() -> None:
    ack = await run_command(f"audit {RUN}", FakeHandoff(fail=HandoffFailed("busy")))
    [answer] = ack.calls
    assert answer["text"] == "I could not do that just now (busy). Try again in a moment."
