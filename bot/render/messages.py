"""Run messages (started, completed, failed, cancelled) and slash-command replies.

A run's final output can be megabytes of model text. It is shown in sections of at most
3000 characters, within the block count and the total-text budget of one message, and
the message says how much it shows; code fences cut at a section boundary are closed
and reopened so the rest does not turn into stray formatting.
"""

from __future__ import annotations

from collections.abc import Sequence

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject, SectionBlock

from bot.render.mrkdwn import (
    FALLBACK_TEXT_LIMIT,
    MESSAGE_TEXT_BUDGET,
    SECTION_TEXT_LIMIT,
    Rendered,
    build,
    code_block,
    cut,
    escape,
    escaped_length,
    fit,
    inline_code,
    mention,
    quote,
    short,
)
from engine.records import Run

DEFAULT_COMMAND = "/graph"
MAX_OUTPUT_BLOCKS = 45

_FENCE = "```"
_FENCE_OVERHEAD = 2 * (len(_FENCE) + 1)  # "```\n" reopened at the start, "\n```" closed at the end
_MIN_SECTION = 200
_TASK_LIMIT = 1500
_REPLY_LIMIT = 3000


def run_started(*, run: Run) -> Rendered:
    """The run's first message; later messages (cards, the result) go in its thread."""
    head = f":arrow_forward: {mention(run.started_by)} started *{short(run.graph)}*:"
    blocks = [
        SectionBlock(text=MarkdownTextObject(text=f"{head}\n{quote(run.task, _TASK_LIMIT)}")),
        _run_context(run),
    ]
    return build(text=f"{head} {cut(run.task, 500)}", blocks=blocks)


def run_completed(*, run: Run, max_blocks: int = MAX_OUTPUT_BLOCKS, max_chars: int = MESSAGE_TEXT_BUDGET) -> Rendered:
    """The final output, as much of it as one message can hold, and a note if cut."""
    head = f":white_check_mark: *{short(run.graph)}* finished"
    output = run.output or ""
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=head)), _run_context(run)]
    used = len(head) + 200  # the context line and the truncation note
    sections, shown = split_output(output, max_sections=max_blocks - len(blocks) - 1, max_chars=max_chars - used)
    if not output:
        sections = ["_(no output)_"]
    blocks[1:1] = [SectionBlock(text=MarkdownTextObject(text=s)) for s in sections]
    if shown < len(output):
        note = f"… truncated: showing {shown:,} of {len(output):,} characters"
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=note)]))
    return build(text=f"{head}: {cut(output, FALLBACK_TEXT_LIMIT - len(head) - 2)}", blocks=blocks)


FAILURE_SHOWN_CHARS = 500


def run_failed(*, run: Run) -> Rendered:
    """The start of the error, in a code block because errors are preformatted.

    Only the start: provider and tool errors carry account ids, ARNs, hosts and URLs,
    and a channel may include guests. The run record and the logs keep the rest.
    """
    head = f":x: *{short(run.graph)}* failed"
    error = run.error or "(no error message)"
    shown = error if len(error) <= FAILURE_SHOWN_CHARS else error[:FAILURE_SHOWN_CHARS] + " …"
    note = "" if shown == error else "\n_(cut; the bot's logs have the full error)_"
    body = f"{head}\n{code_block(shown, SECTION_TEXT_LIMIT - len(head) - len(note) - 1)}{note}"
    return build(
        text=f"{head}: {cut(shown, 300)}",
        blocks=[SectionBlock(text=MarkdownTextObject(text=body)), _run_context(run)],
    )


def run_rejected(*, run: Run) -> Rendered:
    """A gate said no: the run ended on purpose, so no code block and no alarm."""
    head = f":no_entry: *{short(run.graph)}* stopped: rejected, node not run"
    reason = run.error or ""
    body = f"{head}\n{quote(reason, 1500)}" if reason else head
    return build(
        text=f"{head}: {cut(reason, 500)}",
        blocks=[SectionBlock(text=MarkdownTextObject(text=body)), _run_context(run)],
    )


def run_cancelled(*, run: Run) -> Rendered:
    """A short notice; cancellation has no payload to show."""
    head = f":no_entry_sign: *{short(run.graph)}* was cancelled"
    return build(text=head, blocks=[SectionBlock(text=MarkdownTextObject(text=head)), _run_context(run)])


def split_output(text: str, *, max_sections: int, max_chars: int) -> tuple[list[str], int]:
    """Escape ``text`` into mrkdwn sections; return them and how many characters they show.

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


def help_text(*, command: str = DEFAULT_COMMAND) -> str:
    """The reply to ``<command> help``."""
    return "\n".join(
        [
            "*Run a multi-agent graph, with people approving its steps in Slack.*",
            *_usage_lines(command),
            "While a run waits, each question is posted as a card with *Approve*, *Reject* and "
            "*Reply* buttons; the run goes on as soon as someone answers.",
        ]
    )


def usage_error(*, command: str = DEFAULT_COMMAND, problem: str) -> str:
    """An ephemeral reply to bad input: what is wrong, then how to do it right."""
    text = "\n".join([f":warning: {cut(problem, 500)}", *_usage_lines(command)])
    return fit(text, _REPLY_LIMIT, total=len(text))


def graph_list(*, command: str = DEFAULT_COMMAND, graphs: Sequence[tuple[str, str]]) -> str:
    """The reply to ``<command> list``: each graph with its description."""
    if not graphs:
        return (
            "No graphs are registered. Define one with `@graph_def` in `graph_defs/` "
            "or in a module named in `GRAPH_MODULES`."
        )
    lines = ["*Graphs you can run:*"]
    size = len(lines[0])
    for index, (name, description) in enumerate(graphs):
        line = f"• *{cut(name, 100)}*" + (f": {cut(description, 300)}" if description else "")
        if size + len(line) + 100 > _REPLY_LIMIT:
            lines.append(f"…and {len(graphs) - index} more")
            break
        lines.append(line)
        size += len(line) + 1
    lines.append(f"Start one with `{escape(command)} run {escape('<graph> <task text>')}`")
    return "\n".join(lines)


def _usage_lines(command: str) -> list[str]:
    cmd = escape(command)
    return [
        f"`{cmd} run {escape('<graph> <task text>')}`: start a run of a graph with the task text as input",
        f"`{cmd} list`: show the graphs you can run",
        f"`{cmd} help`: show this help",
    ]


def _run_context(run: Run) -> ContextBlock:
    line = f"run {inline_code(run.run_id)} · started by {mention(run.started_by)}"
    return ContextBlock(elements=[MarkdownTextObject(text=line)])


def _escaped_prefix_length(window: str, room: int) -> int:
    """How many characters of ``window`` fit into ``room`` once escaped."""
    size = 0
    for index, char in enumerate(window):
        size += escaped_length(char)
        if size > room:
            return index
    return len(window)
