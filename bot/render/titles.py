"""What a card is called: its header, written for the person who has to decide.

An interrupt's name is a program's identifier (``review:query_logs:1``,
``strands:human-in-the-loop``, ``approve_deploy``). Shown as is, a header reads
"REVIEW QUERY LOGS 1"; a person wants the question instead. The interrupt source
decides the wording: a review of what a tool returned, a tool call held by a gate, or a
name the graph chose, made readable. The same title names the ask wherever it appears
(the card, its fallback text, the run's final message).

Titles are plain text (headers are ``plain_text``): callers escape them for mrkdwn.

Asks are also addressed to people: the policy's approvers and escalation group, as
mentions (``mention_id``, ``mention_ids``, ``who_may_decide``), shared by the card, the
reminders and the answers a refused click gets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.render.mrkdwn import short
from bot.render.questions import QUESTION_TITLE
from engine.policy import GROUP_ID, USER_ID, deciders, missing_of
from engine.records import Ask
from engine.sources import HANDOFF_INTERRUPT_NAME, HITL_INTERRUPT_NAME, REVIEW_INTERRUPT_PREFIX, gated_tool_use_id

_KNOWN_NAMES = {HITL_INTERRUPT_NAME: "Tool approval", HANDOFF_INTERRUPT_NAME: QUESTION_TITLE}
# HumanInTheLoop's prompt: 'Approve "<tool>"?' or, with a classifier's reason, 'Approve "<tool>" — <why>?',
# then the input on the next line.
_HITL_PROMPT = re.compile(r'^Approve "(?P<tool>[^"\n]{1,100})"(?: \u2014 (?P<why>[^\n]+?))?\?(?:\n|$)')
_TOOL_NAME_LIMIT = 100
MAX_NAMED = 10  # ids named in one list of who may decide; the rest are counted
ANYONE = "anyone in the channel"


def readable_name(name: str) -> str:
    """Turn an interrupt name into words: ``approve_deploy`` → ``Approve deploy``."""
    if name in _KNOWN_NAMES:
        return _KNOWN_NAMES[name]
    words = " ".join(w for w in re.split(r"[\s_\-:.]+", name) if w)
    return (words[:1].upper() + words[1:]) if words else "Decision needed"


def card_title(ask: Ask) -> str:
    """The question the ask puts, in words: the card's header and the ask's name elsewhere.

    * ``review_after`` asks (``review:<tool>:<attempt>``): "Review what <tool> returned",
      with ", attempt N" from the second attempt on.
    * Strands' ``HumanInTheLoop``: "Tool approval: <tool>".
    * other ``BeforeToolCallEvent`` gates: "Approve <tool>?" (the call is what is asked about).
    * anything else (``tool_context.interrupt``, batch and node gates): the name made readable.
    """
    if ask.name.startswith(REVIEW_INTERRUPT_PREFIX):
        reviewed, attempt = review_parts(ask.name)
        title = f"Review what {reviewed} returned" if reviewed else "Review a tool result"
        return f"{title}, attempt {attempt}" if attempt > 1 else title
    tool = gated_tool_name(ask)
    if ask.name == HITL_INTERRUPT_NAME:
        return f"Tool approval: {tool}" if tool else "Tool approval"
    if tool and gated_tool_use_id(ask.interrupt_id) is not None:
        return f"Approve {tool}?"
    return readable_name(ask.name)


def review_parts(name: str) -> tuple[str, int]:
    """``review:<tool>[:<attempt>]`` → ``(tool, attempt)``; attempt 1 when not given."""
    rest = name.removeprefix(REVIEW_INTERRUPT_PREFIX)
    tool, _, attempt = rest.rpartition(":")
    if tool and attempt.isascii() and attempt.isdigit():
        return tool[:_TOOL_NAME_LIMIT], int(attempt[:6])
    return rest[:_TOOL_NAME_LIMIT], 1


def gated_tool_name(ask: Ask) -> str | None:
    """The tool a gate asks about: the recorded call, else what the reason names.

    A finished ask no longer keeps its call (``engine.settle`` drops it), so the reason is
    the fallback: a gate's ``{"tool": ...}`` or HumanInTheLoop's prompt.
    """
    if ask.tool is not None:
        return ask.tool.name[:_TOOL_NAME_LIMIT]
    reason: Any = ask.reason
    if isinstance(reason, dict) and isinstance(reason.get("tool"), str) and reason["tool"].strip():
        return str(reason["tool"]).strip()[:_TOOL_NAME_LIMIT]
    if ask.name == HITL_INTERRUPT_NAME and isinstance(reason, str):
        match = _HITL_PROMPT.match(reason)
        return match.group("tool") if match else None
    return None


def hitl_why(reason: Any) -> str | None:
    """Why HumanInTheLoop's classifier wants a human, from its prompt; None without a classifier."""
    match = _HITL_PROMPT.match(reason) if isinstance(reason, str) else None
    return match.group("why") if match else None


def mention_id(value: str) -> str:
    """A policy id as a mention: ``<@U…>`` for a user, ``<!subteam^S…>`` for a user group.

    The ids come from the graph definition and were checked when it was loaded; they are
    checked again here against the same patterns (``engine.policy``), so anything else
    shows as inert text. These are the only mentions the bot makes besides the requester
    and the decider (``mrkdwn.mention``): text from graphs and people never pings.
    """
    if USER_ID.match(value):
        return f"<@{value}>"
    if GROUP_ID.match(value):
        return f"<!subteam^{value}>"
    return short(value, 40)


def mention_ids(ids: Sequence[str], *, joiner: str = "or", first: str = "") -> str:
    """``<@U1>, <@U2> or <!subteam^S3>``: at most ``MAX_NAMED`` named, the rest counted.

    ``first`` (already mrkdwn, e.g. "whoever started it") leads the list when given."""
    named = list(dict.fromkeys(([first] if first else []) + [mention_id(i) for i in ids]))
    if len(named) > MAX_NAMED:
        rest = len(named) - MAX_NAMED + 1
        named = [*named[: MAX_NAMED - 1], f"{rest} more"]
    if len(named) <= 1:
        return "".join(named)
    return f"{', '.join(named[:-1])} {joiner} {named[-1]}"


def still_to_approve_leaving_out(ask: Ask, *, started_by: str) -> tuple[str, ...]:
    """Whom a "waiting for approvals from …" line leaves out: who approved already, and the
    requester where the policy refuses them a yes (they may still reject)."""
    return (*ask.votes, *(() if ask.rules.allow_self else (started_by,)))


def who_may_decide(ask: Ask, *, leaving_out: Sequence[str] = ()) -> str:
    """Who may decide ``ask`` now (its approvers, plus the escalation group once
    escalated), as mentions, or "anyone in the channel". ``leaving_out``: users not to
    name (those who already approved); a list left empty by it reads "someone else"."""
    allowed = deciders(ask)
    if allowed is None:
        return ANYONE
    shown = [i for i in allowed if i not in leaving_out]
    return mention_ids(shown) if shown else "someone else"


def still_needed(ask: Ask) -> str:
    """``Still needed: one from <!subteam^S1>, one from <@U2>``: the ``all_of`` entries no
    approval filled yet (empty when there are none, or the ask names no ``all_of``)."""
    missing = missing_of(ask)
    if not missing:
        return ""
    return "Still needed: " + ", ".join(f"one from {mention_id(i)}" for i in missing[:MAX_NAMED])
