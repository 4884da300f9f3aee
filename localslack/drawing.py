"""A message's Block Kit drawn as SVG, roughly as Slack shows it.

The README's picture of a card comes from here (``python -m tests.docs.card`` captures the card
the real bot posts to the local Slack and draws it), so the picture cannot show a card the bot
does not send. What is drawn: the sender line, ``header``, ``section`` text and fields,
``context``, ``divider`` and ``actions`` buttons (primary, danger and plain), with mrkdwn bold,
italics, inline code, links, mentions (as ``@name``) and dates (their fallback text). Anything
else shows as its block type in brackets. Text is measured with Arial's widths and every run
carries its measured ``textLength``, so lines keep their layout whichever sans-serif font the
viewer has. ``python -m localslack.drawing message.json`` draws a message (or a list of blocks)
saved as JSON.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from html import escape
from typing import Any

WIDTH = 640
PAD = 16
AVATAR = 36
LEFT = PAD + AVATAR + 10  # where a message's content starts, right of the avatar
SANS = "Lato, 'Helvetica Neue', Helvetica, Arial, sans-serif"
MONO = "Menlo, Monaco, Consolas, 'DejaVu Sans Mono', monospace"
INK, GREY, LINK, CODE = "#1d1c1d", "#616061", "#1264a3", "#e01e5a"

# Arial's advance widths in thousandths of an em; other characters count as a lower-case "n".
_WIDTHS = dict(
    zip(
        " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~·",
        [278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278]
        + [556] * 10
        + [278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833]
        + [722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556]
        + [556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556]
        + [500, 722, 500, 500, 500, 334, 260, 334, 584, 278],
        strict=True,
    )
)
_BOLD = 1.08  # Arial Bold is about this much wider
_MARGIN = 1.12  # lines wrap early enough for a wider font (DejaVu Sans) to fit too


@dataclass(frozen=True, kw_only=True)
class Run:
    """A stretch of text in one style."""

    text: str
    bold: bool = False
    italic: bool = False
    code: bool = False
    mention: bool = False
    link: bool = False


def text_width(run: Run, size: float) -> float:
    if run.code:
        return 0.6 * (size - 2) * len(run.text)
    per_em = sum(_WIDTHS.get(char, 556) for char in run.text) / 1000
    return per_em * size * (_BOLD if run.bold else 1.0)


_TOKEN = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>|`([^`\n]+)`|\*([^*\n]+)\*|_([^_\n]+)_|(\n)")


def mrkdwn(text: str, *, names: Mapping[str, str]) -> list[Run]:
    """Slack's mrkdwn as runs; a ``Run(text="\\n")`` breaks the line."""
    runs: list[Run] = []
    at = 0
    for token in _TOKEN.finditer(text):
        runs.append(Run(text=text[at : token.start()]))
        at = token.end()
        target, label, code, bold, italic, newline = token.groups()
        if target is not None:
            runs.append(_angle(target, label, names=names))
        elif code is not None:
            runs.append(Run(text=code, code=True))
        elif bold is not None:
            runs += [replace(run, bold=True) for run in mrkdwn(bold, names=names)]
        elif italic is not None:
            runs += [replace(run, italic=True) for run in mrkdwn(italic, names=names)]
        elif newline is not None:
            runs.append(Run(text="\n"))
    runs.append(Run(text=text[at:]))
    return [replace(run, text=_unescape(run.text)) for run in runs if run.text]


def _angle(target: str, label: str | None, *, names: Mapping[str, str]) -> Run:
    if target.startswith(("@", "#")):
        name = label or names.get(target[1:], target[1:])
        return Run(text=f"{target[0]}{name}", mention=True)
    if target.startswith("!subteam^"):
        return Run(text=label or "@group", mention=True)
    if target.startswith("!date^"):
        return Run(text=_date(target, fallback=label or ""))
    if target.startswith("!"):
        return Run(text=f"@{target[1:]}", mention=True)
    return Run(text=label or target, link=True)


_DATES = {
    "{date_short_pretty}": "%b {day}",
    "{date_short}": "%b {day}, %Y",
    "{date_pretty}": "%B {day}",
    "{date}": "%B {day}, %Y",
    "{date_long}": "%A, %B {day}, %Y",
    "{date_long_pretty}": "%A, %B {day}",
    "{time}": "{hour}:%M %p",
}


def _date(target: str, *, fallback: str) -> str:
    """``<!date^ts^format|fallback>`` as a viewer in UTC reads it ("Nov 28 at 9:30 AM")."""
    parts = target.split("^")
    if len(parts) < 3 or not parts[1].isdigit():
        return fallback
    when = datetime.fromtimestamp(int(parts[1]), tz=UTC)
    shown = parts[2]
    for token, pattern in _DATES.items():
        shown = shown.replace(token, when.strftime(pattern).format(day=when.day, hour=when.hour % 12 or 12))
    return shown


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@dataclass(frozen=True, kw_only=True)
class Placed:
    run: Run
    x: float
    line: int
    width: float


def wrap(runs: Sequence[Run], *, size: float, width: float) -> tuple[list[Placed], int]:
    """Runs laid out in lines no wider than ``width``, breaking between words."""
    placed: list[Placed] = []
    x, line = 0.0, 0
    for run in runs:
        if run.text == "\n":
            x, line = 0.0, line + 1
            continue
        for word in re.findall(r"\S+\s*|\s+", run.text):
            piece = replace(run, text=word)
            wide = text_width(replace(piece, text=word.rstrip()), size) * _MARGIN
            if x > 0 and x + wide > width:
                x, line = 0.0, line + 1
            placed.append(Placed(run=piece, x=x, line=line, width=text_width(piece, size)))
            x += text_width(piece, size) * _MARGIN
    return _merged(placed), line + 1


def _merged(placed: list[Placed]) -> list[Placed]:
    """Neighbouring words in one style become one run (fewer, steadier text elements)."""
    merged: list[Placed] = []
    for item in placed:
        last = merged[-1] if merged else None
        if last and last.line == item.line and replace(last.run, text="") == replace(item.run, text=""):
            run = replace(last.run, text=last.run.text + item.run.text)
            merged[-1] = Placed(run=run, x=last.x, line=last.line, width=last.width + item.width)
        else:
            merged.append(item)
    return merged


class Canvas:
    """SVG elements, top to bottom."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.y = float(PAD)

    def text(self, runs: Sequence[Run], *, x: float, width: float, size: float, color: str = INK) -> float:
        """Draw wrapped runs at the current height; returns the height they took.

        Each line is one ``<text>`` whose runs are ``<tspan>``s placed by the viewer's own font,
        so a font wider or narrower than the estimate changes the gaps, never overlaps runs.
        """
        placed, lines = wrap(runs, size=size, width=width)
        leading = round(size * 1.45)
        for line in range(lines):
            spans = "".join(_span(item.run, size) for item in placed if item.line == line)
            if spans.strip():
                baseline = self.y + line * leading + leading / 2 + size * 0.35
                self.parts.append(
                    f'<text x="{x:.1f}" y="{baseline:.1f}" font-family="{escape(SANS)}" font-size="{size}" '
                    f'fill="{color}" xml:space="preserve">{spans}</text>'
                )
        return lines * leading

    def button(self, *, x: float, label: str, style: str | None) -> float:
        wide = text_width(Run(text=label, bold=True), 14) * _MARGIN + 24
        fill, edge, ink = {
            "primary": ("#007a5a", "#007a5a", "#ffffff"),
            "danger": ("#ffffff", "#dddddd", "#e01e5a"),
        }.get(style or "", ("#ffffff", "#dddddd", INK))
        self.parts.append(
            f'<rect x="{x:.1f}" y="{self.y:.1f}" width="{wide:.1f}" height="32" rx="6" fill="{fill}" stroke="{edge}"/>'
            f'<text x="{x + wide / 2:.1f}" y="{self.y + 21:.1f}" font-family="{escape(SANS)}" font-size="14" '
            f'font-weight="700" fill="{ink}" text-anchor="middle">{escape(label)}</text>'
        )
        return wide


def _span(run: Run, size: float) -> str:
    style = ' font-weight="700"' if run.bold else ""
    style += ' font-style="italic"' if run.italic else ""
    if run.code:
        style += f' font-family="{escape(MONO)}" font-size="{size - 2}" fill="{CODE}"'
    elif run.mention:
        style += f' fill="{LINK}" font-weight="700"'
    elif run.link:
        style += f' fill="{LINK}" text-decoration="underline"'
    return f"<tspan{style}>{escape(run.text)}</tspan>" if style else escape(run.text)


def _block(canvas: Canvas, block: Mapping[str, Any], *, names: Mapping[str, str]) -> None:
    width = WIDTH - LEFT - PAD
    kind = block.get("type")
    if kind == "header":
        canvas.y += canvas.text([Run(text=block["text"]["text"], bold=True)], x=LEFT, width=width, size=18)
    elif kind == "section":
        if "text" in block:
            canvas.y += canvas.text(_runs(block["text"], names=names), x=LEFT, width=width, size=15)
        fields = block.get("fields", [])
        column = (width - 16) / 2
        for row in range(0, len(fields), 2):
            heights = [
                canvas.text(_runs(field, names=names), x=LEFT + i * (column + 16), width=column, size=15)
                for i, field in enumerate(fields[row : row + 2])
            ]
            canvas.y += max(heights) + 4
    elif kind == "context":
        runs: list[Run] = []
        for element in block.get("elements", []):
            runs += [*_runs(element, names=names), Run(text="  ")] if "text" in element else []
        canvas.y += canvas.text(runs, x=LEFT, width=width, size=13, color=GREY)
    elif kind == "divider":
        canvas.parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - PAD}" y1="{canvas.y + 6}" y2="{canvas.y + 6}" stroke="#dddddd"/>'
        )
        canvas.y += 12
    elif kind == "actions":
        x = float(LEFT)
        for element in block.get("elements", []):
            if element.get("type") == "button":
                x += canvas.button(x=x, label=element["text"]["text"], style=element.get("style")) + 8
        canvas.y += 32
    elif kind == "table":
        _table(canvas, block, width=width)
    else:
        canvas.y += canvas.text([Run(text=f"[{kind}]")], x=LEFT, width=width, size=13, color=GREY)
    canvas.y += 8


def _table(canvas: Canvas, block: Mapping[str, Any], *, width: float) -> None:
    """A ``table`` block as Slack draws one: cells in a ruled grid, columns of equal width
    (the bot's tables have two: what, and its value). Only ``raw_text`` cells are read."""
    rows = [[str(c.get("text") or "") for c in row if isinstance(c, Mapping)] for row in block.get("rows") or []]
    columns = max((len(row) for row in rows), default=0)
    if not columns:
        return
    column, top = width / columns, canvas.y
    for row in rows:
        canvas.y += 6
        heights = [
            canvas.text([Run(text=cell)], x=LEFT + 8 + i * column, width=column - 16, size=14)
            for i, cell in enumerate(row)
        ]
        canvas.y += max(heights) + 6
        canvas.parts.append(f'<line x1="{LEFT}" x2="{LEFT + width}" y1="{canvas.y}" y2="{canvas.y}" stroke="#dddddd"/>')
    for i in range(1, columns):
        x = LEFT + i * column
        canvas.parts.append(f'<line x1="{x}" x2="{x}" y1="{top}" y2="{canvas.y}" stroke="#dddddd"/>')
    canvas.parts.append(
        f'<rect x="{LEFT}" y="{top}" width="{width}" height="{canvas.y - top}" rx="4" fill="none" stroke="#dddddd"/>'
    )


def _runs(text: Mapping[str, Any], *, names: Mapping[str, str]) -> list[Run]:
    if text.get("type") == "mrkdwn":
        return mrkdwn(str(text["text"]), names=names)
    return [Run(text=str(text["text"]))]


def message_svg(
    message: Mapping[str, Any],
    *,
    names: Mapping[str, str] | None = None,
    sender: str = "Graph Approvals",
    time: str = "",
) -> str:
    """The message (its ``blocks``, else its ``text``) as a standalone SVG document."""
    names = names or {}
    canvas = Canvas()
    canvas.parts.append(
        f'<rect x="{PAD}" y="{PAD + 2}" width="{AVATAR}" height="{AVATAR}" rx="6" fill="#007a5a"/>'
        f'<text x="{PAD + AVATAR / 2}" y="{PAD + 26}" font-family="{escape(SANS)}" font-size="15" font-weight="700" '
        f'fill="#ffffff" text-anchor="middle">GA</text>'
    )
    runs = [Run(text=sender, bold=True), Run(text="  ")]
    canvas.text(runs, x=LEFT, width=WIDTH, size=15)
    canvas.parts[-1] = canvas.parts[-1].replace(
        "</text>",
        f'<tspan font-size="10" font-weight="700" fill="{GREY}">APP</tspan>'
        f'<tspan font-size="12" fill="{GREY}">{escape("  " + time if time else "")}</tspan></text>',
    )
    canvas.y += 26
    blocks = message.get("blocks") or [{"type": "section", "text": {"type": "mrkdwn", "text": message.get("text", "")}}]
    for block in blocks:
        _block(canvas, block, names=names)
    height = round(canvas.y + PAD)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">\n'
        f'<rect x="0.5" y="0.5" width="{WIDTH - 1}" height="{height - 1}" rx="8" fill="#ffffff" stroke="#dddddd"/>\n'
        + "\n".join(canvas.parts)
        + "\n</svg>\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m localslack.drawing MESSAGE.json  (a message, or a list of blocks)", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as file:
        loaded = json.load(file)
    sys.stdout.write(message_svg({"blocks": loaded} if isinstance(loaded, list) else loaded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
