"""One pass of a Strands graph: from a task or a snapshot, until it pauses or ends.

This is the only engine module that touches Strands objects, and it imports them
lazily: the Slack ack path imports ``engine`` but must never pay for ``strands``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from engine.snapshot import dump_state, restore_state
from engine.sources import verdicts_for
from persistence.records import Verdict

if TYPE_CHECKING:
    from strands.multiagent.base import NodeResult
    from strands.multiagent.graph import Graph

logger = logging.getLogger(__name__)


class StepStatus(StrEnum):
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class Raised:
    """An interrupt the graph raised in this pass, with the node it came from."""

    interrupt_id: str
    name: str
    reason: Any
    node_id: str | None
    verdicts: tuple[Verdict, ...]


@dataclass(frozen=True, kw_only=True)
class Step:
    status: StepStatus
    snapshot: bytes | None
    raised: list[Raised] = field(default_factory=list)
    output: str | None = None
    error: str | None = None


def response_entries(responses: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Strands' resume input: one ``interruptResponse`` per answered interrupt id."""
    seen: set[str] = set()
    entries: list[dict[str, Any]] = []
    for interrupt_id, response in responses:
        if interrupt_id in seen:
            continue
        seen.add(interrupt_id)
        entries.append({"interruptResponse": {"interruptId": interrupt_id, "response": response}})
    return entries


async def run_pass(
    *,
    graph: Graph,
    task: str | None,
    snapshot: bytes | None,
    responses: Sequence[tuple[str, Any]] = (),
    invocation_state: dict[str, Any] | None = None,
) -> Step:
    """Run ``graph`` fresh on ``task``, or restore ``snapshot`` and resume it with ``responses``."""
    from strands.multiagent.base import Status

    if snapshot is not None:
        restore_state(graph, snapshot)
        graph_input: Any = response_entries(responses)
    else:
        graph_input = task or ""

    raised: list[Raised] = []
    result: Any = None
    try:
        async for event in graph.stream_async(graph_input, dict(invocation_state or {})):
            if event.get("type") == "multiagent_node_interrupt":
                node_id = event["node_id"]
                raised.extend(
                    Raised(
                        interrupt_id=i.id,
                        name=i.name,
                        reason=i.reason,
                        node_id=node_id,
                        verdicts=verdicts_for(graph=graph, node_id=node_id, name=i.name),
                    )
                    for i in event["interrupts"]
                )
            if "result" in event:
                result = event["result"]
    except Exception as error:  # graph code failed: report it, never crash the bot
        logger.warning("graph pass failed: %s", error, exc_info=True)
        return Step(status=StepStatus.FAILED, snapshot=_try_dump(graph), error=_describe(error))

    if result is None:
        return Step(status=StepStatus.FAILED, snapshot=None, error="the graph produced no result")
    if result.status == Status.INTERRUPTED:
        return Step(status=StepStatus.INTERRUPTED, snapshot=dump_state(graph), raised=raised)
    if result.status == Status.COMPLETED:
        return Step(status=StepStatus.COMPLETED, snapshot=dump_state(graph), output=_final_output(result))
    return Step(status=StepStatus.FAILED, snapshot=_try_dump(graph), error=_failure_of(result))


def _final_output(result: Any) -> str:
    """The last node's text: what a person asked the graph for."""
    order = list(result.execution_order or [])
    if not order:
        return ""
    node_result: NodeResult | None = result.results.get(order[-1].node_id)
    if node_result is None:
        return ""
    texts = [str(r).strip() for r in node_result.get_agent_results()]
    return "\n\n".join(t for t in texts if t)


def _failure_of(result: Any) -> str:
    for node_id, node_result in (result.results or {}).items():
        if isinstance(node_result.result, Exception):
            return f"node {node_id}: {_describe(node_result.result)}"
    return f"the graph ended with status {result.status.value}"


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _try_dump(graph: Graph) -> bytes | None:
    try:
        return dump_state(graph)
    except Exception:  # a failed run's state is only for post-mortems
        logger.warning("could not snapshot a failed graph", exc_info=True)
        return None
