"""The App Home tab: what waits for the viewer (with working buttons) and their recent runs.

The asks are rendered with the card's own blocks and buttons (``cards.ask_card``), so a
button in Home is the same button as on the card: same action ids, same value (the run
and ask ids only), handled by the same listeners. Block ids are prefixed with the run id,
because two runs' ask keys may coincide and a view's block ids must be unique. A Home tab
holds at most 100 blocks; what does not fit is counted and ``/graph pending`` lists it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from slack_sdk.models.blocks import (
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.render import cards
from bot.render.listings import STATUS_EMOJI
from bot.render.mrkdwn import Rendered, build, cut, inline_code, short, slack_date
from bot.render.titles import card_title
from engine.records import Ask, Run

MAX_HOME_BLOCKS: Final = 100
_RESERVED = 8 + 2 * 10  # headers, notes, and up to 10 run lines
Link = Callable[[Run, Ask | None], str | None]


def home_view(
    *,
    waiting: Sequence[tuple[Run, Ask]],
    runs: Sequence[Run],
    link: Link,
    note: str | None = None,
    command: str = "/graph",
) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if note:
        blocks.append(_section(f":information_source: {cut(note, 1000)}"))
    blocks.append(HeaderBlock(text=PlainTextObject(text="Waiting for you")).to_dict())
    if not waiting:
        blocks.append(_context("Nothing waits for you: no question any graph asked is yours to decide right now."))
    shown = 0
    for run, ask in waiting:
        card = _ask_blocks(run, ask, link=link)
        if len(blocks) + len(card) + _RESERVED > MAX_HOME_BLOCKS:
            break
        blocks += card
        shown += 1
    if shown < len(waiting):
        blocks.append(_context(f"…and {len(waiting) - shown} more: `{command} pending` lists them all."))
    blocks.append(HeaderBlock(text=PlainTextObject(text="Your runs")).to_dict())
    if not runs:
        start = f"`{command} run &lt;graph&gt; &lt;task&gt;`"
        blocks.append(_context(f"You have not started a run yet: {start} in a channel."))
    for run in runs[:10]:
        blocks.append(_section(_run_line(run, link=link(run, None))))
    return View(type="home", blocks=blocks).to_dict()


def _ask_blocks(run: Run, ask: Ask, *, link: Link) -> list[dict[str, Any]]:
    rendered = cards.ask_card(run=run, ask=ask, verdicts=ask.verdicts)
    shown = rendered.plain_blocks or rendered.blocks  # tables are for messages only, not views
    blocks = [dict(b, block_id=f"home:{run.run_id}:{b['block_id']}") if "block_id" in b else b for b in shown]
    where = link(run, ask)
    channel = f"<#{run.channel}>" if run.channel else "its channel"
    blocks.append(_context(f"<{where}|Open the card> in {channel}" if where else f"The card is in {channel}."))
    blocks.append(DividerBlock().to_dict())
    return blocks


def _run_line(run: Run, *, link: str | None) -> str:
    waiting = len(run.pending_asks())
    what = f"waits for {waiting} decision{'s' if waiting != 1 else ''}" if waiting else run.status.value
    name = f"*{short(run.graph)}*"
    task = cut(run.task, 120)
    head = f"<{link}|{name}>" if link else name
    return (
        f"{STATUS_EMOJI[run.status]} {head} {task} · {what} · {inline_code(run.run_id)} · {slack_date(run.created_at)}"
    )


def _section(text: str) -> dict[str, Any]:
    return SectionBlock(text=MarkdownTextObject(text=text)).to_dict()


def _context(text: str) -> dict[str, Any]:
    return ContextBlock(elements=[MarkdownTextObject(text=text)]).to_dict()


def pending_list(*, waiting: Sequence[tuple[Run, Ask]], link: Link, command: str = "/graph") -> Rendered:
    """``/graph pending``: one line per ask the caller may decide, with a link to its card."""
    if not waiting:
        text = "Nothing waits for you: no question any graph asked is yours to decide right now."
        return build(text=text, blocks=[_section_block(text)])
    lines = []
    for run, ask in waiting:
        title = cut(card_title(ask), 150)
        where = link(run, ask)
        head = f"<{where}|{title}>" if where else title
        lines.append(
            f":raised_hand: {head} · *{short(run.graph)}* {inline_code(run.run_id)} · {slack_date(ask.created_at)}"
        )
    blocks: list[SectionBlock | ContextBlock] = []
    for start in range(0, len(lines), 10):
        blocks.append(_section_block("\n".join(lines[start : start + 10])))
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text="Decide on each card, or from the bot's Home tab.")]))
    return build(text=f"{len(waiting)} question(s) wait for you", blocks=blocks)


def _section_block(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text))
