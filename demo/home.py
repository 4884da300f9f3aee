"""A person's App Home tab in the terminal, each question headed by its card's number.

The bot's Home tab lists what waits for its viewer, each ask drawn like its card with the
card's own buttons, then the viewer's runs. ``home`` opens it (Slack's ``app_home_opened``)
and the demo draws what the bot publishes with the same renderer as a message, each ask
headed by the number its card has in the channel (``card 3: [Approve] [Reject] [Reply]``),
so that ``home approve 3`` answers from the tab what ``approve 3`` answers on the card: one
number per question, wherever it shows (``demo.numbers``). An ask is known by its
buttons' value (the run and ask ids), not by its place: the bot republishes the tab
whenever a run changes for its viewer, and an ask answered meanwhile must not turn a
number into a click on another one.

What the bot publishes is shown whole when the person just opened or clicked in the tab
(the outcome of a Home click is shown there, at its top); a refresh nobody asked for (a
run changed for them) is one line naming the cards waiting there, and only when their
number changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from demo.console import Console
from demo.forms import TEXT_NAMES, fill_form, numbered, text_fits
from demo.mrkdwn import Line, Run
from demo.numbers import Numbers
from demo.terminal import UserName, block_lines, box
from localslack import LocalSlack, LocalSlackUser

HOME_TIMEOUT = 10.0  # for the bot to publish a Home tab after it was opened or clicked in


class HomeTabs:
    """What the demo has seen of each person's Home tab, and the ``home`` commands."""

    def __init__(
        self, *, slack: LocalSlack, user: LocalSlackUser, console: Console, name: UserName, numbers: Numbers
    ) -> None:
        self.slack = slack
        self.user = user
        self.console = console
        self.name = name
        self.numbers = numbers
        self.shown = 0  # Home tabs shown whole
        self.clicks = 0  # buttons clicked in Home tabs
        self._asks: dict[str, list[str]] = {}  # user -> the asks of their tab as last shown
        self._counts: dict[str, int] = {}  # user -> the asks of their tab as last published
        self._publishes: dict[str, int] = {}  # user -> views.publish calls seen
        self._wanted: dict[str, float] = {}  # user -> until when their next tab is shown whole

    def published(self, user: str, view: Mapping[str, Any], *, acting: str) -> None:
        """The bot published ``user``'s Home tab (``views.publish``)."""
        self._publishes[user] = self._publishes.get(user, 0) + 1
        count, before = len(ask_values(view)), self._counts.get(user)
        self._counts[user] = count
        if self._wanted.pop(user, 0.0) >= time.monotonic():
            self._show(user, view)
        elif count != before:
            how = "home shows it" if user == acting else f"as {self.name(user)}, home shows it"
            numbers = sorted(n for n in (self.numbers.card_for(v) for v in ask_values(view)) if n)
            if not count:
                what = "nothing waits there"
            elif len(numbers) == count:
                what = f"{_cards(numbers)} {'waits' if count == 1 else 'wait'} there"
            else:  # a question whose card the channel has not shown yet
                what = f"{count} question{'' if count == 1 else 's'} wait there"
            self.console.note(f"@{self.name(user)}'s Home tab was refreshed: {what} ({how})")

    def _show(self, user: str, view: Mapping[str, Any]) -> None:
        self._asks[user] = ask_values(view)
        self.shown += 1
        label = f"@{self.name(user)}'s Home tab"
        width, color = self.console.width, self.console.color
        shown = self.numbers.shown(view)
        self.console.say(
            render_home(shown, label=label, user_name=self.name, width=width, color=color, card=self.numbers.card_for)
        )

    async def command(self, rest: str, *, acting: str, verbs: tuple[str, ...]) -> None:
        """``home``: open the tab; ``home <verb> N [text]``: click ``verb`` on card N's question there."""
        if not rest:
            await self.open(acting)
            return
        verb, _, more = rest.partition(" ")
        verb, (number, text) = verb.lower(), numbered(more.strip())
        if verb not in verbs:
            self.console.note(f"home alone shows your Home tab; home approve 3 answers card 3 there (not {verb!r})")
        elif number is None:
            self.console.note(f"which card? e.g. home {verb} 1" + (" <text>" if verb == "reply" else ""))
        else:
            await self.answer(acting, number, verb, text)

    async def open(self, user: str) -> None:
        """Open ``user``'s Home tab (``app_home_opened``) and wait for the tab the bot publishes."""
        seen = self._publishes.get(user, 0)
        self._wanted[user] = time.monotonic() + HOME_TIMEOUT
        response = await self.user.open_home(user_id=user)
        if response.status != 200:
            self.console.note(f"the bot answered HTTP {response.status} to opening the Home tab")
            return
        try:
            await self.slack.wait_for(lambda: self._publishes.get(user, 0) > seen, timeout=HOME_TIMEOUT, what="Home")
        except TimeoutError:
            self._wanted.pop(user, None)
            self.console.note(f"the bot published no Home tab for @{self.name(user)} within {HOME_TIMEOUT:.0f} s")

    async def answer(self, user: str, number: int, verb: str, text: str | None) -> None:
        """Click ``verb`` on card ``number``'s question in ``user``'s Home tab as it was last shown;
        fill in its form."""
        who, shown = self.name(user), self._asks.get(user)
        if shown is None:
            self.console.note(f"@{who} has not opened the Home tab yet: type home first")
            return
        cards = {self.numbers.card_for(value): value for value in shown}
        if number not in cards or not number:
            listed = sorted(n for n in cards if n)
            there = f"it shows {_cards(listed)}" if listed else "nothing waited there"
            self.console.note(f"card {number} is not in @{who}'s Home tab ({there})")
            return
        value, label = cards[number], verb.capitalize()
        labels = labels_for(self.slack.home(user) or {}, value)
        if labels is None:
            self.console.note(f"card {number} is gone from @{who}'s Home tab (answered); type home to see it now")
            return
        if label not in labels:
            self.console.note(f"card {number} has no {label} button there (it has {', '.join(labels)})")
            return
        if not text_fits(self.console, verb, text, typed=f"home {verb} {number}", noun="card"):
            return
        before = {v["id"] for v in self.slack.open_views(user)}
        self._wanted[user] = time.monotonic() + HOME_TIMEOUT  # the bot republishes it with the outcome
        self.clicks += 1
        response = await self.user.click_home(user_id=user, label=label, value=value or None)
        if response.status != 200:
            self.console.note(f"the bot answered HTTP {response.status} to the click")
            return
        if verb in TEXT_NAMES:
            await fill_form(
                slack=self.slack,
                user=self.user,
                console=self.console,
                acting=user,
                name=self.name,
                verb=verb,
                text=text,
                before=before,
                what=f"card {number}",
            )


def _asks(view: Mapping[str, Any]) -> Iterator[list[Mapping[str, Any]]]:
    """The buttons of each actions block that has any, in order: one ask each."""
    for block in view.get("blocks") or []:
        if block.get("type") == "actions":
            buttons = [e for e in block.get("elements") or [] if e.get("type") == "button"]
            if buttons:
                yield buttons


def ask_values(view: Mapping[str, Any]) -> list[str]:
    """Each ask's button value, in the order :func:`render_home` draws them."""
    return [next((str(b["value"]) for b in buttons if b.get("value")), "") for buttons in _asks(view)]


def labels_for(view: Mapping[str, Any], value: str) -> list[str] | None:
    """The labels of the ask whose buttons carry ``value``; None when the tab no longer shows it."""
    for buttons in _asks(view):
        if any(str(b.get("value") or "") == value for b in buttons):
            return [str((b.get("text") or {}).get("text")) for b in buttons]
    return None


def render_home(
    view: Mapping[str, Any], *, label: str, user_name: UserName, width: int, color: bool, card: Callable[[str], int]
) -> str:
    """The Home tab as one box, each ask's buttons headed ``card N:`` (``card``: a button
    value's card number; 0 for a question whose card the channel has not shown yet)."""
    lines: list[Line] = []
    for block in view.get("blocks") or []:
        shown = block_lines(block, user_name=user_name)
        if block.get("type") == "actions" and shown and shown[0]:
            values = ask_values({"blocks": [block]})
            number = card(values[0]) if values else 0
            head = f"card {number}:" if number else "(card not posted yet)"
            shown = [[Run(head, frozenset({"bold"})), Run(" "), *shown[0]], *shown[1:]]
        lines.extend(shown)
    return box(lines, label=label, width=width, color=color)


def _cards(numbers: list[int]) -> str:
    """``card 3``, ``cards 3 and 5``, ``cards 2, 3 and 5``."""
    if len(numbers) == 1:
        return f"card {numbers[0]}"
    return "cards " + ", ".join(str(n) for n in numbers[:-1]) + f" and {numbers[-1]}"
