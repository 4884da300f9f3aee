"""What a card is called: its header, written for the person who has to decide.

An interrupt's name is a program's identifier (``review:query_logs:1``,
``strands:human-in-the-loop``, ``approve_deploy``). Shown as is, a header reads
"REVIEW QUERY LOGS 1"; a person wants the question instead. The interrupt source
decides the wording: a review of what a tool returned, a tool call held by a gate, or a
name the graph chose, made readable. The same title names the ask wherever it appears
(the card, its fallback text, the run's final message).

Titles are plain text (headers are ``plain_text``): callers escape them for mrkdwn.
"""

from __future__ import annotations

import re
from typing import Any

from engine.records import Ask
from engine.sources import HITL_INTERRUPT_NAME, REVIEW_INTERRUPT_PREFIX, gated_tool_use_id

_KNOWN_NAMES = {HITL_INTERRUPT_NAME: "Tool approval"}
# HumanInTheLoop's prompt: 'Approve "<tool>"?' or, with a classifier's reason, 'Approve "<tool>" — <why>?',
# then the input on the next line.
_HITL_PROMPT = re.compile(r'^Approve "(?P<tool>[^"\n]{1,100})"(?: \u2014 (?P<why>[^\n]+?))?\?(?:\n|$)')
_TOOL_NAME_LIMIT = 100


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
