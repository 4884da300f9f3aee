"""``/graph runs`` and ``/graph status <run id>``: a channel's recent runs, and one run's state.

Both are ephemeral answers read from the store, never from Slack: no permalink is looked
up (``chat.getPermalink`` is one rate-limited call per run), a run is named by its id, and
``/graph status <id>`` says the rest.

``run_list`` is one line per run (status, id, graph, who started it and when, what it
waits for). ``run_status`` is one run: its status, who started it and when, the nodes run
so far, each question it waits for with who may decide it (and the approvals gathered
under a quorum), and how it ended. Graph names, node ids, titles and outputs come from
graph code and people, so all of it is escaped; the lines are packed into sections of at
most ``SECTION_TEXT_LIMIT`` characters, within one message's block count and text budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject, SectionBlock

from bot.render.mrkdwn import (
    MESSAGE_TEXT_BUDGET,
    SECTION_TEXT_LIMIT,
    Rendered,
    build,
    cut,
    escape,
    fit,
    inline_code,
    mention,
    short,
    slack_date,
)
from bot.render.titles import card_title, mention_ids, who_may_decide
from engine.delivery import card_order
from engine.outcome import failure_parts, rejections
from engine.records import Ask, AskStatus, Run, RunStatus

MAX_RUNS: Final = 15  # runs listed by ``/graph runs``
MAX_TRAIL_SHOWN: Final = 10  # nodes named by ``/graph status``, the latest ones
MAX_ASKS_SHOWN: Final = 10  # questions named by ``/graph status``; the rest are counted
GRAPH_NAME_LIMIT: Final = 60
NODE_ID_LIMIT: Final = 60
TITLE_LIMIT: Final = 150
END_LIMIT: Final = 300  # escaped characters of an output's or error's first line
ASK_LINE_LIMIT: Final = 900  # one question, who may decide it and who approved so far

STATUS_EMOJI: Final = {
    RunStatus.RUNNING: ":gear:",
    RunStatus.WAITING: ":hourglass_flowing_sand:",
    RunStatus.RESUMING: ":arrows_counterclockwise:",
    RunStatus.COMPLETED: ":white_check_mark:",
    RunStatus.FAILED: ":x:",
    RunStatus.REJECTED: ":no_entry:",
    RunStatus.CANCELLED: ":no_entry_sign:",
}
NO_RUNS: Final = "No runs in this channel yet."
_HEAD_ROOM = 600  # a message's head and footer, kept out of the lines' budget


def open_asks(run: Run) -> list[Ask]:
    """The run's questions still waiting for a person, in the order their cards were posted."""
    return sorted((a for a in run.asks.values() if a.status is AskStatus.PENDING), key=card_order)


def state_words(run: Run) -> str:
    """What the run is doing, in a few words: ``waiting for 2 decisions``, ``completed``."""
    status = run.status
    if not status.terminal and run.cancelled_by:
        return "cancelling"
    pending = len(open_asks(run))
    if status is RunStatus.WAITING:
        if pending:
            return f"waiting for {_decisions(pending)}"
        return "answered, resuming soon" if run.decided_asks() else "waiting"
    words = status.value
    return f"{words}, waiting for {_decisions(pending)}" if pending else words


def run_line(run: Run) -> str:
    """One run on one line of escaped mrkdwn."""
    emoji = STATUS_EMOJI.get(run.status, ":grey_question:")
    return (
        f"{emoji} {inline_code(run.run_id, 40)} *{short(run.graph, GRAPH_NAME_LIMIT)}* · "
        f"started by {_who(run.started_by)} {slack_date(run.created_at)} · {state_words(run)}"
    )


def run_list(*, runs: Sequence[Run], command: str) -> Rendered:
    """The reply to ``/graph runs``: ``runs`` newest first, at most ``MAX_RUNS`` of them
    shown (the caller asks the store for one more, to know whether older ones exist)."""
    if not runs:
        return Rendered(text=NO_RUNS, blocks=[])
    shown = list(runs[:MAX_RUNS])
    more = len(runs) > len(shown)
    head = "*Recent runs in this channel*, newest first:" if len(shown) > 1 else "*The run in this channel:*"
    if more:
        head = f"*The {len(shown)} latest runs in this channel*, newest first (older ones are not shown):"
    footer = f"Details of one run: `{escape(command)} status {escape('<run id>')}`"
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=head))]
    blocks += [SectionBlock(text=MarkdownTextObject(text=s)) for s in sections([run_line(r) for r in shown])]
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=footer)]))
    fallback = f"{len(shown)} recent {'run' if len(shown) == 1 else 'runs'} in this channel"
    return build(text=fallback, blocks=blocks)


def trail_line(run: Run) -> str:
    """The nodes run so far, the latest ``MAX_TRAIL_SHOWN`` of them, with "…" before when cut."""
    if not run.trail:
        return "Nodes run so far: none yet."
    shown = [inline_code(node, NODE_ID_LIMIT) for node in run.trail[-MAX_TRAIL_SHOWN:]]
    earlier = len(run.trail) - len(shown)
    lead = f"… ({earlier} earlier) → " if earlier else ""
    return f"Nodes run so far: {lead}{' → '.join(shown)}"


def ask_line(ask: Ask) -> str:
    """One question the run waits for: its title, who may decide, the approvals so far, its expiry."""
    title = short(card_title(ask), TITLE_LIMIT)
    who = who_may_decide(ask, leaving_out=tuple(ask.votes))
    line = f"• *{title}*: {who} may decide"
    rules = ask.rules
    if rules.quorum > 1:
        line += f" ({len(ask.votes)} of {rules.quorum} approvals so far"
        line += f": {mention_ids(ask.voters(), joiner='and')})" if ask.votes else ")"
    if ask.escalated:
        line += ", escalated"
    if rules.expires_at is not None:
        line += f"; it expires {slack_date(rules.expires_at)}"
    return fit(line, ASK_LINE_LIMIT, total=len(line))


def run_status(*, run: Run, command: str) -> Rendered:
    """The reply to ``/graph status <run id>``: one run as it stands."""
    emoji = STATUS_EMOJI.get(run.status, ":grey_question:")
    head = f"{emoji} *Run {inline_code(run.run_id, 40)}* of *{short(run.graph, GRAPH_NAME_LIMIT)}*: {state_words(run)}"
    started = f"Started by {_who(run.started_by)} {slack_date(run.created_at)}"
    if run.updated_at > run.created_at:
        started += f"; last change {slack_date(run.updated_at)}"
    lines = [started + ".", trail_line(run)]
    asks = open_asks(run)
    if asks:
        lines.append("*Waiting for:*")
        lines += [ask_line(a) for a in asks[:MAX_ASKS_SHOWN]]
        if len(asks) > MAX_ASKS_SHOWN:
            lines.append(f"…and {len(asks) - MAX_ASKS_SHOWN} more questions")
    answered = [a for a in run.asks.values() if a.status is AskStatus.DECIDED and a.decision is not None]
    if answered and not run.status.terminal:
        who = mention_ids([a.decision.user for a in answered if a.decision is not None], joiner="and")
        lines.append(f"Answered by {who}; the run goes on with {'it' if len(answered) == 1 else 'them'} shortly.")
    end = end_line(run)
    if end:
        lines.append(end)
    footer = f"Who did what, and when: `{escape(command)} audit {escape(run.run_id)}`"
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=head))]
    blocks += [SectionBlock(text=MarkdownTextObject(text=s)) for s in sections(lines)]
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=footer)]))
    return build(text=head, blocks=blocks)


def end_line(run: Run) -> str:
    """How the run ended (its output's or error's first line, or who cancelled); "" while it goes on."""
    match run.status:
        case RunStatus.COMPLETED:
            denied = rejections(run)
            after = ""
            if denied:
                users = [a.decision.user for a in denied if a.decision is not None]
                after = f" after a rejection by {mention_ids(users, joiner='and')}"
            first = _first_line(run.output or "")
            if not first:
                return f"Finished{after}, no output."
            return f"Finished{after}: {cut(first, END_LIMIT)}"
        case RunStatus.FAILED:
            node, first, more = failure_parts(run.error)
            where = f" at node {inline_code(node, NODE_ID_LIMIT)}" if node else ""
            tail = " (the error goes on; the bot's log has the details)" if more else ""
            return f"Failed{where}: {cut(first, END_LIMIT)}{tail}"
        case RunStatus.REJECTED:
            first = _first_line(run.error or "")
            if not first:
                return "Rejected, node not run."
            return f"Rejected, node not run: {cut(first, END_LIMIT)}"
        case RunStatus.CANCELLED:
            return f"Cancelled by {_who(run.cancelled_by)}." if run.cancelled_by else "Cancelled."
    return ""


def sections(lines: Sequence[str], *, budget: int = MESSAGE_TEXT_BUDGET - _HEAD_ROOM) -> list[str]:
    """``lines`` joined into section texts of at most ``SECTION_TEXT_LIMIT`` characters.

    Lines past ``budget`` characters in all are left out and counted in a last line, so
    the sections of one message stay few (a section is only closed when the next line
    would not fit, so ``budget`` characters make at most a handful).
    """
    packed: list[str] = []
    current = ""
    used = 0
    for index, line in enumerate(lines):
        line = fit(line, SECTION_TEXT_LIMIT, total=len(line))
        if used + len(line) + 1 > budget:
            rest = len(lines) - index
            line = f"…and {rest} more {'line' if rest == 1 else 'lines'} not shown"
            if current and len(current) + 1 + len(line) > SECTION_TEXT_LIMIT:
                packed.append(current)
                current = ""
            current = f"{current}\n{line}" if current else line
            break
        if current and len(current) + 1 + len(line) > SECTION_TEXT_LIMIT:
            packed.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
        used += len(line) + 1
    if current:
        packed.append(current)
    return packed


def _who(user: str) -> str:
    """A mention of a Slack id; anything else (it should not happen) as short inert text."""
    shown = mention(user)
    return shown if shown.startswith("<@") else short(user, 64)


def _decisions(count: int) -> str:
    return "1 decision" if count == 1 else f"{count} decisions"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.strip().split("\n") if line.strip()), "")
