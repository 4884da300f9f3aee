"""The kit's half on the event loop: a person's acts in the local Slack, and waiting for the bot.

Everything here runs on the rehearsal's loop (``bot.testing.rehearsal``), where the local
Slack and the bot live, so that reading Slack's state never races the bot changing it.
Each act is the one a person performs in Slack (a slash command, a click, a modal
submitted), delivered as signed HTTP to the bot's real web app; what the bot did about it
is read back from what Slack shows: a message, a card that changed, a modal, or a notice
only the person sees.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from bot.testing import shown
from bot.work import run_id_for

if TYPE_CHECKING:
    from demo.stack import Stack
    from localslack import BotResponse
    from localslack.transport import EnvelopeType

T = TypeVar("T")
_ENDED: dict[str, Any] = {"ended": True}  # what the card search finds when the run ended without one
STATUS_WAIT = 5.0  # seconds for the store to say a run that posted its end has ended


class RehearsalError(AssertionError):
    """What the test waited for did not happen; the message says, in one line, what did."""


class Refused(RehearsalError):
    """The bot did not take the answer (its policy, a card no longer open, an input it rejects).

    ``notice`` is what the bot told the person, word for word (as plain text).
    """

    def __init__(self, notice: str) -> None:
        super().__init__(notice)
        self.notice = notice


class _Recording:
    """A transport that keeps what it delivered: a command's trigger_id names its run, and
    each act's response_url is where the bot answers that act alone."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.sent: list[Mapping[str, Any]] = []

    async def deliver(self, *, kind: EnvelopeType, payload: Mapping[str, Any]) -> BotResponse:
        self.sent.append(payload)
        result: BotResponse = await self._inner.deliver(kind=kind, payload=payload)
        return result

    async def aclose(self) -> None:
        await self._inner.aclose()


class Driver:
    """People acting in one channel of the local Slack, and what the bot shows them."""

    def __init__(self, *, stack: Stack, channel: str) -> None:
        from localslack import LocalSlackUser

        if stack.services is None:
            raise RuntimeError("the stack is not started")
        self.slack = stack.slack
        self.channel = channel
        self.command = stack.command
        self.store = stack.services.store
        self._sent = _Recording(stack.user.transport)
        self._user = LocalSlackUser(slack=stack.slack, transport=self._sent)

    # -- reading -------------------------------------------------------------------------------

    def messages(self) -> list[dict[str, Any]]:
        return self.slack.messages(self.channel)

    def message(self, ts: str) -> dict[str, Any]:
        found = self.slack.message(self.channel, ts)
        if found is None:
            raise RehearsalError(f"the message {ts} is gone from {self.channel}")
        return found

    def thread(self, run_id: str) -> list[dict[str, Any]]:
        root = next((m for m in self.messages() if shown.is_announcement(m, run_id)), None)
        return [] if root is None else self.slack.thread(self.channel, str(root["ts"]))

    def notice(self, url: str) -> str | None:
        """What the bot said only to the person, through the response_url of their act."""
        for response in self.slack.responses:
            if response["url"] == url and response["effect"] in ("ephemeral", "in_channel"):
                return shown.plain_text(response["body"])
        return None

    async def status(self, run_id: str) -> str:
        run = await asyncio.to_thread(self.store.load, run_id, snapshot=False)
        return "not stored" if run is None else run.status.value

    async def situation(self, run_id: str) -> str:
        """Where the run is, in a few words, for an error message."""
        messages = self.messages()
        final = next((m for m in messages if shown.is_final(m, run_id)), None)
        if final is not None:
            return f"the run ended: {await self.status(run_id)}: {_one_line(shown.plain_text(final))}"
        live = [m for m in messages if _live_card(m, run_id)]
        if live:
            card = live[-1]
            return f"the run waits on card {shown.title(card)!r} ({', '.join(shown.buttons(card))})"
        return f"the run is {await self.status(run_id)}"

    async def wait(self, found: Callable[[], T | None], *, timeout: float, failing: Callable[[], Awaitable[str]]) -> T:
        """``found()`` once it is something, re-checked at every change in Slack; else
        ``RehearsalError`` with the line ``await failing()`` gives."""
        try:
            return await self.slack.wait_for(found, timeout=timeout)
        except TimeoutError:
            raise RehearsalError(await failing()) from None

    # -- a run ---------------------------------------------------------------------------------

    async def start(self, task: str, *, user: str, timeout: float) -> str:
        """``/graph run <task>`` by ``user``; the run's id once its announcement is posted."""
        typed = f"{self.command} run {task}"
        response = await self._user.slash_command(
            text=f"run {task}", user_id=user, channel_id=self.channel, command=self.command
        )
        sent = self._sent.sent[-1]
        if response.status != 200:
            raise RehearsalError(f"the bot answered HTTP {response.status} to {typed!r}")
        said = response.body.get("text") if isinstance(response.body, dict) else response.body
        if said:
            raise Refused(shown.plain_text({"text": str(said)}))
        run_id = run_id_for(str(sent["trigger_id"]))
        assert run_id is not None
        url = str(sent["response_url"])

        def announced() -> tuple[str, str] | None:
            if any(shown.is_announcement(m, run_id) for m in self.messages()):
                return ("started", "")
            notice = self.notice(url)
            return None if notice is None else ("refused", notice)

        async def failing() -> str:
            return f"{typed!r} started no run within {timeout:g} s"

        outcome, notice = await self.wait(announced, timeout=timeout, failing=failing)
        if outcome == "refused":
            raise Refused(notice)
        return run_id

    async def typed(self, text: str, *, user: str, timeout: float) -> str:
        """``/graph <text>`` by ``user``: what the bot answered only to them (at once, or later
        through the command's response_url, as ``stats``, ``pending`` and ``runs`` do)."""
        response = await self._user.slash_command(
            text=text, user_id=user, channel_id=self.channel, command=self.command
        )
        sent = self._sent.sent[-1]
        if response.status != 200:
            raise RehearsalError(f"the bot answered HTTP {response.status} to {self.command} {text!r}")
        said = response.body.get("text") if isinstance(response.body, dict) else response.body
        if said:
            return shown.plain_text({"text": str(said)})
        url = str(sent["response_url"])

        async def failing() -> str:
            return f"no answer to {self.command} {text!r} within {timeout:g} s"

        return await self.wait(lambda: self.notice(url), timeout=timeout, failing=failing)

    async def next_card(self, run_id: str, *, returned: set[str], timeout: float) -> dict[str, Any]:
        """The first live card of the run not yet returned, in posting order."""

        def look() -> dict[str, Any] | None:
            messages = self.messages()
            for message in messages:
                if _live_card(message, run_id) and message["ts"] not in returned:
                    return message
            return _ENDED if any(shown.is_final(m, run_id) for m in messages) else None

        async def failing() -> str:
            return f"no card within {timeout:g} s; {await self.situation(run_id)}"

        card = await self.wait(look, timeout=timeout, failing=failing)
        if card is _ENDED:  # the run ended first: no use waiting out the timeout
            raise RehearsalError(f"no card: {await self.situation(run_id)}")
        return card

    async def end(self, run_id: str, *, timeout: float) -> tuple[str, str]:
        """``(status, text)`` of the run once its final message is posted."""

        def final() -> dict[str, Any] | None:
            return next((m for m in self.messages() if shown.is_final(m, run_id)), None)

        async def failing() -> str:
            return f"the run did not end within {timeout:g} s; {await self.situation(run_id)}"

        message = await self.wait(final, timeout=timeout, failing=failing)
        status = await self.status(run_id)
        deadline = asyncio.get_running_loop().time() + STATUS_WAIT
        while status not in ("completed", "failed", "rejected", "cancelled"):
            if asyncio.get_running_loop().time() > deadline:
                raise RehearsalError(f"the run posted its end but is stored as {status}")
            await asyncio.sleep(0.05)
            status = await self.status(run_id)
        return status, shown.plain_text(message)

    # -- answering a card ----------------------------------------------------------------------

    async def click(self, ts: str, label: str, *, user: str) -> str:
        """Click ``label`` on the card as it is now; the click's response_url."""
        message = self.message(ts)
        try:
            response = await self._user.click(message=message, label=label, user_id=user, channel_id=self.channel)
        except LookupError:
            has = ", ".join(shown.buttons(message)) or "none: it was answered"
            raise RehearsalError(f"card {shown.title(message)!r} has no {label} button (its buttons: {has})") from None
        if response.status != 200:
            raise RehearsalError(f"the bot answered HTTP {response.status} to the {label} click")
        return str(self._sent.sent[-1]["response_url"])

    async def approve(self, ts: str, *, user: str, timeout: float) -> str | None:
        """Click Approve; None once it decided the card, the notice when it only counted.

        Whether the click was taken is read from the store (the person's answer is there
        now and was not before), not from the notice's wording.
        """
        before, answered = self.message(ts), await self._answer(ts, user=user)
        url = await self.click(ts, "Approve", user=user)

        def settled() -> str | None:
            notice = self.notice(url)
            return notice if notice is not None else ("changed" if self.message(ts) != before else None)

        async def failing() -> str:
            return f"the bot did not answer {user}'s Approve within {timeout:g} s"

        await self.wait(settled, timeout=timeout, failing=failing)
        now = await self._answer(ts, user=user)
        if now is None or now == answered:  # not taken: the bot tells the clicker why
            raise Refused(await self.wait(lambda: self.notice(url), timeout=timeout, failing=failing))
        await self._card_changed(ts, before, timeout=timeout, after=f"{user}'s approval")
        if now[1]:  # it decided the card
            return None
        return await self.wait(lambda: self.notice(url), timeout=timeout, failing=failing)

    async def in_modal(self, ts: str, label: str, *, user: str, text: str, timeout: float) -> None:
        """Click ``label`` (Reply, Reject, Edit), submit ``text`` in the modal the bot opens,
        and wait for the card to show the answer."""
        before = self.message(ts)
        views = {view["id"] for view in self.slack.open_views(user)}
        url = await self.click(ts, label, user=user)

        def opened() -> tuple[str, Any] | None:
            view = next((v for v in self.slack.open_views(user) if v["id"] not in views), None)
            if view is not None:
                return ("view", view)
            notice = self.notice(url)
            return None if notice is None else ("notice", notice)

        async def failing() -> str:
            return f"the bot opened no {label} form for {user} within {timeout:g} s"

        outcome, got = await self.wait(opened, timeout=timeout, failing=failing)
        if outcome == "notice":
            raise Refused(got)
        values = {TEXT_BLOCK_ID: {TEXT_ACTION_ID: text}}
        response = await self._user.submit_view(view=got, values=values, user_id=user)
        errors = response.body.get("errors") if isinstance(response.body, dict) else None
        if errors:
            raise Refused("; ".join(shown.plain_text({"text": str(e)}) for e in errors.values()))
        if response.status != 200:
            raise RehearsalError(f"the bot answered HTTP {response.status} to the {label} form")
        await self._card_changed(ts, before, timeout=timeout, after=f"{user}'s {label}")

    async def _card_changed(self, ts: str, before: Mapping[str, Any], *, timeout: float, after: str) -> None:
        """Wait for the card to differ from ``before``: the next act sees the card as the answer left it."""

        async def failing() -> str:
            return f"the card did not change within {timeout:g} s after {after} was recorded"

        await self.wait(lambda: self.message(ts) != before or None, timeout=timeout, failing=failing)

    async def _answer(self, ts: str, *, user: str) -> tuple[object, bool] | None:
        """``user``'s answer to the card's ask as stored (a vote, or the decision) and whether
        the ask is decided; None when they have given none."""
        message = self.message(ts)
        run_id, key = shown.what(message)[0], shown.card_key(message)
        run = await asyncio.to_thread(self.store.load, run_id, snapshot=False)
        ask = run.asks.get(key or "") if run is not None else None
        if ask is None:
            return None
        decided = ask.decision is not None
        if ask.decision is not None and ask.decision.user == user:
            return ask.decision, decided
        vote = ask.votes.get(user)
        return None if vote is None else (vote, decided)


def _live_card(message: Mapping[str, Any], run_id: str) -> bool:
    return shown.what(message)[0] == run_id and shown.card_key(message) is not None and bool(shown.buttons(message))


def _one_line(text: str, limit: int = 300) -> str:
    line = re.sub(r"\s+", " ", text).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"
