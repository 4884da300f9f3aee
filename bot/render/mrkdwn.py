"""Escaping, cutting and small formatting helpers for Slack ``mrkdwn`` text.

Everything the bot shows comes partly from graph code, models and users: task text,
interrupt reasons, final outputs. Slack parses ``<...>`` in mrkdwn as mentions and
links, so unescaped text could ping ``@channel`` or forge a link; every piece of foreign
text therefore goes through :func:`escape` before it reaches a block. Graph output and
graph-supplied reasons go through :func:`escape_keeping_mentions` instead: a graph that
says who approved (``approved by <@U123>``) should show that person, so well-formed
mentions of one user or one user group survive, and nothing else does. Slack also rejects
a whole message when one text is a character too long, so texts are cut here to fixed
limits with a visible marker instead of being sent and refused.

Limits are Slack's documented ones, except :data:`MESSAGE_TEXT_BUDGET`: Slack also
refuses a ``chat.postMessage`` whose block texts add up to roughly 12,000 characters
(``msg_blocks_too_long``; undocumented, reported in slackapi/bolt-js #2509 and #2867),
so every renderer keeps its total below a conservative budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from slack_sdk.models.blocks import Block

SECTION_TEXT_LIMIT = 3000
FIELD_TEXT_LIMIT = 2000
MAX_FIELDS = 10
HEADER_TEXT_LIMIT = 150
FALLBACK_TEXT_LIMIT = 3000
MAX_BLOCKS = 50
MESSAGE_TEXT_BUDGET = 10_000

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_USER_ID = re.compile(r"^[A-Z][A-Z0-9]{1,63}$")
# The only markup graph text may keep: ``<@U…>``/``<@W…>`` (one user) and ``<!subteam^S…>``
# (one user group, optionally ``|@label``). ASCII ids of Slack's shape and bounded length
# only; broadcasts (``<!channel>``), links and channel references stay escaped.
_KEPT_MENTION = re.compile(r"<(?:@[UW][A-Z0-9]{1,20}|!subteam\^S[A-Z0-9]{1,20}(?:\|@[A-Za-z0-9._-]{1,80})?)>", re.ASCII)
_LONGEST_MENTION = len("<!subteam^S") + 20 + len("|@") + 80 + len(">")
_FENCE = "```"
# A zero-width space keeps a literal ``` inside a code block from closing the block early.
_BROKEN_FENCE = "`\u200b``"


@dataclass(frozen=True)
class Rendered:
    """One message ready for ``chat.postMessage``/``chat.update``.

    ``text`` is the notification fallback (mrkdwn, at most 3000 characters) and
    ``blocks`` come from ``Block.to_dict()``, so slack_sdk has checked their limits.
    """

    text: str
    blocks: list[dict[str, Any]]


def build(*, text: str, blocks: Sequence[Block]) -> Rendered:
    """Serialize blocks (slack_sdk validates them here) and cut the fallback text."""
    if len(blocks) > MAX_BLOCKS:
        raise ValueError(f"a message holds at most {MAX_BLOCKS} blocks, got {len(blocks)}")
    serialized = [b.to_dict() for b in blocks]
    for block in serialized:
        _verbatim(block)
    return Rendered(text=fit(text, FALLBACK_TEXT_LIMIT, total=len(text)), blocks=serialized)


def _verbatim(node: Any) -> None:
    """Mark every mrkdwn text ``verbatim``: without it Slack auto-links channel names and
    parses some mentions in text that came from graphs, models and people. Escaping
    handles ``<...>``; this handles what Slack would otherwise find on its own. Our own
    explicit ``<@U…>`` mentions and ``<!date…>`` still render."""
    if isinstance(node, dict):
        if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
            node["verbatim"] = True
        for value in node.values():
            _verbatim(value)
    elif isinstance(node, list):
        for value in node:
            _verbatim(value)


def escape(text: str) -> str:
    """Make foreign text inert in mrkdwn: no mentions, no links, no broadcasts."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_keeping_mentions(text: str) -> str:
    """:func:`escape`, except that well-formed user and user-group mentions stay live.

    For what graphs say (outputs, reasons): ``approved by <@U123>`` shows the person,
    while ``<!channel>``, ``<!here>``, links, ``<#C…>`` and anything malformed (a label on a
    user mention, lower case, look-alike characters, an overlong id) stay inert.
    """
    parts: list[str] = []
    pos = 0
    for match in _KEPT_MENTION.finditer(text):
        # Without its label: Slack shows the group's real handle, and a label could read "@here".
        parts += [escape(text[pos : match.start()]), match.group(0).split("|", 1)[0].removesuffix(">") + ">"]
        pos = match.end()
    parts.append(escape(text[pos:]))
    return "".join(parts)


def mention_safe_cut(text: str, cut_at: int) -> int:
    """``cut_at``, moved back to the start of a kept mention it would cut in half."""
    start = text.rfind("<", max(0, cut_at - _LONGEST_MENTION), cut_at)
    if start != -1:
        match = _KEPT_MENTION.match(text, start)
        if match is not None and match.end() > cut_at:
            return start
    return cut_at


def escaped_length(char: str) -> int:
    """How many characters ``char`` takes once escaped."""
    return len(_ESCAPES.get(char, char))


def truncation_marker(total: int) -> str:
    """The visible note that text was cut; ``total`` is the original length."""
    return f"… (truncated, {total} chars)"


def fit(text: str, limit: int, *, total: int) -> str:
    """Cut already-escaped mrkdwn to ``limit`` characters, adding a marker when cut.

    The cut never ends inside an HTML entity (a dangling ``&am`` would show as garbage)
    and ``total`` is the length reported to the reader, usually the unescaped original.
    """
    if len(text) <= limit:
        return text
    marker = "\n" + truncation_marker(total)
    return _entity_safe_prefix(text, max(0, limit - len(marker))).rstrip() + marker


def cut(raw: str, limit: int, *, mentions: bool = False) -> str:
    """Escape ``raw`` (keeping mentions when ``mentions``) and fit it into ``limit`` characters."""
    return fit(escape_keeping_mentions(raw) if mentions else escape(raw), limit, total=len(raw))


def short(raw: str, limit: int = 200) -> str:
    """Foreign names (graphs, labels) escaped onto one line and cut with an ellipsis."""
    escaped = escape(" ".join(raw.split()))
    return escaped if len(escaped) <= limit else _entity_safe_prefix(escaped, limit - 1) + "…"


def cut_plain(raw: str, limit: int) -> str:
    """Cut plain_text (headers, labels): Slack does not parse it, so no escaping."""
    return raw if len(raw) <= limit else raw[: max(0, limit - 1)].rstrip() + "…"


def quote(raw: str, limit: int, *, mentions: bool = False) -> str:
    """``raw`` as an escaped mrkdwn block quote of at most ``limit`` characters."""
    escaped = escape_keeping_mentions(raw) if mentions else escape(raw)
    quoted = "\n".join("> " + line for line in escaped.split("\n"))
    return fit(quoted, limit, total=len(raw))


def code_block(raw: str, limit: int) -> str:
    """``raw`` in a fenced code block of at most ``limit`` characters.

    The content is still escaped (Slack wants ``&<>`` escaped everywhere) and a cut
    keeps the closing fence, so the marker after it renders as normal text.
    """
    body = escape(raw.replace(_FENCE, _BROKEN_FENCE))
    room = limit - 2 * (len(_FENCE) + 1)
    if len(body) <= room:
        return f"{_FENCE}\n{body}\n{_FENCE}"
    marker = "\n" + truncation_marker(len(raw))
    kept = _entity_safe_prefix(body, max(0, room - len(marker)))
    return f"{_FENCE}\n{kept}\n{_FENCE}{marker}"


def inline_code(raw: str, limit: int = 200) -> str:
    """Short foreign text (ids, names) as inline code; backticks would end it early."""
    return "`" + cut(raw.replace("`", "'"), limit) + "`"


def to_json(value: Any, *, indent: int | None = 2) -> str:
    """Readable JSON for reasons and inputs; anything not JSON-native becomes its str()."""
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


def mention(user: str) -> str:
    """A Slack user mention, or the escaped text when ``user`` is not a Slack id."""
    return f"<@{user}>" if _USER_ID.match(user) else escape(user)


def slack_date(epoch: float) -> str:
    """A date Slack shows in each reader's time zone, with a UTC fallback."""
    seconds = int(epoch)
    fallback = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{seconds}^{{date_short_pretty}} at {{time}}|{fallback}>"


def _entity_safe_prefix(escaped: str, length: int) -> str:
    """``escaped[:length]`` minus a trailing partial entity such as ``&am`` or a partial
    kept mention such as ``<@U12`` (in escaped text every raw ``<`` opens a kept mention,
    and half of one would be markup Slack cannot parse)."""
    prefix = escaped[:length]
    amp = prefix.rfind("&", max(0, length - 4))
    if amp != -1 and ";" not in prefix[amp:]:
        prefix = prefix[:amp]
    opened = prefix.rfind("<")
    if opened != -1 and ">" not in prefix[opened:]:
        prefix = prefix[:opened]
    return prefix
