"""A person's App Home tab in the terminal, with its asks numbered so they can be clicked.

The bot's Home tab lists what waits for its viewer, each ask drawn like its card with the
card's own buttons, then the viewer's runs. ``home`` opens it (Slack's ``app_home_opened``)
and the demo draws what the bot publishes with the same renderer as a message, the asks
numbered (``ask 1: [Approve] [Reject] [Reply]``) so that ``home approve 1`` can name one.
An ask is remembered by its buttons' value (the run and ask ids), not by its place: the
bot republishes the tab whenever a run changes for its viewer, and an ask answered
meanwhile must not turn ``home approve 2`` into a click on another one.

What the bot publishes is shown whole when the person just opened or clicked in the tab
(the outcome of a Home click is shown there, at its top); a refresh nobody asked for (a
run changed for them) is one line, and only when the number of asks waiting changed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from demo.console import Console
from demo.forms import TEXT_NAMES, fill_form, numbered, text_fits
from demo.mrkdwn import Line, Run
from demo.terminal import UserName, block_lines, box
from localslack import LocalSlack, LocalSlackUser

HOME_TIMEOUT = 10.0  # for the bot to publish a Home tab after it was opened or clicked in


class HomeTabs:
    """What the demo has seen of each person's Home tab, and the ``home`` commands."""

    def __init__(self, *, slack: LocalSlack, user: LocalSlackUser, console: Console, name: UserName) -> None:
        self.slack = slack
        self.user = user
        self.console = console
        self.name = name
        self.shown = 0  # Home tabs shown whole
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
            asks = f"{count} ask{'' if count == 1 else 's'}"
            self.console.note(f"@{self.name(user)}'s Home tab was refreshed: {asks} waiting ({how})")

    def _show(self, user: str, view: Mapping[str, Any]) -> None:
        self._asks[user] = ask_values(view)
        self.shown += 1
        label = f"@{self.name(user)}'s Home tab"
        width, color = self.console.width, self.console.color
        self.console.say(render_home(view, label=label, user_name=self.name, width=width, color=color))

    async def command(self, rest: str, *, acting: str, verbs: tuple[str, ...]) -> None:
        """``home``: open the tab; ``home <verb> N [text]``: click ``verb`` on its ask N."""
        if not rest:
            await self.open(acting)
            return
        verb, _, more = rest.partition(" ")
        verb, (number, text) = verb.lower(), numbered(more.strip())
        if verb not in verbs:
            self.console.note(f"home alone shows your Home tab; home approve 1 answers its ask 1 (not {verb!r})")
        elif number is None:
            self.console.note(f"which ask? e.g. home {verb} 1" + (" <text>" if verb == "reply" else ""))
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
        """Click ``verb`` on ask ``number`` of ``user``'s Home tab as it was last shown; fill in its form."""
        who, shown = self.name(user), self._asks.get(user)
        if shown is None:
            self.console.note(f"@{who} has not opened the Home tab yet: type home first")
            return
        if not 1 <= number <= len(shown):
            there = f"asks are 1 to {len(shown)}" if shown else "nothing waited there"
            self.console.note(f"there is no ask {number} in @{who}'s Home tab ({there})")
            return
        value, label = shown[number - 1], verb.capitalize()
        labels = labels_for(self.slack.home(user) or {}, value)
        if labels is None:
            self.console.note(f"ask {number} is gone from @{who}'s Home tab (answered); type home to see it now")
            return
        if label not in labels:
            self.console.note(f"ask {number} has no {label} button (it has {', '.join(labels)})")
            return
        if not text_fits(self.console, verb, text, typed=f"home {verb} {number}", noun="ask"):
            return
        before = {v["id"] for v in self.slack.open_views(user)}
        self._wanted[user] = time.monotonic() + HOME_TIMEOUT  # the bot republishes it with the outcome
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
                what=f"ask {number}",
            )


def _asks(view: Mapping[str, Any]) -> Iterator[list[Mapping[str, Any]]]:
    """The buttons of each actions block that has any, in order: one ask each."""
    for block in view.get("blocks") or []:
        if block.get("type") == "actions":
            buttons = [e for e in block.get("elements") or [] if e.get("type") == "button"]
            if buttons:
                yield buttons


def ask_values(view: Mapping[str, Any]) -> list[str]:
    """Each ask's button value, numbered from 1 as :func:`render_home` numbers them."""
    return [next((str(b["value"]) for b in buttons if b.get("value")), "") for buttons in _asks(view)]


def labels_for(view: Mapping[str, Any], value: str) -> list[str] | None:
    """The labels of the ask whose buttons carry ``value``; None when the tab no longer shows it."""
    for buttons in _asks(view):
        if any(str(b.get("value") or "") == value for b in buttons):
            return [str((b.get("text") or {}).get("text")) for b in buttons]
    return None


def render_home(view: Mapping[str, Any], *, label: str, user_name: UserName, width: int, color: bool) -> str:
    """The Home tab as one box, each ask's buttons headed ``ask N:``."""
    lines: list[Line] = []
    number = 0
    for block in view.get("blocks") or []:
        shown = block_lines(block, user_name=user_name)
        if block.get("type") == "actions" and shown and shown[0]:
            number += 1
            shown = [[Run(f"ask {number}:", frozenset({"bold"})), Run(" "), *shown[0]], *shown[1:]]
        lines.extend(shown)
    return box(lines, label=label, width=width, color=color)
