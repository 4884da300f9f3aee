"""A run's status message: each node with its state, time and tokens, and what waits.

Two renderings of the same nodes. ``status_message`` is plain Block Kit (sections and
context), which every workspace accepts: it is what ``chat.postMessage`` posts and
``chat.update`` edits, and what a streamed message becomes once its pass is saved.
``task_chunks`` are the ``task_update`` chunks of Slack's streaming surface
(``chat.startStream``/``appendStream`` with ``task_display_mode="plan"``), used while a
first pass runs in a workspace that has it. Node ids come from graph code: escaped, cut.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject, SectionBlock
from slack_sdk.models.messages.chunk import PlanUpdateChunk, TaskUpdateChunk

from bot.render.mrkdwn import Rendered, build, cut, cut_plain, escape
from bot.render.titles import card_title
from engine.delivery import card_order
from engine.progress import NodeProgress, NodeState
from engine.records import Ask, Run, RunStatus

NODE_ID_LIMIT: Final = 60
TASK_TITLE_LIMIT: Final = 250  # Slack cuts task titles near 256 characters
LINES_PER_SECTION: Final = 20
MAX_WAITING_SHOWN: Final = 5

STATE_EMOJI: Final = {
    NodeState.PENDING: ":white_circle:",
    NodeState.RUNNING: ":large_blue_circle:",
    NodeState.DONE: ":white_check_mark:",
    NodeState.WAITING: ":raised_hand:",
    NodeState.FAILED: ":x:",
    NodeState.STOPPED: ":no_entry_sign:",
}
STATE_WORD: Final = {
    NodeState.PENDING: "not started",
    NodeState.RUNNING: "running",
    NodeState.DONE: "done",
    NodeState.WAITING: "waiting for a person",
    NodeState.FAILED: "failed",
    NodeState.STOPPED: "stopped",
}
# Slack's task statuses: pending, in_progress, complete, error.
TASK_STATUS: Final = {
    NodeState.PENDING: "pending",
    NodeState.RUNNING: "in_progress",
    NodeState.DONE: "complete",
    NodeState.WAITING: "in_progress",
    NodeState.FAILED: "error",
    NodeState.STOPPED: "error",
}
HEADLINE: Final = {
    RunStatus.RUNNING: "Running",
    RunStatus.RESUMING: "Running",
    RunStatus.WAITING: "Waiting for a person",
    RunStatus.COMPLETED: "Completed",
    RunStatus.FAILED: "Failed",
    RunStatus.REJECTED: "Stopped: a gate said no",
    RunStatus.CANCELLED: "Cancelled",
}


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def node_line(node: NodeProgress, *, now: float | None = None) -> str:
    parts = [f"{STATE_EMOJI[node.state]} *{escape(cut_plain(node.node_id, NODE_ID_LIMIT))}*", STATE_WORD[node.state]]
    seconds = node.seconds
    if node.state is NodeState.RUNNING and node.started_at is not None and now is not None:
        seconds += max(now - node.started_at, 0.0)
    if seconds:
        parts.append(duration(seconds))
    if node.tokens:
        parts.append(f"{node.tokens:,} tokens")
    if node.runs > 1:
        parts.append(f"ran {node.runs} times")
    return " · ".join(parts)


def status_message(
    *, run: Run, nodes: Sequence[NodeProgress], status: RunStatus | None = None, link: Any = None
) -> Rendered:
    """The status message for ``run`` showing ``nodes`` (live or as saved).

    ``link(ask) -> str | None`` gives a link to an ask's card, when there is one.
    """
    now = time.time()
    status = status or run.status
    lines = [node_line(n, now=now) for n in nodes]
    plural = "node" if len(nodes) == 1 else "nodes"
    blocks: list[Any] = [SectionBlock(text=MarkdownTextObject(text=f"*{HEADLINE[status]}* · {len(nodes)} {plural}"))]
    for start in range(0, len(lines), LINES_PER_SECTION):
        blocks.append(SectionBlock(text=MarkdownTextObject(text="\n".join(lines[start : start + LINES_PER_SECTION]))))
    waiting = sorted(run.pending_asks(), key=card_order) if status is RunStatus.WAITING else []  # as the cards came
    if waiting:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=_waiting_lines(waiting, link=link))))
    elapsed = max((run.updated_at if status.terminal else now) - run.created_at, 0.0)
    footer = [f"Elapsed {duration(elapsed)}"]
    tokens = sum(n.tokens for n in nodes)
    if tokens:
        footer.append(f"{tokens:,} tokens")
    footer.append(f"run `{run.run_id}`")
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=" · ".join(footer))]))
    done = sum(1 for n in nodes if n.state is NodeState.DONE)
    return build(text=f"{HEADLINE[status]}: {done} of {len(nodes)} nodes done", blocks=blocks)


def _waiting_lines(asks: Sequence[Ask], *, link: Any) -> str:
    lines = []
    for ask in asks[:MAX_WAITING_SHOWN]:
        title = cut(card_title(ask), 150)
        url = link(ask) if link is not None else None
        lines.append(f":raised_hand: <{url}|{title}>" if url else f":raised_hand: {title} (its card is in this thread)")
    if len(asks) > MAX_WAITING_SHOWN:
        lines.append(f"…and {len(asks) - MAX_WAITING_SHOWN} more in this thread")
    return "\n".join(lines)


def plan_chunks(*, run: Run, nodes: Sequence[NodeProgress]) -> list[dict[str, Any]]:
    """The chunks that open a streamed status message: the plan's title and every node."""
    title = cut_plain(f"{run.graph}: {run.task}", TASK_TITLE_LIMIT)
    return [PlanUpdateChunk(title=title).to_dict(), *task_chunks(nodes)]


def task_chunks(nodes: Sequence[NodeProgress]) -> list[dict[str, Any]]:
    """One ``task_update`` per node: Slack replaces a task's title and status by its id."""
    chunks = []
    for node in nodes:
        title = cut_plain(f"{node.node_id} · {STATE_WORD[node.state]}", TASK_TITLE_LIMIT)
        chunks.append(TaskUpdateChunk(id=_task_id(node.node_id), title=title, status=TASK_STATUS[node.state]).to_dict())
    return chunks


def _task_id(node_id: str) -> str:
    return cut_plain(node_id, 200)
