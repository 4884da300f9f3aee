"""``/graph stats [graph]``: how approvals went in a channel, in words (``engine.stats`` counts).

One ephemeral message: a head naming the window actually read (30 days, or the run
retention when shorter) and whether the cap on runs read was hit; per graph a summary line
and one line per ask name and rule; then the rows people approved unchanged every time,
offered as candidates for an ``auto="approve"`` rule or a rule by content. Graph names,
ask names and rule labels come from graph code, so all of it is escaped; the lines are
packed into sections like the other listings (``bot.render.listings.sections``).
"""

from __future__ import annotations

from typing import Final

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject, SectionBlock

from bot.render.listings import GRAPH_NAME_LIMIT, sections
from bot.render.mrkdwn import Rendered, build, escape, inline_code, short, slack_date
from engine.stats import DAY, MAX_RUNS_READ, MIN_CANDIDATE_ASKS, Ending, GraphStats, Row
from engine.stats_access import StatsReport

NAME_LIMIT: Final = 80  # characters of an ask's name shown
LABEL_LIMIT: Final = 80  # characters of a rule's label shown (labels are at most 80 anyway)

# The counts a line names, in this order, with their words (a count of 0 is left out).
_WORDS: Final = (
    (Ending.APPROVED, "approved as shown"),
    (Ending.EDITED, "approved with an Edit"),
    (Ending.REJECTED, "rejected"),
    (Ending.ANSWERED, "replied or retried"),
    (Ending.EXPIRED, "expired"),
    (Ending.AUTO_APPROVED, "auto-approved by the rule"),
    (Ending.AUTO_REJECTED, "auto-rejected by the rule"),
    (Ending.OPEN, "still open"),
    (Ending.CLOSED, "closed unanswered"),
)


def window_words(seconds: float) -> str:
    """``30 days``, ``1 day``, ``12 hours``: the window as the head says it."""
    if seconds >= DAY:
        days = round(seconds / DAY, 1)
        return f"{days:g} day" + ("" if days == 1 else "s")
    hours = max(1, round(seconds / 3600))
    return f"{hours} hour" + ("" if hours == 1 else "s")


def duration(seconds: float) -> str:
    """A wait in the unit that reads best: ``0.4 s``, ``90 s``, ``4 min``, ``3.5 h``, ``2.1 days``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < DAY:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / DAY:.1f} days"


def counts_words(row: Row) -> str:
    """``6 asks: 5 approved as shown, 1 rejected``, and the people's decision times."""
    parts = [f"{n} {words}" for end, words in _WORDS if (n := row.count(end))]
    said = f"{row.asks} {'ask' if row.asks == 1 else 'asks'}: " + ", ".join(parts)
    median, p90 = row.median, row.p90
    if median is not None and p90 is not None:
        said += f" · decided by people in {duration(median)} (median), {duration(p90)} (p90)"
    return said


def rule_words(row: Row) -> str:
    """The ask's name and the rule it was raised under (the graph's terms when none)."""
    rule = f"rule _{short(row.label, LABEL_LIMIT)}_" if row.label is not None else "the graph's terms"
    return f"{inline_code(row.name, NAME_LIMIT)} under {rule}"


def graph_lines(stats: GraphStats) -> list[str]:
    runs = f"{stats.runs} {'run' if stats.runs == 1 else 'runs'}"
    lines = [f"*{short(stats.graph, GRAPH_NAME_LIMIT)}* · {runs} · {counts_words(stats.total)}"]
    lines += [f"• {rule_words(row)}: {counts_words(row)}" for row in stats.rows]
    return lines


def stats_reply(*, report: StatsReport, graph: str | None, command: str) -> Rendered:
    """The reply to ``/graph stats [graph]`` for what ``report`` lets this person see."""
    window = window_words(report.window)
    which = f"*{short(graph, GRAPH_NAME_LIMIT)}* in this channel" if graph else "this channel"
    if not report.any_runs:
        return Rendered(text=f"No runs of {which} in the last {window}.", blocks=[])
    if not report.graphs:
        text = (
            f"Nothing to show: no graph run in {which} in the last {window} is one you may oversee "
            "(its policy does not let you decide its asks)."
        )
        return Rendered(text=text, blocks=[])
    head = f"*Approvals in {which} over the last {window}* (runs started since {slack_date(report.since)})"
    if report.capped:
        head += f". Only the newest {MAX_RUNS_READ:,} runs of the window were read; older ones are not counted."
    lines: list[str] = []
    for stats in report.graphs:
        lines += graph_lines(stats)
    rows = [(g.graph, row) for g in report.graphs for row in g.rows if row.always_approved]
    if rows:
        lines.append(
            f"*Approved unchanged every time* (at least {MIN_CANDIDATE_ASKS} decided, none edited, rejected or "
            'expired): candidates for an `auto="approve"` rule, or a rule by content:'
        )
        lines += [
            f"• *{short(g, GRAPH_NAME_LIMIT)}*, {rule_words(row)}: {row.decided} of {row.decided} approved as shown"
            for g, row in rows
        ]
    footer = (
        "Counted from the records of the runs started in this channel (a finished run keeps its latest asks); "
        f"decision times from an ask to a person's decision. One graph: `{escape(command)} stats {escape('<graph>')}`"
    )
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=head))]
    blocks += [SectionBlock(text=MarkdownTextObject(text=s)) for s in sections(lines)]
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=footer)]))
    return build(text=f"Approvals in {which} over the last {window}", blocks=blocks)
