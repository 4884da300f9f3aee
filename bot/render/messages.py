"""Run messages (started, completed, rejected, failed, cancelled), the reminders and
escalations posted in a run's thread, and slash-command replies (help and mistakes are
``bot.render.usage``'s).

Each ending reads as what it is: a run whose decisive answer was a no is headed as a
rejection (who, why), not as a success; a failure is one line saying where and what.

A run's final output can be megabytes of model text. It is shown in sections of at most
3000 characters, within the block count and the total-text budget of one message, and
the message says how much it shows; code fences cut at a section boundary are closed
and reopened so the rest does not turn into stray formatting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject, SectionBlock

from bot.render.mrkdwn import (
    FALLBACK_TEXT_LIMIT,
    MESSAGE_TEXT_BUDGET,
    SECTION_TEXT_LIMIT,
    Rendered,
    build,
    cut,
    escape,
    escaped_length,
    fit,
    inline_code,
    mention,
    quote,
    short,
    slack_date,
)
from bot.render.titles import ANYONE, card_title, mention_ids, still_to_approve_leaving_out, who_may_decide
from bot.render.usage import DEFAULT_COMMAND
from engine.deadlines import ESCALATE, human_duration
from engine.outcome import decisive_asks, failure_parts, rejections
from engine.oversight import what_ran
from engine.ports import StartLimited
from engine.records import Ask, Run

MAX_OUTPUT_BLOCKS = 45

_FENCE = "```"
_FENCE_OVERHEAD = 2 * (len(_FENCE) + 1)  # "```\n" reopened at the start, "\n```" closed at the end
_MIN_SECTION = 200
_TASK_LIMIT = 1500
_REPLY_LIMIT = 3000
_REJECTIONS_LIMIT = 1500  # who rejected what and why, before the output
_MAX_REJECTIONS = 5
NODE_NOT_RUN = "stopped: rejected, node not run"
# How each ending's message begins (its fallback text): the mark, then the graph's name.
_ENDING_MARKS = {":white_check_mark:": "finished", ":x:": "failed", ":no_entry_sign:": "cancelled"}


def run_started(*, run: Run) -> Rendered:
    """The run's first message; later messages (cards, the result) go in its thread."""
    head = f":arrow_forward: {mention(run.started_by)} started *{short(run.graph)}*:"
    blocks = [
        SectionBlock(text=MarkdownTextObject(text=f"{head}\n{quote(run.task, _TASK_LIMIT)}")),
        _run_context(run),
    ]
    return build(text=f"{head} {cut(run.task, 500)}", blocks=blocks)


def run_completed(*, run: Run, max_blocks: int = MAX_OUTPUT_BLOCKS, max_chars: int = MESSAGE_TEXT_BUDGET) -> Rendered:
    """The final output, as much of it as one message can hold, and a note if cut.

    A run whose decisive answer was a Reject (``engine.outcome``) completed in Strands'
    eyes, but not as asked: it is headed as finished after a rejection, naming who
    rejected what and why, and the graph's own words follow. "Finished after", not
    "rejected": a graph may carry on without what was refused (a triage without the logs
    a reviewer withheld), and its output says what it made of it.
    """
    denied = rejections(run)
    if denied:
        fallback = f":no_entry: *{short(run.graph)}* finished after a rejection by {_deciders(denied)}"
        fallback += f": {cut(_first_reason(denied), 300)}"
        # Parallel questions (one per region, say): name the node each rejection was about.
        nodes = len({a.node_id for a in decisive_asks(run)}) > 1
        lead = f":no_entry: *{short(run.graph)}* finished after " + _rejection_lines(
            denied, limit=_REJECTIONS_LIMIT, name_nodes=nodes
        )
    else:
        head = lead = f":white_check_mark: *{short(run.graph)}* finished"
        fallback = head
    output = run.output or ""
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=lead)), _run_context(run)]
    used = len(lead) + 200  # the context line and the truncation note
    sections, shown = split_output(output, max_sections=max_blocks - len(blocks) - 1, max_chars=max_chars - used)
    if not output:
        sections = ["_(no output)_"]
    blocks[1:1] = [SectionBlock(text=MarkdownTextObject(text=s)) for s in sections]
    if shown < len(output):
        note = f"… truncated: showing {shown:,} of {len(output):,} characters"
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=note)]))
    text = f"{fallback}: {cut(output, FALLBACK_TEXT_LIMIT - len(fallback) - 2)}" if output else fallback
    return build(text=text, blocks=blocks)


FAILURE_SHOWN_CHARS = 300


def run_failed(*, run: Run) -> Rendered:
    """What failed, in one line: the graph, the node, the error's type and first line.

    Only that: provider and tool errors carry account ids, ARNs, hosts and URLs, and a
    channel may include guests. The run record keeps the error, the log its traceback.
    """
    node, first, more = failure_parts(run.error)
    where = f" at node {inline_code(node, 100)}" if node else ""
    shown = first if len(first) <= FAILURE_SHOWN_CHARS else first[:FAILURE_SHOWN_CHARS] + " …"
    line = f":x: *{short(run.graph)}* failed{where}: {escape(shown)}"
    note = "the bot's log has the details" + (" (the error goes on for more lines)" if more else "")
    return build(
        text=line,
        blocks=[SectionBlock(text=MarkdownTextObject(text=line)), _run_context(run, note=note)],
    )


def run_rejected(*, run: Run) -> Rendered:
    """A node gate said no: the run ended on purpose, so no code block and no alarm.

    Who said no and why come from the run's answers; what the gate itself said (its
    ``cancel_node`` message, graph text that may mention people) follows as a quote.
    """
    head = f":no_entry: *{short(run.graph)}* {NODE_NOT_RUN}"
    denied = rejections(run)
    lines = [head]
    if denied:
        lines.append(_rejection_lines(denied, limit=_REJECTIONS_LIMIT, single_line=False))
    reason = run.error or ""
    if reason:
        lines.append(quote(reason, 1200))
    fallback = f"{head}: {cut(reason, 500)}" if reason else head
    return build(
        text=fallback,
        blocks=[SectionBlock(text=MarkdownTextObject(text="\n".join(lines))), _run_context(run)],
    )


def run_cancelled(*, run: Run) -> Rendered:
    """A short notice naming who cancelled; cancellation has no payload to show."""
    by = f" by {mention(run.cancelled_by)}" if run.cancelled_by else ""
    head = f":no_entry_sign: *{short(run.graph)}* was cancelled{by}"
    ran = f"Before it stopped: {short(what_ran(run), 600)}."
    body = SectionBlock(text=MarkdownTextObject(text=f"{head}\n{ran}"))
    return build(text=head, blocks=[body, _run_context(run)])


def ending_of(text: str) -> str:
    """How a run ended, read back from its final message's fallback ``text``: ``finished``
    (also after a rejection the graph carried on from), ``failed``, ``cancelled`` or
    ``stopped`` (a node gate's no); ``""`` for any other text. The offline demo counts
    runs by it; a test holds it to the functions above."""
    mark, _, rest = text.partition(" ")
    if mark == ":no_entry:":  # then "*<graph>* " (a graph's name has no "*" nor space) and what happened
        return "stopped" if rest.partition("* ")[2].startswith(NODE_NOT_RUN) else "finished"
    return _ENDING_MARKS.get(mark, "")


_NOTICE_LIMIT = 2000


def auto_decided(*, run: Run, ask: Ask) -> Rendered:
    """The one line an ask decided by a policy rule gets in the thread instead of a card:
    what was asked, the rule (its label) and what it decided; no buttons, no mention."""
    decision = ask.decision
    approved = decision is not None and decision.verdict.value == "approve"
    mark, said = (":white_check_mark:", "approved") if approved else (":x:", "rejected")
    rule = escape((decision.policy if decision is not None else None) or ask.rules.label or "a policy rule")
    line = f"{mark} *{short(card_title(ask), 150)}* {said} by the rule _{rule}_ (no card: nobody was asked)"
    line = fit(line, _NOTICE_LIMIT, total=len(line))
    return build(text=line, blocks=[SectionBlock(text=MarkdownTextObject(text=line))])


def ask_notice(*, run: Run, ask: Ask, index: int) -> Rendered:
    """``ask.notices[index]`` as a thread reply that mentions who may decide.

    A reminder (``remind``) names the ask's deciders; an escalation (``escalate``) names
    the escalation group, who may decide from now on. Both say when the ask expires and
    point at its card, which is in the same thread.
    """
    kind = ask.notices[index]
    title = short(card_title(ask), 150)
    rules = ask.rules
    progress = f" ({len(ask.votes)} of {rules.quorum} approvals so far)" if rules.quorum > 1 else ""
    expiry = f"; it expires {slack_date(rules.expires_at)}" if rules.expires_at is not None else ""
    card = " The card is above in this thread." if ask.card is not None else ""
    if kind == ESCALATE:
        group = mention_ids(rules.escalate_to, joiner="and") if rules.escalate_to else "more people"
        waited = f" after {human_duration(rules.escalate_at - ask.created_at)}" if rules.escalate_at else ""
        line = (
            f":rotating_light: Escalated: {group} may now decide *{title}*{progress}, "
            f"still undecided{waited}{expiry}.{card}"
        )
    else:
        who = who_may_decide(ask, leaving_out=still_to_approve_leaving_out(ask, started_by=run.started_by))
        if who == ANYONE:
            line = f":bell: Reminder: *{title}* is waiting for a decision from {ANYONE}{progress}{expiry}.{card}"
        else:
            line = f":bell: Reminder: {who} — *{title}* is waiting for a decision{progress}{expiry}.{card}"
    line = fit(line, _NOTICE_LIMIT, total=len(line))
    return build(text=line, blocks=[SectionBlock(text=MarkdownTextObject(text=line))])


def split_output(text: str, *, max_sections: int, max_chars: int) -> tuple[list[str], int]:
    """Escape ``text`` into mrkdwn sections; return them and how many characters they show.

    The output is the graph's, and it may repeat a task, a tool's input or a reply word for
    word: none of it becomes markup, so a mention in it shows as text and pings nobody.

    Only what fits is ever escaped, so a multi-megabyte output costs as much as the
    ~10 KB that is shown. Sections break at a newline when one is near the limit.
    """
    sections: list[str] = []
    pos, used, in_fence = 0, 0, False
    while pos < len(text) and len(sections) < max_sections:
        room = min(SECTION_TEXT_LIMIT, max_chars - used) - _FENCE_OVERHEAD
        if room < _MIN_SECTION:
            break
        window = text[pos : pos + room]
        take = _escaped_prefix_length(window, room)
        if pos + take < len(text):
            newline = window.rfind("\n", 0, take)
            if newline >= take // 2:
                take = newline + 1
            while take > 1 and window[take - 1] == "`":  # never split a run of backticks
                take -= 1
        piece = window[:take]
        reopened = in_fence
        if piece.count(_FENCE) % 2:
            in_fence = not in_fence
        section = ("```\n" if reopened else "") + escape(piece) + ("\n```" if in_fence else "")
        sections.append(section)
        used += len(section)
        pos += take
    return sections, pos


def graph_list(*, command: str = DEFAULT_COMMAND, graphs: Sequence[tuple[str, str]]) -> str:
    """The reply to ``<command> list``: each graph with its description."""
    if not graphs:
        return (
            "No graphs are registered, so there is nothing to run yet. Whoever runs the bot can set "
            "`EXAMPLE_GRAPHS=true` to offer the example graphs, or define graphs with `@graph_def` in "
            "`graph_defs/` or in a module named in `GRAPH_MODULES`."
        )
    start = f"Start one with `{escape(command)} run {escape('<graph> <task text>')}`"
    described = [
        f"• *{cut(name, 100)}*" + (f": {cut(description, 300)}" if description else "") for name, description in graphs
    ]
    if sum(len(line) + 1 for line in described) + len(start) + 100 <= _REPLY_LIMIT:
        return "\n".join(["*Graphs you can run:*", *described, start])
    # Too many to describe in one reply: every name rather than the first few described.
    lines = ["*Graphs you can run* (too many to describe in one reply, so names only):"]
    size = len(lines[0])
    for index, (name, _description) in enumerate(graphs):
        line = f"• *{cut(name, 100)}*"
        if size + len(line) + len(start) + 100 > _REPLY_LIMIT:
            lines.append(f"…and {len(graphs) - index} more")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join([*lines, start])


def start_limited(*, limited: StartLimited, now: float, command: str = DEFAULT_COMMAND) -> str:
    """The one ephemeral line for a start refused by the person's share (``engine.start_limits``):
    the limit, how many they have, and when they may start again or what to finish first."""
    cmd = escape(command)
    if limited.limit == "per_minute":
        wait = math.ceil(max((limited.retry_at or now) - now, 1.0))
        return (
            f"You have started {limited.have} runs this minute; one person may start {limited.allowed} "
            f"a minute, so this one did not start: try again in {wait} s."
        )
    oldest = ", ".join(inline_code(r, 40) for r in limited.runs)
    named = f" (oldest: {oldest})" if oldest else ""
    return (
        f"You have {limited.have} unfinished runs{named}; one person may have {limited.allowed} at once, "
        "so this one did not start: finish or cancel one first "
        f"(`{cmd} status`, `{cmd} cancel`; `{cmd} runs` lists this channel's, `{cmd} pending` what waits for you)."
    )


def _run_context(run: Run, *, note: str = "") -> ContextBlock:
    line = f"run {inline_code(run.run_id)} · started by {mention(run.started_by)}" + (f" · {note}" if note else "")
    return ContextBlock(elements=[MarkdownTextObject(text=line)])


def _deciders(asks: Sequence[Ask]) -> str:
    users = list(dict.fromkeys(a.decision.user for a in asks if a.decision is not None))
    named = ", ".join(mention(u) for u in users[:3])
    return named + (f" and {len(users) - 3} more" if len(users) > 3 else "")


def _rejection_lines(asks: Sequence[Ask], *, limit: int, single_line: bool = True, name_nodes: bool = False) -> str:
    """Who rejected what (the card's title) and why (quoted), per rejected ask.

    One rejection continues the head's line (``… finished after @bob rejected *Title*``);
    several are listed under ``rejections by @a, @b``.
    """
    lines: list[str] = []
    several = len(asks) > 1
    if several and single_line:
        lines.append(f"rejections by {_deciders(asks)}")
    name_nodes = name_nodes or len({a.node_id for a in asks}) > 1
    shown = asks[:_MAX_REJECTIONS]
    per_reason = max(100, limit // len(shown) - 250)  # a line naming who and what takes at most ~230
    for ask in shown:
        decision = ask.decision
        assert decision is not None  # rejections are answered asks
        where = f" (node {inline_code(ask.node_id, 40)})" if name_nodes and ask.node_id else ""
        bullet = "• " if several else ""
        lines.append(f"{bullet}{mention(decision.user)} rejected *{short(card_title(ask), 100)}*{where}")
        text = (decision.text or "").strip()
        lines.append(quote(text, per_reason) if text else "_(no reason given)_")
    if len(asks) > len(shown):
        lines.append(f"…and {len(asks) - len(shown)} more rejections")
    joined = "\n".join(lines)
    return fit(joined, limit, total=len(joined))


def _first_reason(asks: Sequence[Ask]) -> str:
    text = next((a.decision.text for a in asks if a.decision is not None and a.decision.text), None)
    return text.strip() if text else "no reason given"


def _escaped_prefix_length(window: str, room: int) -> int:
    """How many characters of ``window`` fit into ``room`` once escaped."""
    size = 0
    for index, char in enumerate(window):
        size += escaped_length(char)
        if size > room:
            return index
    return len(window)
