"""One pass of a Strands graph: from a task or a snapshot, until it pauses or ends.

This is the only engine module that touches Strands objects, and it imports them
lazily: the Slack ack path imports ``engine`` but must never pay for ``strands``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from engine.brake import Brake
from engine.outcome import failure_text
from engine.prepare import STALE_ANSWERS, agents_under, edited_input, prepare
from engine.progress import NodeProgress, NodeState, Tracker
from engine.records import MessageRef, ToolCall, Verdict
from engine.snapshot import dump_state, restore_state
from engine.sources import gated_tool_use_id, verdicts_for
from engine.threads import in_thread

if TYPE_CHECKING:
    from strands.multiagent.base import NodeResult
    from strands.multiagent.graph import Graph

logger = logging.getLogger(__name__)

MAX_TOOL_INPUT_CHARS = 3000  # what a Slack modal's text input holds: the most an Edit can show
MAX_TOOL_SCHEMA_CHARS = 8000


class StepStatus(StrEnum):
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"  # a node gate said no: the graph stopped before that node
    CANCELLED = "cancelled"  # the brake: someone cancelled the run, the pass stopped before a node


@dataclass(frozen=True, kw_only=True)
class Raised:
    """An interrupt the graph raised in this pass, with the node it came from."""

    interrupt_id: str
    name: str
    reason: Any
    node_id: str | None
    verdicts: tuple[Verdict, ...]
    tool: ToolCall | None = None
    # The gated call's tool name and input as it will run, also when it is too big to keep
    # in ``tool``: the rules are chosen by them (``engine.rule_choice``), never by the
    # graph's terms because a model padded its call. Not recorded.
    tool_name: str | None = None
    tool_input: Any = None

    @property
    def gated_tool(self) -> str | None:
        """The name of the tool this interrupt gates, if any."""
        return self.tool.name if self.tool is not None else self.tool_name


@dataclass(frozen=True, kw_only=True)
class Step:
    status: StepStatus
    snapshot: bytes | None
    raised: list[Raised] = field(default_factory=list)
    output: str | None = None
    error: str | None = None
    trail: tuple[str, ...] = ()  # every node run so far, in order, over every pass
    nodes: tuple[NodeProgress, ...] = ()  # every node's progress after this pass (when followed)
    status_message: MessageRef | None = None  # the run's status message, once the live view posted it
    unawaited: tuple[str, ...] = ()  # answered interrupt ids the graph no longer waited for (not sent)
    stopped_before: str | None = None  # CANCELLED: the node the brake stopped the pass before
    cancelled_by: str | None = None  # CANCELLED: who cancelled, as the brake read it


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
    stale: Sequence[str] = (),
    about: str = "graph pass",
    watch: Callable[[dict[str, Any]], None] | None = None,
    brake: Brake | None = None,
) -> Step:
    """Run ``graph`` fresh on ``task``, or restore ``snapshot`` and resume it with ``responses``.

    Never raises for anything graph code or a snapshot does: a pass that cannot run ends
    as a failed step, so a broken run is reported once instead of retried forever.
    ``about`` names the pass in the log (``run <id> (graph <name>)``): a failure is logged
    once, as one line with its traceback, and a node gate's rejection as one INFO line.
    ``brake`` looks for a cancel before each node and stops the pass there (``CANCELLED``).
    Answers for interrupts the restored graph no longer waits for are left out (Strands
    would fail the whole pass on them) and named in ``Step.unawaited``.
    """
    seen: dict[str, Any] = {}
    step = await _step(graph, task, snapshot, responses, stale, about, watch, brake, seen)
    return replace(step, trail=_trail(graph), unawaited=tuple(seen.get("unawaited", ())))


def _trail(graph: Graph) -> tuple[str, ...]:
    order = getattr(getattr(graph, "state", None), "execution_order", None) or []
    return tuple(str(getattr(node, "node_id", node)) for node in order)


async def _step(
    graph: Graph,
    task: str | None,
    snapshot: bytes | None,
    responses: Sequence[tuple[str, Any]],
    stale: Sequence[str],
    about: str,
    watch: Callable[[dict[str, Any]], None] | None,
    brake: Brake | None,
    seen: dict[str, Any],
) -> Step:
    """``run_pass`` without the trail (see there); what it left out goes in ``seen``."""
    from strands.multiagent.base import Status

    try:
        # Checks Strands' internals, then keeps a gate's "no" out of Strands' error log.
        from engine.graph_logs import tracebacks_logged
        from engine.strands_internals import NODE_CANCEL_EVENT, NODE_INTERRUPT_EVENT, awaited_interrupts
    except Exception as error:  # StrandsSurfaceChanged: nothing runs unguarded
        logger.error("%s failed: %s", about, error)
        return Step(status=StepStatus.FAILED, snapshot=None, error=failure_text(node_id=None, error=error))

    raised: list[Raised] = []
    cancelled: dict[str, str] = {}  # node id -> message, from BeforeNodeCallEvent.cancel_node
    result: Any = None
    with tracebacks_logged() as logged:
        try:
            prepare(graph)
            if brake is not None:
                brake.install(graph)
            if snapshot is not None:
                # Decoding megabytes of state would hold up every ack on this process's loop.
                await in_thread(restore_state, graph, snapshot)
                awaited = awaited_interrupts(graph)
                if awaited is not None:
                    seen["unawaited"] = [i for i, _ in responses if i not in awaited]
                    responses = [(i, r) for i, r in responses if i in awaited]
                graph_input: Any = response_entries(responses)
            else:
                graph_input = task or ""
            async for event in graph.stream_async(graph_input, {STALE_ANSWERS: list(stale)}):
                kind = event.get("type")
                if kind == NODE_INTERRUPT_EVENT:
                    raised.extend(_raised(graph, event["node_id"], event["interrupts"]))
                elif kind == NODE_CANCEL_EVENT:
                    cancelled[event["node_id"]] = str(event.get("message") or "")
                if "result" in event:
                    result = event["result"]
                if watch is not None:
                    _watched(watch, event)
        except Exception as error:  # graph code failed: report it, never crash the bot
            if brake is not None and brake.by is not None and isinstance(error, RuntimeError):
                logger.info("%s: cancelled by %s; stopped before node %s", about, brake.by, brake.before)
                return _braked(brake)
            state = await _try_dump(graph)
            node_id = next((n for n, m in cancelled.items() if m == str(error)), None)
            if node_id is not None and isinstance(error, RuntimeError):
                # Strands raises on cancel_node; a gate saying no is an outcome, not a crash.
                logger.info("%s: node %s not run, its gate said no: %s", about, node_id, _first_line(str(error)))
                return Step(status=StepStatus.REJECTED, snapshot=state, error=f"node {node_id} not run: {error}")
            text = failure_text(node_id=_failed_node(graph), error=error)
            # The traceback once: Strands' graph logger may have logged it already.
            trace = None if any(e is error for e in logged) else error
            logger.warning("%s failed: %s", about, _first_line(text), exc_info=trace)
            return Step(status=StepStatus.FAILED, snapshot=state, error=text)

    if brake is not None and brake.by is not None:  # a node stopped without failing the graph
        logger.info("%s: cancelled by %s; stopped before node %s", about, brake.by, brake.before)
        return _braked(brake)
    if result is None:
        logger.warning("%s failed: the graph produced no result", about)
        return Step(status=StepStatus.FAILED, snapshot=None, error="the graph produced no result")
    if result.status == Status.INTERRUPTED:
        return Step(status=StepStatus.INTERRUPTED, snapshot=await _dump(graph), raised=raised)
    if result.status == Status.COMPLETED:
        return Step(status=StepStatus.COMPLETED, snapshot=await _dump(graph), output=final_output(graph, result))
    failure = _failure_of(result)
    logger.warning("%s failed: %s", about, _first_line(failure))
    return Step(status=StepStatus.FAILED, snapshot=await _try_dump(graph), error=failure)


def _braked(brake: Brake) -> Step:
    return Step(status=StepStatus.CANCELLED, snapshot=None, stopped_before=brake.before, cancelled_by=brake.by)


def _watched(watch: Callable[[dict[str, Any]], None], event: dict[str, Any]) -> None:
    try:
        watch(event)
    except Exception:  # progress is a view: it never stops the pass
        logger.warning("progress: a stream event could not be followed", exc_info=True)


def progress_watcher(
    graph: Graph, tracker: Tracker, *, show: Callable[[], None], output: Callable[[str, str], None]
) -> Callable[[dict[str, Any]], None]:
    """A ``watch`` for ``run_pass`` that keeps ``tracker`` up to date from Strands' stream
    events and calls ``show`` after each change and ``output`` with the text of each node
    that completed and leads on (the nodes the graph ends on make the run's final message).
    """
    from engine.strands_internals import NODE_CANCEL_EVENT, NODE_INTERRUPT_EVENT, NODE_START_EVENT, NODE_STOP_EVENT

    leads_on = {edge.from_node.node_id for edge in graph.edges}

    def watch(event: dict[str, Any]) -> None:
        kind, node_id = event.get("type"), str(event.get("node_id") or "")
        changed = False
        if kind == NODE_START_EVENT:
            changed = tracker.started(node_id)
        elif kind == NODE_STOP_EVENT:
            result = event.get("node_result")
            status = getattr(getattr(result, "status", None), "value", "completed")
            usage = getattr(result, "accumulated_usage", None) or {}
            millis = getattr(result, "execution_time", None)
            changed = tracker.stopped(
                node_id,
                status=str(status),
                seconds=float(millis) / 1000 if millis else None,
                tokens=int(usage.get("totalTokens") or 0),
            )
            if status == "completed" and node_id in leads_on and result is not None:
                text = "\n\n".join(t for t in (str(r).strip() for r in result.get_agent_results()) if t)
                if text:
                    output(node_id, text)
        elif kind == NODE_INTERRUPT_EVENT:
            changed = tracker.set_state(node_id, NodeState.WAITING)
        elif kind == NODE_CANCEL_EVENT:
            changed = tracker.set_state(node_id, NodeState.STOPPED)
        if changed:
            show()

    return watch


def _failed_node(graph: Graph) -> str | None:
    """The node that was running when the pass failed (the first, if parallel ones did)."""
    failed = getattr(getattr(graph, "state", None), "failed_nodes", None) or ()
    return min((str(node.node_id) for node in failed), default=None)


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def _raised(graph: Graph, node_id: str, interrupts: Sequence[Any]) -> list[Raised]:
    raised = []
    for i in interrupts:
        found = _gated_use(graph, node_id, i.id)
        tool = _bounded_call(*found) if found is not None else None
        verdicts = verdicts_for(graph=graph, node_id=node_id, name=i.name, interrupt_id=i.id)
        if tool is None:  # nothing to show or edit (e.g. too large): no Edit button
            verdicts = tuple(v for v in verdicts if v is not Verdict.EDIT)
        raised.append(
            Raised(
                interrupt_id=i.id,
                name=i.name,
                reason=i.reason,
                node_id=node_id,
                verdicts=verdicts,
                tool=tool,
                tool_name=str(found[1]["name"]) if found is not None else None,
                tool_input=_input_of(*found) if found is not None else None,
            )
        )
    return raised


def _gated_use(graph: Graph, node_id: str, interrupt_id: str) -> tuple[Any, dict[str, Any]] | None:
    """The agent and the tool use a BeforeToolCallEvent ask is about.

    Read from the interrupted agent (inside a nested graph or swarm too) right after the
    pass, while its conversation holding the pending tool use is at hand. The input
    shown is the one that will run: an earlier Edit's, if there was one. Calls too big
    to show and edit in a Slack modal get no ToolCall (``_bounded_call``), which keeps the
    record small; their tool's name and input still choose their rules (``Raised``).
    """
    tool_use_id = gated_tool_use_id(interrupt_id)
    node = graph.nodes.get(node_id)
    if tool_use_id is None or node is None:
        return None
    for agent in agents_under(node.executor):
        for message in reversed(getattr(agent, "messages", None) or []):
            for block in message.get("content", []):
                use = block.get("toolUse")
                if use and use.get("toolUseId") == tool_use_id:
                    return agent, use
    return None


def _input_of(agent: Any, use: dict[str, Any]) -> Any:
    """The input the gated call will run with: an earlier Edit's, if there was one."""
    return edited_input(agent, str(use["toolUseId"])) or use.get("input")


def _bounded_call(agent: Any, use: dict[str, Any]) -> ToolCall | None:
    given = _input_of(agent, use)
    spec = agent.tool_registry.registry.get(use["name"])
    schema = (spec.tool_spec.get("inputSchema") or {}).get("json") if spec is not None else None
    if not isinstance(given, dict) or len(json.dumps(given, default=str)) > MAX_TOOL_INPUT_CHARS:
        return None
    if schema is not None and len(json.dumps(schema, default=str)) > MAX_TOOL_SCHEMA_CHARS:
        return None
    return ToolCall(name=use["name"], input=given, input_schema=schema)


async def _dump(graph: Graph) -> bytes:
    # Megabytes of JSON would hold up every other request on the event loop; the pass is
    # over, so nothing else touches the graph meanwhile.
    return await in_thread(dump_state, graph)


def final_output(graph: Graph, result: Any) -> str:
    """The text of the nodes the graph ended on (those with no way onward), in order.

    Usually that is one node; parallel branches that both end the graph each count,
    rather than whichever happened to finish last.
    """
    sources = {edge.from_node.node_id for edge in graph.edges}
    order = [node.node_id for node in result.execution_order or []]
    ends = [n for n in dict.fromkeys(order) if n not in sources] or order[-1:]
    texts = []
    for node_id in ends:
        node_result: NodeResult | None = result.results.get(node_id)
        if node_result is None:
            continue
        text = "\n\n".join(t for t in (str(r).strip() for r in node_result.get_agent_results()) if t)
        if text:
            texts.append(text if len(ends) == 1 else f"*{node_id}*\n{text}")
    return "\n\n".join(texts)


def _failure_of(result: Any) -> str:
    for node_id, node_result in (result.results or {}).items():
        if isinstance(node_result.result, Exception):
            return failure_text(node_id=node_id, error=node_result.result)
    return f"the graph ended with status {result.status.value}"


async def _try_dump(graph: Graph) -> bytes | None:
    try:
        return await _dump(graph)
    except Exception:  # a failed run's state is only for post-mortems
        logger.warning("could not snapshot a failed graph", exc_info=True)
        return None
