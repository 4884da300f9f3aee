"""A run's status message in the terminal: shown once as a box, then one line per change.

The bot keeps one status message per run, a reply in its thread: streamed in the run's
first pass (``chat.startStream``, ``appendStream``, ``stopStream``), edited with
``chat.update`` about once a second after that. A terminal cannot edit a box printed
further up without fighting the prompt, and a box per edit would bury the cards, so the
demo prints the message whole the first time it sees it and afterwards only what changed,
in one line: the nodes whose state moved on, the headline when it changes, the asks it
starts or stops naming. A node's clock and token count tick with every edit; they are
shown with a change, never as one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bot.render.progress import STATE_WORD
from demo.terminal import UserName, message_lines

# The metadata ``what`` of a run's status message (engine.ports.PROGRESS; the demo imports
# only bot and localslack, and tests/demo checks the two agree).
PROGRESS = "progress"
_SEPARATOR = " · "
_SYMBOL = re.compile(r"^[^\w\s]+\s+")  # a leading state mark: ✅, ◐, 🔵 …
_UNDER_WAY = frozenset(STATE_WORD.values()) - {"not started"}  # a node's state once it began
_LINK_TARGET = re.compile(r" \((?:https?|mailto):[^\s()]*\)")  # "label (url)": the label will do in one line


def is_status(message: Mapping[str, Any]) -> bool:
    """A run's status message: streamed (only the status message is), or marked as one."""
    payload = (message.get("metadata") or {}).get("event_payload") or {}
    return "stream" in message or payload.get("what") == PROGRESS


def shown_lines(message: Mapping[str, Any], *, user_name: UserName) -> list[str]:
    """The message's lines as plain text, without its context footer (elapsed time, run id)
    and without link targets (a card's link is a long URL)."""
    kept = {**message, "blocks": [b for b in message.get("blocks") or [] if b.get("type") != "context"]}
    lines = ["".join(run.text for run in line) for line in message_lines(kept, user_name=user_name)]
    return [_LINK_TARGET.sub("", line) for line in lines if line]


def key(line: str) -> str:
    """What a line says apart from its clock: ``✅ planner · done · 1.2 s`` → ``planner · done``.

    A stream's task (``✓ planner · done``) and the edited message's node line have the same key,
    so the first edit after a stream stopped repeats nothing the stream already showed.
    """
    return _SEPARATOR.join(_SYMBOL.sub("", line.strip()).split(_SEPARATOR)[:2])


class StatusBoard:
    """The status messages seen so far, each with the keys of what it showed last."""

    def __init__(self, *, user_name: UserName) -> None:
        self.user_name = user_name
        self._shown: dict[tuple[str, str], set[str]] = {}

    def knows(self, channel: str, ts: str) -> bool:
        return (channel, ts) in self._shown

    def lines(self, message: Mapping[str, Any]) -> list[str]:
        """What the message says, one string per line (no footer, no link targets)."""
        return shown_lines(message, user_name=self.user_name)

    def under_way(self, message: Mapping[str, Any]) -> bool:
        """Whether the message shows a node that has started (running, waiting, done, failed…)."""
        for line in shown_lines(message, user_name=self.user_name):
            fields = key(line).split(_SEPARATOR)
            if len(fields) > 1 and fields[1] in _UNDER_WAY:
                return True
        return False

    def first(self, channel: str, ts: str, message: Mapping[str, Any]) -> None:
        """The message was just shown whole."""
        self._shown[(channel, ts)] = {key(line) for line in shown_lines(message, user_name=self.user_name)}

    def changes(self, channel: str, ts: str, message: Mapping[str, Any]) -> list[str]:
        """The lines of ``message`` that say something it did not say when last seen."""
        lines = shown_lines(message, user_name=self.user_name)
        before = self._shown.get((channel, ts), set())
        self._shown[(channel, ts)] = {key(line) for line in lines}
        return [line for line in lines if key(line) not in before]
