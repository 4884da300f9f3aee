"""Slack mrkdwn as styled terminal text, for the offline demo.

Slack shows ``*bold*``, ``_italic_``, ``~strike~`` and ```code``` as styling, resolves
``<@U…>`` mentions, ``<url|label>`` links and ``:emoji:`` shortcodes, and unescapes
``&amp; &lt; &gt;``. The demo shows the same in a terminal, so none of the bot's markup
leaks onto the screen. Text stays a list of styled runs until it is wrapped: a style is
then opened and closed on each line, and never bleeds into the box border of the next.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# The shortcodes the bot writes (bot/render) and the outcome marks it could write as codes.
# Text-presentation characters where a glyph exists in both widths, so that a terminal
# draws them one column wide, as :func:`cols` counts them.
EMOJI = {
    "arrow_forward": "▶",
    "white_check_mark": "✅",
    "x": "❌",
    "no_entry": "⛔",
    "no_entry_sign": "🚫",
    "warning": "⚠",
    "speech_balloon": "💬",
    "lock": "🔒",
    "repeat": "🔁",
    "pencil2": "✏",
    "hourglass_flowing_sand": "⏳",
    # A run's status message (node states), its Home tab and its listings.
    "raised_hand": "✋",
    "white_circle": "⚪",
    "large_blue_circle": "🔵",
    "information_source": "\u2139",  # INFORMATION SOURCE
    "gear": "⚙",
    "arrows_counterclockwise": "🔄",
    "grey_question": "❔",
    "bell": "🔔",
    "rotating_light": "🚨",
}
_SGR = {"bold": "1", "dim": "2", "italic": "3", "strike": "9", "code": "36", "primary": "32", "danger": "31"}
_ENTITY = re.compile(r"<([^<>\n]*)>")
_SHORTCODE = re.compile(r":([a-z0-9_+-]+):")
_INLINE = re.compile(
    r"`(?P<code>[^`\n]+)`"
    r"|(?<![\w*])\*(?=\S)(?P<bold>[^*\n]*?\S)\*(?![\w*])"
    r"|(?<![\w_])_(?=\S)(?P<italic>[^_\n]*?\S)_(?![\w_])"
    r"|(?<![\w~])~(?=\S)(?P<strike>[^~\n]*?\S)~(?![\w~])"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # C0 and C1 but the newline
_TAB = 4


@dataclass(frozen=True)
class Run:
    """A piece of text in one style (a set of names from ``_SGR``)."""

    text: str
    style: frozenset[str] = frozenset()


Line = list[Run]


def resolve(text: str, *, user_name: Callable[[str], str]) -> str:
    """Mentions, links, dates and emoji resolved; entities still escaped (markers stay parseable).

    ``user_name`` names a user id, and a channel id where it knows the channel (``<#C123>``).
    """
    text = _ENTITY.sub(lambda m: _entity(m.group(1), user_name), text)
    return _SHORTCODE.sub(lambda m: EMOJI.get(m.group(1), m.group(0)), text)


def _entity(inner: str, user_name: Callable[[str], str]) -> str:
    target, _, label = inner.partition("|")
    if target.startswith("@"):  # <@U123> or <@U123|name>
        return "@" + (label.lstrip("@") or user_name(target[1:]))
    if target.startswith("#"):  # <#C123|general>, or <#C123>: its name, where the demo knows it
        return "#" + (label or user_name(target[1:]))
    if target.startswith("!subteam^") and not label:  # <!subteam^S1>: the group's handle, where the demo knows it
        return "@" + user_name(target.removeprefix("!subteam^"))
    if target.startswith("!"):  # <!subteam^S1|@group>, <!here>, <!date^…|fallback>
        return label or ("@" + target[1:].split("^")[0])
    if not label or label == target:
        return target
    return f"{label} ({target.removeprefix('mailto:')})"


def inline(text: str, *, user_name: Callable[[str], str], style: Iterable[str] = ()) -> Line:
    """One line (or several, kept as ``\\n`` inside runs) of mrkdwn as styled runs."""
    return _styled(resolve(text, user_name=user_name), frozenset(style))


def _styled(text: str, style: frozenset[str]) -> Line:
    runs: Line = []
    at = 0
    for match in _INLINE.finditer(text):
        if match.start() > at:
            runs.append(Run(html.unescape(text[at : match.start()]), style))
        kind = str(match.lastgroup)
        body = match.group(kind)
        if kind == "code":  # literal: no styling inside code
            runs.append(Run(html.unescape(body), style | {"code"}))
        else:
            runs.extend(_styled(body, style | {kind}))
        at = match.end()
    if at < len(text):
        runs.append(Run(html.unescape(text[at:]), style))
    return runs


def plain(text: str, *, user_name: Callable[[str], str]) -> str:
    """Slack mrkdwn as unstyled text: markers dropped, mentions, links and emoji resolved."""
    return "".join(run.text for run in inline(text, user_name=user_name))


def printable(text: str) -> str:
    """``text`` that cannot drive a terminal: tabs as spaces, other control characters visible.

    Graph output is shown as it came; an escape sequence in it (``\\x1b]0;title\\x07``,
    ``\\x1b[2J``) must not retitle, clear or move anything. C0 controls become caret
    notation (``^[``, ``^G``), C1 controls U+FFFD; newlines stay.
    """
    if "\t" in text:
        text = "\n".join(line.expandtabs(_TAB) for line in text.split("\n"))
    return _CONTROL.sub(_shown, text)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return "^" + chr(code ^ 0x40) if code < 0x20 or code == 0x7F else "\ufffd"


def cols(text: str) -> int:
    """Terminal columns ``text`` takes: wide (East Asian W/F) characters two, marks none.

    A narrow character followed by U+FE0F (emoji presentation, ``⚠️``) is drawn two wide.
    """
    width, last = 0, 0
    for char in text:
        if char == "\ufe0f":
            width += 1 if last == 1 else 0
            last = 2 if last else 0
            continue
        if unicodedata.combining(char) or char in "\u200b\u200d":
            continue
        last = 2 if unicodedata.east_asian_width(char) in "WF" else 1
        width += last
    return width


def wrap(line: Line, width: int) -> list[Line]:
    """Word-wrap styled runs to ``width`` columns, hard line breaks kept.

    A continued line is indented two more than the line it continues, so a long
    ``name: value`` or list item still reads as one entry.
    """
    out: list[Line] = []
    for hard in _split_lines(line):
        text = _text(hard)
        hang = [Run(" " * min(len(text) - len(text.lstrip(" ")) + 2, width // 2))]
        current: Line = []
        used, filled = 0, False
        for word in _words(hard):
            size = cols(word.text)
            if word.text.isspace():
                if not (filled and used + size > width):  # a space at a break is dropped
                    current.append(word)
                    used += size
                continue
            # A word too long for any line is cut where it stands: a break first would leave
            # a line of only what came before it (a quote's bar, a list's dash).
            if filled and used + size > width and size <= width - cols(hang[0].text):
                out.append(_trimmed(current))
                current, used = list(hang), cols(hang[0].text)
            while used + size > width:  # a word longer than a line is cut
                head, tail = _cut(word.text, width - used)
                out.append([*current, Run(head, word.style)])
                current, used = list(hang), cols(hang[0].text)
                word = Run(tail, word.style)
                size = cols(tail)
            current.append(word)
            used += size
            filled = True
        out.append(_trimmed(current))
    return out


def _trimmed(line: Line) -> Line:
    while line and line[-1].text.isspace():
        line = line[:-1]
    return line


def _text(line: Line) -> str:
    return "".join(run.text for run in line)


def _split_lines(line: Line) -> list[Line]:
    lines: list[Line] = [[]]
    for run in line:
        for index, part in enumerate(run.text.split("\n")):
            if index:
                lines.append([])
            if part:
                lines[-1].append(Run(part, run.style))
    return lines


def _words(line: Line) -> list[Run]:
    return [Run(piece, run.style) for run in line for piece in re.findall(r"\s+|\S+", run.text)]


def _cut(text: str, room: int) -> tuple[str, str]:
    """Split ``text`` so the head fits ``room`` columns (at least one character moves)."""
    for index in range(len(text)):
        if cols(text[: index + 1]) > room:
            return text[: max(index, 1)], text[max(index, 1) :]
    return text, ""


def paint(line: Line, *, color: bool) -> str:
    """The line as terminal text: ANSI styling per run when ``color``, plain otherwise."""
    if not color:
        return _text(line)
    merged: Line = []
    for run in line:  # one escape per stretch of one style, not per word
        if merged and merged[-1].style == run.style:
            merged[-1] = Run(merged[-1].text + run.text, run.style)
        elif run.text:
            merged.append(run)
    parts = []
    for run in merged:
        codes = ";".join(_SGR[s] for s in sorted(run.style) if s in _SGR)
        parts.append(f"\x1b[{codes}m{run.text}\x1b[0m" if codes else run.text)
    return "".join(parts)


def visible(text: str) -> str:
    """``text`` without ANSI escapes: what the columns are counted on."""
    return ANSI.sub("", text)
