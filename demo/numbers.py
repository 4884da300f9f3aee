"""The demo's one way to name things: ``run N`` and ``card N``, on screen and in commands.

Slack shows a run's id (16 characters, in backticks under its announcement) and lets a
person click a card; a terminal can do neither comfortably, so the demo numbers runs and
cards in the order they appear, and a number is all a person ever reads or types:

- a run's messages are headed ``run N``, and wherever the bot's text names the run's id
  (an announcement, a card's footer, ``/graph status``, ``/graph runs``, an audit trail,
  the Home tab) the demo shows ``run N`` instead;
- ``/graph status N``, ``/graph cancel N`` and ``/graph audit N`` (also ``… run N``)
  are sent to the bot with the run's id, as the person would paste it in Slack;
- cards are ``card N`` in the channel, in the Home tab (``home approve N`` answers card
  N there) and in an audit trail (which names a card by its question's key).

The mapping is read from what the bot posted: a run's id from its announcement's
metadata, a card's question from its buttons' value (run and ask ids).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_ON_A_RUN = ("status", "cancel", "audit")
_MAX_DIGITS = 6


class NotARun(ValueError):
    """A run number the demo never showed."""


class Numbers:
    """Runs and cards as numbered so far, and the ids behind the numbers."""

    def __init__(self) -> None:
        self.run_ids: list[str] = []  # run N is run_ids[N - 1]
        self._roots: dict[tuple[str, str], int] = {}  # announcement (channel, ts) -> run number
        self._by_run: dict[str, int] = {}
        self._asks: dict[str, int] = {}  # button value {"r": run, "a": ask} -> its latest card number
        self._keys: dict[str, int] = {}  # ask key -> its latest card number (an audit names only the key)

    # -- learning them ----------------------------------------------------------------------

    def add_run(self, run_id: str, channel: str, ts: str) -> int:
        """A run's announcement was posted: it becomes the next ``run N``."""
        if run_id not in self._by_run:
            self.run_ids.append(run_id)
            self._by_run[run_id] = len(self.run_ids)
        self._roots[(channel, ts)] = self._by_run[run_id]
        return self._by_run[run_id]

    def add_card(self, number: int, message: Mapping[str, Any]) -> None:
        """Card ``number`` is ``message``: remember the question its buttons answer."""
        for value in _button_values(message):
            self._asks[value] = number
            key = _ask_key(value)
            if key:
                self._keys[key] = number

    # -- reading them -----------------------------------------------------------------------

    def run_of(self, message: Mapping[str, Any]) -> int:
        """``N`` of the run whose announcement (or thread) ``message`` is; 0 if none."""
        root = (str(message.get("channel")), str(message.get("thread_ts") or message.get("ts")))
        return self._roots.get(root, 0)

    def card_for(self, value: str) -> int:
        """The card number of the question a button ``value`` answers (a Home tab's); 0 if unseen."""
        return self._asks.get(value, 0)

    def command(self, text: str) -> str:
        """The slash command's text as the bot needs it: ``status 2`` → ``status <run 2's id>``.

        Raises:
            NotARun: the number names no run the demo showed.
        """
        words = text.split()
        if len(words) < 2 or words[0].lower() not in _ON_A_RUN:
            return text
        rest = words[2:] if words[1].lower() == "run" and len(words) > 2 else words[1:]
        number = rest[0]
        if len(rest) != 1 or not (number.isdecimal() and number.isascii() and len(number) <= _MAX_DIGITS):
            return text  # an id, or a mistake the bot answers itself
        if not 1 <= int(number) <= len(self.run_ids):
            there = f"runs are 1 to {len(self.run_ids)}" if self.run_ids else "no runs yet"
            raise NotARun(f"there is no run {int(number)} ({there})")
        return f"{words[0]} {self.run_ids[int(number) - 1]}"

    def shown(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """``message`` with every run id and card key in its texts shown as ``run N`` / ``card N``."""
        if not self.run_ids and not self._keys:
            return dict(message)
        return {k: _texts(v, self.text, name=k) for k, v in message.items()}

    def text(self, text: str) -> str:
        """``text`` (mrkdwn, or a log line) with run ids and card keys shown as ``run N`` / ``card N``."""
        if not self.run_ids and not self._keys:
            return text
        ids = "|".join(re.escape(i) for i in self.run_ids) or "(?!)"
        keys = "|".join(re.escape(k) for k in self._keys) or "(?!)"
        pattern = re.compile(rf"(?:\b([Rr]un) )?`({ids})`|\b({ids})\b|\bcard `({keys})`")

        def number(match: re.Match[str]) -> str:
            if match.group(2):
                return f"{match.group(1) or 'run'} {self._by_run[match.group(2)]}"
            if match.group(3):
                return str(self._by_run[match.group(3)])
            return f"card {self._keys[match.group(4)]}"

        return pattern.sub(number, text)


def _texts(node: Any, change: Callable[[str], str], *, name: str = "") -> Any:
    """``node`` with ``change`` applied to every ``text`` string in it (not to ids or values)."""
    if isinstance(node, str):
        return change(node) if name == "text" else node
    if isinstance(node, Mapping):
        return {k: _texts(v, change, name=k) for k, v in node.items()}
    if isinstance(node, list):
        return [_texts(v, change) for v in node]
    return node


def _button_values(message: Mapping[str, Any]) -> list[str]:
    values = []
    for block in message.get("blocks") or []:
        for element in block.get("elements") or [] if block.get("type") == "actions" else []:
            if element.get("type") == "button" and element.get("value"):
                values.append(str(element["value"]))
    return list(dict.fromkeys(values))


def _ask_key(value: str) -> str:
    try:
        data = json.loads(value)
    except ValueError:
        return ""
    return str(data.get("a") or "") if isinstance(data, dict) else ""
