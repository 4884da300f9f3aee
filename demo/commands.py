"""What the demo does with a typed line, and how it shows what the bot says.

A person at the demo's prompt is a Slack user: a slash command becomes a signed request
to the bot, ``approve 1`` clicks the button on card 1, ``reply 1 text`` clicks Reply and
submits the modal the bot opens. ``home`` opens their App Home tab, and ``home approve
3`` clicks on card 3's question there. Runs and cards have one number each, on screen
and in commands (``demo.numbers``): ``/graph status 2`` is about run 2. Mistakes are
answered in one line and never reach the bot when Slack itself would not have let them
through (a button the card no longer has, a Reply without text); everything else does,
and what the bot refuses is shown as the bot said it.

A run's messages are labelled with its number (``run 1``); its status message is shown
whole once and then one line per change (``demo.progress``), but not before it shows a
node under way: a run that fails before its first node starts (a graph whose agent has no
offline model) shows its failure, then one status line, never a box of nodes "not
started" as if they were about to run. How each run ended (finished, failed, cancelled,
stopped) is read from its last message, for the summary.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from bot.publisher import ANNOUNCEMENT
from bot.render.messages import ending_of
from demo.console import Console
from demo.forms import fill_form, numbered, text_fits
from demo.home import HomeTabs
from demo.numbers import NotARun, Numbers
from demo.progress import StatusBoard, is_status
from demo.terminal import buttons_of, render_message
from localslack import LocalSlack, LocalSlackUser

CHANNEL = "C0DEMO"
CHANNELS = {CHANNEL: "demo"}
# Who is in the demo channel: you, who start runs, and teammates who approve them.
# ``graph_defs.examples.payout`` names alice and bob as its approvers by these ids, and
# needs one approval from finance and one from legal for a large payout: the user groups
# below, which the demo's local Slack has (``@finance`` is alice and bob, ``@legal`` dana).
YOU = "U0YOU"
USERS = {YOU: "you", "U0ALICE": "alice", "U0BOB": "bob", "U0DANA": "dana"}
GROUPS = {"S0FINANCE": ("finance", ("U0ALICE", "U0BOB")), "S0LEGAL": ("legal", ("U0DANA",))}
VERBS = ("approve", "reject", "reply", "trust", "retry", "edit")
HELP = """\
Start a run:    /graph run deploy billing 1.2.3   (/graph list, /graph help)
Answer card N:  approve N | reject N [reason] | reply N <text>
                trust N | retry N | edit N {json}
Your Home tab:  home shows what waits for you, by card number; answer there:
                home approve N | home reject N [reason] | home reply N <text>
Run N:          /graph status N | /graph audit N | /graph cancel N
Switch user:    as alice | as bob | as dana | as you   (as alone: who is who)
Who decides:    anyone but whoever started the run (they may only reject):
                start as you, approve as alice. /graph run payout 900 EUR
                to acme needs both alice and bob; under 50 EUR the rule
                approves it; from 1000 EUR, one of @finance (alice, bob)
                and dana of @legal.
Also:           cards | /graph pending | help | quit (or Ctrl-D)"""
# The metadata ``what`` of a run's last message (engine.ports.FINAL; the demo imports only
# bot and localslack, and tests/demo checks the two agree).
FINAL = "final"


class DemoSession:
    """One person (who may switch users with ``as``) in the demo channel, and what they have seen.

    They start as ``you``; a run's cards are for the others to approve (the bot refuses a
    starter's own approval unless the graph allows it), so ``as alice`` comes in handy.
    """

    def __init__(self, *, slack: LocalSlack, user: LocalSlackUser, console: Console, command: str = "/graph") -> None:
        self.slack = slack
        self.user = user
        self.console = console
        self.command = command
        self.acting = YOU
        self.cards: list[tuple[str, str]] = []  # (channel, ts), numbered from 1
        self.numbers = Numbers()  # run N and card N, and the ids behind them
        self.started: set[str] = set()  # run ids, from the bot's message metadata
        self.ended: set[str] = set()
        self.endings: dict[str, str] = {}  # run id -> finished, failed, cancelled or stopped
        self.updated = 0  # card updates seen
        self.notices = 0  # private messages seen (a command's answer, a refused click)
        self.sent = 0  # slash commands sent to the bot
        self.clicks = 0  # buttons clicked on cards
        self.status = StatusBoard(user_name=self.name)
        self._held: set[tuple[str, str]] = set()  # status messages seen, not shown: no node started yet
        self.homes = HomeTabs(slack=slack, user=user, console=console, name=self.name, numbers=self.numbers)
        self.last_change = time.monotonic()
        slack.on_change.append(self._on_change)

    @property
    def prompt(self) -> str:
        return f"@{self.name(self.acting)} in #demo> "

    def name(self, some_id: str) -> str:
        """A user's name (or a channel's): what Slack shows for ``<@U…>`` and ``<#C…>``."""
        group = GROUPS.get(some_id)
        return USERS.get(some_id) or CHANNELS.get(some_id) or (group[0] if group else some_id)

    def summary(self) -> str:
        """``2 runs finished, 1 failed, 1 waiting``: how the runs ended (kinds that none did are left out)."""
        waiting = len(self.started - self.ended)
        return f"{self.ended_summary()}, {waiting} waiting"

    def ended_summary(self) -> str:
        """``2 runs finished, 1 failed``: the runs that ended, by how (finished always named)."""
        counts = {kind: 0 for kind in ("finished", "failed", "cancelled", "stopped")}
        for run_id in self.ended:
            counts[self.endings.get(run_id) or "finished"] += 1
        others = [f"{n} {kind}" for kind, n in counts.items() if n and kind != "finished"]
        return ", ".join([f"{_count(counts['finished'], 'run')} finished", *others])

    def finished(self) -> int:
        """Runs that finished (not failed, cancelled or stopped)."""
        return sum(1 for run_id in self.ended if (self.endings.get(run_id) or "finished") == "finished")

    # -- what the bot says ----------------------------------------------------------------------

    def _show(self, message: Mapping[str, Any], label: str) -> None:
        width, color = self.console.width, self.console.color
        shown = self.numbers.shown(message)  # ids as the numbers commands take
        self.console.say(render_message(shown, label=label, user_name=self.name, width=width, color=color))

    def _private(self, body: Any, recipient: str | None) -> None:
        """An ephemeral message (a command's ack, a refusal): only that person sees it."""
        if isinstance(body, str):
            body = {"text": body}
        if not isinstance(body, Mapping) or not (body.get("text") or body.get("blocks")):
            return
        self.notices += 1
        self._show(body, f"only @{self.name(recipient or self.acting)} sees this")

    async def _on_change(self, event: str, details: dict[str, Any]) -> None:
        self.last_change = time.monotonic()
        result = details.get("result") or {}
        params = details.get("params") or {}
        if not result.get("ok"):
            if event == "command_ack" and details.get("effect") in ("ephemeral", "in_channel"):
                self._private(details.get("body"), None)
            elif event == "response_url" and details.get("effect"):
                self._responded(str(details["effect"]), details.get("body") or {}, str(details.get("url") or ""))
            return
        if event == "chat.postMessage":
            self._posted(result["message"])
        elif event in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
            self._status_changed(str(result["channel"]), str(result["ts"]))
        elif event == "chat.update":
            channel, ts = str(result["channel"]), str(result["ts"])
            status = self.status.knows(channel, ts) or is_status(result.get("message") or {})
            if status and not self.number(channel, ts):
                self._status_changed(channel, ts)
            else:
                self._updated(channel, ts)
        elif event == "chat.postEphemeral":
            self._private(params, str(params.get("user") or "") or None)
        elif event == "views.publish":
            self.homes.published(str(params.get("user_id") or ""), result.get("view") or {}, acting=self.acting)

    def _posted(self, message: Mapping[str, Any]) -> None:
        self._track(message)
        channel, ts = str(message["channel"]), str(message["ts"])
        if buttons_of(message):
            self.cards.append((channel, ts))
            self.numbers.add_card(len(self.cards), message)
            self._show(message, f"card {len(self.cards)}")
        elif is_status(message):
            self._status_changed(channel, ts)
        else:
            run_id = _run_id(message)
            if _what(message) == ANNOUNCEMENT and run_id:
                self.numbers.add_run(run_id, channel, ts)
            self._show(message, self._run_label(message) or "bot")

    def _status_changed(self, channel: str, ts: str) -> None:
        """A run's status message: whole once a node is under way, then one line with what changed.

        Until a node has started it is held back, unshown: a run that fails before any node
        runs then shows its failure and one status line, not a box of nodes about to run.
        """
        message = self.numbers.shown(self.slack.message(channel, ts) or {})
        self._track(message)
        label = f"{self._run_label(message) or 'run'} status"
        ended = self._run_of(message) in self.ended  # its end is shown already: lines, no box
        if not self.status.knows(channel, ts):
            self.status.first(channel, ts, message)
            if not self.status.under_way(message):
                self._held.add((channel, ts))
            elif ended:
                self.console.note(f"{label}: {'; '.join(self.status.lines(message))}")
            else:
                self._show(message, label)
            return
        changes = self.status.changes(channel, ts, message)
        if (channel, ts) in self._held:
            if not changes or not self.status.under_way(message):
                return
            self._held.discard((channel, ts))
            if not ended:
                self._show(message, label)
                return
        if changes:
            self.console.note(f"{label}: {'; '.join(changes)}")

    def _run_of(self, message: Mapping[str, Any]) -> str:
        """The run a message belongs to: its metadata's, or its thread's (a stream has no metadata yet)."""
        number = self.numbers.run_of(message)
        return _run_id(message) or (self.numbers.run_ids[number - 1] if number else "")

    def _run_label(self, message: Mapping[str, Any]) -> str | None:
        """``run N`` for a run's announcement and the replies in its thread."""
        number = self.numbers.run_of(message)
        return f"run {number}" if number else None

    def _responded(self, effect: str, body: Mapping[str, Any], url: str) -> None:
        # The post this is about: the one to this response_url (the latest, if it cannot be told).
        token = url.rsplit("/", 1)[-1]
        posts = [r for r in self.slack.responses if str(r.get("url", "")).rsplit("/", 1)[-1] == token]
        latest = posts[-1] if posts else self.slack.responses[-1] if self.slack.responses else {}
        if effect == "replace_original":  # a card updated through its response_url
            self._updated(str(latest.get("channel")), str(latest.get("message_ts")))
        elif effect in ("ephemeral", "in_channel"):
            # A refusal may land after the person switched users: it names whom it was for.
            self._private(body, str(latest.get("user") or "") or None)

    def _updated(self, channel: str, ts: str) -> None:
        message = self.slack.message(channel, ts) or {}
        self._track(message)
        number = self.number(channel, ts)
        self.updated += 1
        self._show(message, f"card {number} updated" if number else "message updated")

    def _track(self, message: Mapping[str, Any]) -> None:
        run_id = _run_id(message)
        if run_id:
            self.started.add(run_id)
            if _what(message) == FINAL:
                self.ended.add(run_id)
                self.endings[run_id] = ending_of(str(message.get("text") or "")) or "finished"

    def number(self, channel: str, ts: str) -> int:
        return self.cards.index((channel, ts)) + 1 if (channel, ts) in self.cards else 0

    # -- what the person types ------------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Carry out one typed line; False means the person wants to stop."""
        line = line.strip()
        if not line:
            return True
        if line.startswith("/"):
            await self._slash(line)
            return True
        verb, _, rest = line.partition(" ")
        verb, rest = verb.lower(), rest.strip()
        if verb in ("quit", "exit", "q"):
            return False
        if verb == "help":
            self.console.note(HELP, indent="")
        elif verb == "as":
            self._act_as(rest)
        elif verb == "cards":
            self._list_cards()
        elif verb == "home":
            await self.homes.command(rest, acting=self.acting, verbs=VERBS)
        elif verb in VERBS:
            number, text = numbered(rest)
            if number is None:
                self.console.note(f"which card? e.g. {verb} 1" + (" <text>" if verb == "reply" else ""))
            else:
                await self.answer(number, verb, text)
        else:
            self.console.note(f"{verb!r} is not a demo command; type help to see them")
        return True

    async def _slash(self, line: str) -> None:
        command, _, text = line.partition(" ")
        if command != self.command:
            self.console.note(f"this workspace has one slash command, {self.command}; try {self.command} help")
            return
        try:
            text = self.numbers.command(text)  # "status 2": run 2's id, as a person pastes it in Slack
        except NotARun as problem:
            self.console.note(str(problem))
            return
        self.sent += 1
        response = await self.user.slash_command(text=text, user_id=self.acting, channel_id=CHANNEL, command=command)
        if response.status != 200:
            self.console.note(f"the bot answered HTTP {response.status}")

    def _act_as(self, who: str) -> None:
        """``as <user>``: act as that user from now on; ``as`` alone: who is who."""
        choices = ", ".join(f"as {n}" for n in USERS.values())
        if not who:
            people = ", ".join(f"@{n}" + (" (now)" if u == self.acting else "") for u, n in USERS.items())
            self.console.note(f"users here: {people}; switch with {choices}")
            return
        wanted = who.lower().lstrip("@")
        match = [u for u, n in USERS.items() if wanted in (n, u.lower()) or (wanted == "me" and u == YOU)]
        if not match:
            self.console.note(f"there is no user {who!r} here; try {choices}")
            return
        self.acting = match[0]
        self.console.note(f"now acting as @{self.name(self.acting)}")

    def _list_cards(self) -> None:
        if not self.cards:
            self.console.note("no cards yet: start a run, e.g. /graph run deploy billing 1.2.3")
        for number, (channel, ts) in enumerate(self.cards, 1):
            buttons = buttons_of(self.slack.message(channel, ts) or {})
            self.console.note(f"card {number}: {' '.join(buttons) if buttons else 'answered'}")

    async def answer(self, number: int, verb: str, text: str | None) -> None:
        """Click ``verb`` on card ``number``; for Reply, Reject and Edit, fill in the modal too."""
        if not 1 <= number <= len(self.cards):
            there = f"cards are 1 to {len(self.cards)}" if self.cards else "no cards yet"
            self.console.note(f"there is no card {number} ({there})")
            return
        channel, ts = self.cards[number - 1]
        message = self.slack.message(channel, ts) or {}
        label, buttons = verb.capitalize(), buttons_of(message)
        if label not in buttons:
            has = f"it has {', '.join(buttons)}" if buttons else "it was answered"
            self.console.note(f"card {number} has no {label} button ({has})")
            return
        if not text_fits(self.console, verb, text, typed=f"{verb} {number}", noun="card"):
            return
        before = {v["id"] for v in self.slack.open_views(self.acting)}
        self.clicks += 1
        response = await self.user.click(message=message, label=label, user_id=self.acting, channel_id=channel)
        if response.status != 200:
            self.console.note(f"the bot answered HTTP {response.status} to the click")
            return
        await fill_form(
            slack=self.slack,
            user=self.user,
            console=self.console,
            acting=self.acting,
            name=self.name,
            verb=verb,
            text=text,
            before=before,
            what=f"card {number}",
        )


def _what(message: Mapping[str, Any]) -> object:
    """What the bot's metadata says a message is (an ask key, the announcement, the end…)."""
    return ((message.get("metadata") or {}).get("event_payload") or {}).get("what")


def _run_id(message: Mapping[str, Any]) -> str:
    """The run the bot's metadata says a message belongs to; "" if none."""
    run_id = ((message.get("metadata") or {}).get("event_payload") or {}).get("run_id")
    return run_id if isinstance(run_id, str) else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
