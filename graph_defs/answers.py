"""Reading a person's answer to an interrupt: for your graph code, as for the examples.

``from graph_defs import read_answer`` in a hook or a tool that raises an interrupt
(``event.interrupt(...)``): the value it returns once the person decided is what
``read_answer`` decodes::

    answer = read_answer(event.interrupt("deploy-approval", reason={...}))
    if answer.decision != "approve":
        event.cancel_tool = f"rejected by {answer.who}: {answer.reason}"

The bot answers every interrupt with ``{"decision": "approve" | "reject" | "reply",
"text": str | None, "user": "<Slack user id>"}``. Graph code should still not crash on
anything else (a hand-written resume, an older bot, a plain ``"yes"``): an answer that
cannot be read is treated as a rejection, because an approval gate must fail closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Answer", "Decision", "read_answer"]

Decision = Literal["approve", "reject", "reply"]

_APPROVE_WORDS = {"approve", "approved", "y", "yes", "true"}


@dataclass(frozen=True)
class Answer:
    """A decoded interrupt response."""

    decision: Decision
    text: str | None
    user: str | None

    @property
    def who(self) -> str:
        """The decider's Slack id as plain text, or ``someone`` when unknown.

        Not a ``<@U123>`` mention: the bot shows a graph's output as text that pings nobody
        (whatever a model or a person put into it), so a mention would read as markup.
        """
        return self.user or "someone"

    @property
    def reason(self) -> str:
        """The text the decider gave, or ``no reason given``."""
        return self.text.strip() if self.text and self.text.strip() else "no reason given"


def read_answer(response: Any) -> Answer:
    """Decode an interrupt response; unreadable answers become rejections (fail closed)."""
    if isinstance(response, dict):
        decision = response.get("decision")
        text = response.get("text")
        user = response.get("user")
        text = text if isinstance(text, str) else None
        user = user if isinstance(user, str) and user else None
        if decision in ("approve", "reject", "reply"):
            return Answer(decision=decision, text=text, user=user)
        return Answer(decision="reject", text=f"unrecognised decision {decision!r}", user=user)
    if response is True or (isinstance(response, str) and response.strip().lower() in _APPROVE_WORDS):
        return Answer(decision="approve", text=None, user=None)
    return Answer(decision="reject", text=f"unrecognised answer {response!r}", user=None)
