"""``/graph audit <run id>``: a run's audit trail as ephemeral messages, and who-may lists.

One line per event: when (in each reader's time zone), who (a mention; "the bot" for
expiries and sweeps), what (``engine.audit.KINDS``), which card (its ask key) and what
was said. Event texts come from people and graphs, so they are escaped onto one line.

The record keeps the last ``engine.audit.MAX_EVENTS`` events and counts the ones it let
go; the log keeps all of them, and the first message says so when some are gone. A
trail is cut into messages of at most ``MAX_LINES`` lines, sections of at most
``SECTION_TEXT_LIMIT`` characters and a text total under ``MESSAGE_TEXT_BUDGET``; a
response_url takes at most five messages, so when even ``MAX_MESSAGES`` are not enough
the newest events are shown and the earlier ones counted.
"""

from __future__ import annotations

from collections.abc import Iterable

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject, SectionBlock

from bot.render.mrkdwn import (
    MESSAGE_TEXT_BUDGET,
    SECTION_TEXT_LIMIT,
    Rendered,
    build,
    inline_code,
    mention,
    short,
    slack_date,
)
from bot.render.titles import mention_ids
from engine.audit import KINDS, AuditEvent
from engine.policy import GROUP_ID, USER_ID
from engine.records import Run

MAX_LINES = 40  # events per message: a longer ephemeral wall of text is not read
MAX_MESSAGES = 4  # a response_url takes five; one is left for anything else
EVENT_TEXT_LIMIT = 600  # escaped characters of one event's text (``engine.audit.MAX_TEXT`` raw)
_HEAD_ROOM = 800  # the head and notes of a message, kept out of the lines' budget


def who_may(ids: Iterable[str], *, first: str = "") -> str:
    """``ids`` (Slack user and user-group ids) as mentions: ``"<@U1>, <@U2> or <!subteam^S3>"``.

    ``first`` (already mrkdwn) leads the list when given. Anything that is not an id of
    Slack's shape is left out rather than shown: only ids a policy accepted belong here.
    Empty when nothing is left.
    """
    valid = [i for i in dict.fromkeys(ids) if USER_ID.match(i) or GROUP_ID.match(i)]
    return mention_ids(valid, first=first)


def event_line(event: AuditEvent) -> str:
    """One event on one line of escaped mrkdwn."""
    who = _who(event.by) if event.by else "the bot"
    what = KINDS.get(event.kind) or short(event.kind, 40)
    line = f"{slack_date(event.at)} · {who} · {what}"
    if event.ask:
        key = short(event.ask.replace("`", "'"), 40)
        line += f" · card `{key}`"
    if event.text:
        line += f": {short(event.text, EVENT_TEXT_LIMIT)}"
    return line


def audit_trail(*, run: Run, max_messages: int = MAX_MESSAGES) -> list[Rendered]:
    """The run's audit trail, oldest first, as one or more ephemeral messages."""
    title = f"*Audit trail of run {inline_code(run.run_id)}* ({short(run.graph, 100)})"
    lines = [event_line(e) for e in sorted(run.audit, key=lambda e: e.at)]
    chunks = _chunks(lines, max_messages=max(max_messages, 1))
    unshown = len(lines) - sum(len(c) for c in chunks)
    notes: list[str] = []
    if run.audit_dropped:
        notes.append(f"{_events(run.audit_dropped)} not kept here; the bot's log has every event.")
    if unshown:
        notes.append(f"{_events(unshown)} not shown (too many for Slack); the bot's log has every event.")
    if not lines:
        notes.append("No events are recorded for this run.")
    messages: list[Rendered] = []
    for index, chunk in enumerate(chunks or [[]]):
        head = title if index == 0 else f"{title}, continued ({index + 1} of {len(chunks)})"
        blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=head))]
        if index == 0 and notes:
            blocks.append(ContextBlock(elements=[MarkdownTextObject(text=" ".join(notes))]))
        blocks += [SectionBlock(text=MarkdownTextObject(text=s)) for s in _sections(chunk)]
        messages.append(build(text=head, blocks=blocks))
    return messages


def _who(user: str) -> str:
    """A mention of a Slack id; anything else (it should not happen) as short inert text."""
    shown = mention(user)
    return shown if shown.startswith("<@") else short(user, 64)


def _events(count: int) -> str:
    return "1 earlier event is" if count == 1 else f"{count} earlier events are"


def _chunks(lines: list[str], *, max_messages: int) -> list[list[str]]:
    """The newest lines that fit into ``max_messages`` messages, oldest first.

    Packed from the newest back, so that a trail too long for the messages allowed loses
    its oldest events, the ones the log has kept longest anyway.
    """
    budget = MESSAGE_TEXT_BUDGET - _HEAD_ROOM
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for line in reversed(lines):
        if current and (len(current) >= MAX_LINES or size + len(line) + 1 > budget):
            chunks.append(current)
            if len(chunks) == max_messages:
                current = []
                break
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        chunks.append(current)
    return [list(reversed(c)) for c in reversed(chunks)]


def _sections(lines: list[str]) -> list[str]:
    """``lines`` joined into section texts of at most ``SECTION_TEXT_LIMIT`` characters."""
    sections: list[str] = []
    current = ""
    for line in lines:
        if current and len(current) + 1 + len(line) > SECTION_TEXT_LIMIT:
            sections.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        sections.append(current)
    return sections
