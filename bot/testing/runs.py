"""What a test holds: a run it started, the cards it was shown, and how the run ended.

Each is a snapshot of what Slack showed when it was returned, plus the acts a person can
perform on it. The acts block until the bot has answered them (recorded the answer, or
refused it), so a test reads top to bottom like the conversation in the channel.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from bot.testing import shown
from bot.testing.driver import Driver

T = TypeVar("T")
CARD_TIMEOUT = 10.0
END_TIMEOUT = 30.0
ACT_TIMEOUT = 10.0
Status = Literal["completed", "rejected", "failed", "cancelled"]


class Loop(Protocol):
    """Runs a coroutine of the driver on the rehearsal's loop and returns its result."""

    def __call__(self, work: Callable[[Driver], Awaitable[T]], *, timeout: float) -> T: ...


@dataclass(frozen=True, kw_only=True)
class End:
    """How a run ended: ``status`` and the text of its final message, as a person reads it."""

    status: Status
    text: str


@dataclass(frozen=True, kw_only=True)
class Card:
    """An approval card as it was shown: its ``title``, all its ``text`` and its ``buttons``.

    ``approve``, ``reject``, ``reply`` and ``edit`` (``answer`` and ``decline`` on a
    question) answer it as ``user`` (any ``U…`` id,
    a member of the channel), through the card's real buttons and modals. Each returns once
    the bot recorded the answer, and raises ``Refused`` with the bot's words when it did not
    (the policy said no, the card was answered already, an edited input was invalid).
    """

    title: str
    text: str
    buttons: list[str]
    _ts: str = field(repr=False)
    _loop: Loop = field(repr=False, compare=False)

    def approve(self, *, user: str) -> str | None:
        """Click Approve. None when that decided the card; under a quorum, the notice the
        approver saw (``Your approval counts: 1 of 2. …``) while the card waits for more."""
        return self._loop(lambda d: d.approve(self._ts, user=user, timeout=ACT_TIMEOUT), timeout=ACT_TIMEOUT)

    def reject(self, *, user: str, reason: str | None = None) -> None:
        """Click Reject and submit the modal, with ``reason`` or none."""
        self._modal("Reject", user=user, text=reason or "")

    def reply(self, *, user: str, text: str) -> None:
        """Click Reply and send ``text`` (the graph gets it as the answer's text)."""
        if not text.strip():
            raise ValueError("a reply needs text: Slack does not let an empty one be sent")
        self._modal("Reply", user=user, text=text)

    def answer(self, *, user: str, text: str) -> None:
        """Answer a question (Strands' ``handoff_to_user``): its Answer button is a Reply
        with another label, and the tool returns ``text`` as it is."""
        if not text.strip():
            raise ValueError("an answer needs text: Slack does not let an empty one be sent")
        self._modal("Answer", user=user, text=text)

    def decline(self, *, user: str, reason: str | None = None) -> None:
        """Decline a question: its Decline button is a Reject with another label."""
        self._modal("Decline", user=user, text=reason or "")

    def edit(self, *, user: str, input: dict[str, Any]) -> None:
        """Click Edit and submit ``input`` as the tool's new input (approving the call with it)."""
        self._modal("Edit", user=user, text=json.dumps(input, ensure_ascii=False, indent=2))

    def latest(self) -> Card:
        """The same card as it is shown now (after an approval counted, a decision…)."""
        message = self._loop(lambda d: _now(d, self._ts), timeout=ACT_TIMEOUT)
        return card_of(message, loop=self._loop)

    def _modal(self, label: str, *, user: str, text: str) -> None:
        self._loop(
            lambda d: d.in_modal(self._ts, label, user=user, text=text, timeout=ACT_TIMEOUT), timeout=ACT_TIMEOUT
        )


@dataclass(frozen=True, kw_only=True)
class RehearsedRun:
    """A run started with ``Rehearsal.start``: its ``id``, its cards as they come, its end."""

    id: str
    _loop: Loop = field(repr=False, compare=False)
    _returned: set[str] = field(default_factory=set, repr=False, compare=False)

    def card(self, *, timeout: float = CARD_TIMEOUT) -> Card:
        """The next live card of this run not returned before, in posting order.

        Raises ``RehearsalError`` saying what happened instead when none comes within
        ``timeout`` seconds, at once when the run ended without one.
        """
        message = self._loop(lambda d: d.next_card(self.id, returned=self._returned, timeout=timeout), timeout=timeout)
        self._returned.add(str(message["ts"]))
        return card_of(message, loop=self._loop)

    def end(self, *, timeout: float = END_TIMEOUT) -> End:
        """How the run ended, once it has; ``RehearsalError`` after ``timeout`` seconds."""
        status, text = self._loop(lambda d: d.end(self.id, timeout=timeout), timeout=timeout)
        return End(status=status, text=text)  # type: ignore[arg-type]  # one of the four: Driver.end waits for it

    @property
    def thread(self) -> list[str]:
        """Every message of the run's thread so far, as plain text: the announcement first."""
        messages = self._loop(lambda d: _thread(d, self.id), timeout=ACT_TIMEOUT)
        return [shown.plain_text(m) for m in messages]


def card_of(message: dict[str, Any], *, loop: Loop) -> Card:
    return Card(
        title=shown.title(message),
        text=shown.plain_text(message),
        buttons=shown.buttons(message),
        _ts=str(message["ts"]),
        _loop=loop,
    )


async def _now(driver: Driver, ts: str) -> dict[str, Any]:
    return driver.message(ts)


async def _thread(driver: Driver, run_id: str) -> list[dict[str, Any]]:
    return driver.thread(run_id)
