"""Escaping, cutting and small formatting helpers for Slack ``mrkdwn`` text.

Everything the bot shows comes partly from graph code, models and users: task text,
interrupt reasons, tool inputs, replies, final outputs. Slack parses ``<...>`` in mrkdwn
as mentions, broadcasts and links, so unescaped text could ping a person, a user group
or ``@channel``, or disguise a link behind a label. Every piece of foreign text therefore
goes through :func:`escape` (or a helper built on it) before it reaches a block, with no
exception: the only live markup in a message is what the bot builds itself from ids it
checked (:func:`mention`, ``titles.mention_id``, :func:`slack_date`).

:func:`escape` also makes invisible characters visible (:func:`visible`): bidirectional
overrides and zero-width characters would let a card show one argument while another
runs, so each shows as a marker such as ``⟨U+202E⟩``. Slack also rejects a whole message
when one text is a character too long, so texts are cut here to fixed limits with a
visible marker instead of being sent and refused.

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
# Characters that change how text reads without showing themselves: C0/C1 controls (but
# tab and line breaks), bidirectional embeddings, overrides and isolates, zero-width
# characters, invisible operators, interlinear annotations, and unpaired surrogates (which
# no UTF-8 text may hold; Slack would refuse the whole message).
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
_PICTOGRAPH = re.compile("[\u2600-\u27bf\ufe0f\U0001f000-\U0001faff]")
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
    # The same message without blocks some workspaces lack (``table``): sent when Slack
    # refuses ``blocks`` as ``invalid_blocks`` (``bot.publisher``). None: nothing to lack.
    plain_blocks: list[dict[str, Any]] | None = None


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


def visible(text: str) -> str:
    """``text`` with every invisible character (see ``_INVISIBLE``) shown as ``⟨U+XXXX⟩``.

    An approver must see the argument that runs: a right-to-left override (``\\u202e``) or a zero-width
    space inside an account name look like something else, and the person cannot tell.
    Plain text (headers, labels, titles) goes through this too; Slack does not parse it.
    """
    if not _INVISIBLE.search(text):
        return text
    return _INVISIBLE.sub(lambda match: _marker(text, match), text)


def _marker(text: str, match: re.Match[str]) -> str:
    char, at = match.group(0), match.start()
    joins_emoji = 0 < at < len(text) - 1 and bool(_PICTOGRAPH.match(text[at - 1]) and _PICTOGRAPH.match(text[at + 1]))
    if char == "\u200d" and joins_emoji:
        return char  # a zero-width joiner between two pictographs builds one emoji (a family, a flag)
    return f"⟨U+{ord(char):04X}⟩"


def invisible_chars() -> re.Pattern[str]:
    """The characters :func:`visible` shows as markers (for JSON, which escapes them instead)."""
    return _INVISIBLE


def escape(text: str) -> str:
    """Make foreign text inert in mrkdwn: no mentions, no links, no broadcasts, nothing hidden."""
    return _escape_markup(visible(text))


def _escape_markup(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escaped_length(char: str) -> int:
    """How many characters ``char`` takes once escaped (at most: a kept emoji joiner is one)."""
    return len(_ESCAPES[char]) if char in _ESCAPES else len(visible(char))


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


def cut(raw: str, limit: int) -> str:
    """Escape ``raw`` and fit it into ``limit`` characters."""
    return fit(escape(raw), limit, total=len(raw))


def short(raw: str, limit: int = 200) -> str:
    """Foreign names (graphs, labels) escaped onto one line and cut with an ellipsis."""
    escaped = escape(" ".join(raw.split()))
    return escaped if len(escaped) <= limit else _entity_safe_prefix(escaped, limit - 1) + "…"


def cut_plain(raw: str, limit: int) -> str:
    """Cut plain_text (headers, labels): Slack does not parse it, so no escaping; invisible
    characters are still shown (:func:`visible`)."""
    shown = visible(raw)
    return shown if len(shown) <= limit else shown[: max(0, limit - 1)].rstrip() + "…"


def quote(raw: str, limit: int) -> str:
    """``raw`` as an escaped mrkdwn block quote of at most ``limit`` characters."""
    escaped = escape(raw)
    quoted = "\n".join("> " + line for line in escaped.split("\n"))
    return fit(quoted, limit, total=len(raw))


def code_block(raw: str, limit: int) -> str:
    """``raw`` in a fenced code block of at most ``limit`` characters.

    The content is still escaped (Slack wants ``&<>`` escaped everywhere) and a cut
    keeps the closing fence, so the marker after it renders as normal text.
    """
    body = _escape_markup(visible(raw).replace(_FENCE, _BROKEN_FENCE))
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
    mention of the bot's own such as ``<@U12`` (in escaped text every raw ``<`` opens
    markup the bot built, and half of it would be markup Slack cannot parse)."""
    prefix = escaped[:length]
    amp = prefix.rfind("&", max(0, length - 4))
    if amp != -1 and ";" not in prefix[amp:]:
        prefix = prefix[:amp]
    opened = prefix.rfind("<")
    if opened != -1 and ">" not in prefix[opened:]:
        prefix = prefix[:opened]
    return prefix
