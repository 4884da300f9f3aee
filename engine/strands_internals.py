"""The engine's only door into Strands' private surface, checked when first imported.

Why: the engine works around Strands 1.62 gaps (``engine.prepare``, ``engine.snapshot``)
by reading and patching what Strands does not promise to keep (an agent's interrupt
state, interventions and model state, HumanInTheLoop's trust flag, classifier and
decision, BeforeToolsEvent's interrupt id, ``strands.types._events``). Several are safety
measures: an Edit's input, a rejection HumanInTheLoop must remember across processes,
per-batch interrupt ids, the Trust button, a node gate's rejection (and telling it apart
in the error log: :func:`node_cancelled`, used by ``engine.graph_logs``). Read with
``getattr(x, "_name", default)`` they would switch themselves off silently the day
Strands renames something. Here each is named once, and :func:`check_surface` proves at
import that all are there and behave as assumed, or raises :class:`StrandsSurfaceChanged`
naming what is missing: the graph pass then fails loudly instead of running unguarded.

Import it lazily, from the graph pass only, never from ``engine/__init__`` or anything the
Slack ack path imports. The check builds one Agent (with a model it never calls), one Graph
and a few hook events: about a millisecond, no network.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import uuid
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from strands.agent import Agent
from strands.hooks import BeforeToolCallEvent, BeforeToolsEvent
from strands.interrupt import Interrupt, InterruptException
from strands.interventions import InterventionHandler, Proceed
from strands.models import Model
from strands.multiagent import graph as graph_module
from strands.multiagent.graph import Graph, GraphBuilder, GraphNode
from strands.telemetry.tracer import Tracer
from strands.types.tools import ToolContext, ToolUse
from strands.vended_interventions.hitl import HumanInTheLoop
from strands.vended_interventions.hitl.classifier import ClassifierResult

from engine.sources import HITL_INTERRUPT_NAME, TOOL_GATE_ID_PREFIX

EXPECTED_STRANDS_VERSION = "1.62.0"
NODE_INTERRUPT_EVENT = "multiagent_node_interrupt"  # graph stream event types (strands.types._events)
NODE_CANCEL_EVENT = "multiagent_node_cancel"
NODE_START_EVENT = "multiagent_node_start"  # progress: a node began, and ended (with its NodeResult)
NODE_STOP_EVENT = "multiagent_node_stop"
GRAPH_LOGGER = "strands.multiagent.graph"
_CANCEL_LOCALS = frozenset({"before_event", "cancel_message"})  # Graph._execute_node's cancel branch

Decide = Callable[[BeforeToolCallEvent], Coroutine[Any, Any, ClassifierResult]]
"""HumanInTheLoop's own decision whether a tool call needs a human."""


class StrandsSurfaceChanged(ImportError):
    """The installed Strands lacks a private attribute or behaviour the engine relies on."""


def _message(problems: list[str]) -> str:
    try:
        installed = importlib.metadata.version("strands-agents")
    except importlib.metadata.PackageNotFoundError:
        installed = "(version unknown)"
    return (
        f"strands-agents {installed} lacks what the approval bot relies on (written against "
        f"strands-agents {EXPECTED_STRANDS_VERSION}; see engine/strands_internals.py): " + "; ".join(problems)
    )


try:
    from strands.multiagent.base import NodeResult
    from strands.types._events import (
        MultiAgentNodeCancelEvent,
        MultiAgentNodeInterruptEvent,
        MultiAgentNodeStartEvent,
        MultiAgentNodeStopEvent,
    )
    from strands.types._events import ToolInterruptEvent as ToolInterruptEvent  # re-exported: tools yield them
    from strands.types._events import ToolStreamEvent as ToolStreamEvent
except ImportError as missing:
    raise StrandsSurfaceChanged(_message([f"strands.types._events: {missing}"])) from missing


def interrupts_of(agent: Agent) -> dict[str, Interrupt]:
    """An agent's interrupts by id: the live dict (deleting an entry forgets its answer)."""
    return agent._interrupt_state.interrupts


def intervention_handlers(agent: Agent) -> list[InterventionHandler]:
    """The interventions an agent was built with, in order."""
    return agent._intervention_registry.handlers


def hitl_handlers(agent: Agent) -> list[HumanInTheLoop]:
    """The agent's HumanInTheLoop interventions (at most one, unless subclassed to rename)."""
    return [h for h in intervention_handlers(agent) if isinstance(h, HumanInTheLoop)]


def hitl_trust_enabled(handler: HumanInTheLoop) -> bool:
    """Whether the handler was built with ``enable_trust``: its asks get a Trust button."""
    return handler._enable_trust


def hitl_classifier(handler: HumanInTheLoop) -> object | None:
    """The handler's risk classifier; None when every call not allowed is put to a human."""
    return handler._classifier or None


def hitl_decision(handler: HumanInTheLoop) -> Decide:
    """How the handler decides whether a call needs a human (allow list, trust, classifier)."""
    return handler._requires_approval


def replace_hitl_decision(handler: HumanInTheLoop, *, decide: Decide) -> None:
    """Make ``before_tool_call`` consult ``decide`` instead (wrap :func:`hitl_decision`)."""
    handler._requires_approval = decide  # type: ignore[method-assign, assignment]


def set_before_tools_interrupt_id(make_id: Callable[[BeforeToolsEvent, str], str]) -> None:
    """Name BeforeToolsEvent interrupts with ``make_id(event, name)``: process-wide, every agent."""
    BeforeToolsEvent._interrupt_id = make_id  # type: ignore[method-assign, assignment]


def skip_unrecorded_message_events() -> None:
    """Stop Strands serializing whole conversations for telemetry spans nobody records.

    Strands' ``Tracer._add_event_messages`` JSON-encodes every message of the
    conversation several times per agent cycle, even when no tracer is configured and
    the span drops the events. With a large conversation that holds the event loop (and
    the GIL) for hundreds of milliseconds per call, delaying every other request's ack.
    A recording span still gets its events unchanged.
    """
    original = Tracer._add_event_messages
    if getattr(original, "_skips_unrecorded", False):
        return

    def add_event_messages(self: Tracer, span: Any, messages: Any) -> None:
        if span is None or not span.is_recording():
            return
        original(self, span, messages)

    add_event_messages._skips_unrecorded = True  # type: ignore[attr-defined]
    Tracer._add_event_messages = add_event_messages  # type: ignore[method-assign]


def model_state_of(agent: Agent) -> dict[str, Any]:
    """Runtime state of the agent's model provider (e.g. server-side response ids)."""
    return agent._model_state


def set_model_state(agent: Agent, *, model_state: dict[str, Any]) -> None:
    agent._model_state = model_state


def awaited_interrupts(orchestrator: object) -> set[str] | None:
    """The interrupt ids a restored graph waits for; None when it waits for none (not interrupted).

    A response for an id not among them makes Strands raise ``KeyError`` for the whole
    pass: an answer carried to a pass after the graph moved on must be left out instead.
    """
    if not isinstance(orchestrator, Graph) or not orchestrator._interrupt_state.activated:
        return None
    return set(orchestrator._interrupt_state.interrupts)


def continues_revisits(orchestrator: object) -> bool:
    """Whether a node revisited in a cycle continues its conversation: a Graph without reset_on_revisit."""
    return isinstance(orchestrator, Graph) and not orchestrator.reset_on_revisit


def completed_nodes(orchestrator: object) -> set[GraphNode]:
    """A graph's completed nodes (the live set); none for other orchestrators (a swarm)."""
    return orchestrator.state.completed_nodes if isinstance(orchestrator, Graph) else set()


def interrupted_nodes(orchestrator: object) -> set[GraphNode]:
    """A graph's interrupted nodes (the live set); none for other orchestrators (a swarm)."""
    return orchestrator.state.interrupted_nodes if isinstance(orchestrator, Graph) else set()


def snapshot_interrupt_activated(payload: Mapping[str, Any]) -> bool:
    """Whether a ``Graph.serialize_state()`` payload was taken while interrupted."""
    internal = payload.get("_internal_state") or {}
    return bool((internal.get("interrupt_state") or {}).get("activated"))


def tool_context_from(kwargs: Mapping[str, Any]) -> ToolContext[Any] | None:
    """The ToolContext Strands' executor hands a tool's ``stream`` (None when called otherwise)."""
    context = kwargs.get("_tool_context")
    return context if isinstance(context, ToolContext) else None


def node_cancelled(error: BaseException) -> bool:
    """Whether ``error`` is the ``RuntimeError`` a Graph raises for ``cancel_node``.

    Strands 1.62 raises it in ``Graph._execute_node`` right after binding
    ``cancel_message``, so the innermost frame of its traceback is that one with that
    message: no other error has both, whatever its text says.
    """
    tb = error.__traceback__ if isinstance(error, RuntimeError) else None
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_code is not Graph._execute_node.__code__:
        return False
    return bool(tb.tb_frame.f_locals.get("cancel_message") == str(error))


class _InertModel(Model):
    """A model the check never calls: ``Agent()`` alone would build a Bedrock client."""

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the surface check never calls a model")

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the surface check never calls a model")


_USE: ToolUse = {"toolUseId": "probe-use", "name": "probe", "input": {}}


def _raised_id(event: BeforeToolCallEvent | BeforeToolsEvent, name: str = "x") -> str | None:
    try:
        event.interrupt(name)
    except InterruptException as raised:
        return raised.interrupt.id
    return None


def _consults_decision(agent: Agent) -> bool:
    """A HumanInTheLoop whose replaced decision says "no human" lets the call proceed."""

    async def no_human(event: BeforeToolCallEvent) -> ClassifierResult:
        return ClassifierResult(requires_human_in_the_loop=False)

    handler = HumanInTheLoop()
    replace_hitl_decision(handler, decide=no_human)
    event = BeforeToolCallEvent(agent=agent, selected_tool=None, tool_use=_USE, invocation_state={})
    step = handler.before_tool_call(event)
    try:
        step.send(None)
    except StopIteration as done:
        return isinstance(done.value, Proceed)
    finally:
        step.close()
    return False


def _before_tools_id_is_used(agent: Agent) -> bool:
    """BeforeToolsEvent defines ``_interrupt_id`` and ``interrupt()`` names interrupts with it."""

    class Probe(BeforeToolsEvent):
        def _interrupt_id(self, name: str) -> str:
            return f"probe:{name}"

    event = Probe(agent=agent, message={"role": "assistant", "content": []}, invocation_state={})
    defined = callable(vars(BeforeToolsEvent).get("_interrupt_id"))
    return defined and _raised_id(event) == "probe:x" and "probe:x" in interrupts_of(agent)


def _node_sets(graph: Graph) -> bool:
    return isinstance(completed_nodes(graph), set) and isinstance(interrupted_nodes(graph), set)


def _graph_events_typed() -> bool:
    """The stream event types the graph pass reads (interrupts, a node gate's cancel)."""
    cancel = MultiAgentNodeCancelEvent("n", "m") == {"type": NODE_CANCEL_EVENT, "node_id": "n", "message": "m"}
    interrupt = MultiAgentNodeInterruptEvent("n", [])
    start = MultiAgentNodeStartEvent("n", "agent") == {"type": NODE_START_EVENT, "node_id": "n", "node_type": "agent"}
    result = NodeResult(result=None)  # type: ignore[arg-type]
    stop = MultiAgentNodeStopEvent("n", result) == {"type": NODE_STOP_EVENT, "node_id": "n", "node_result": result}
    usage = "totalTokens" in result.accumulated_usage and isinstance(result.execution_time, int)
    return (
        cancel
        and start
        and stop
        and usage
        and interrupt
        == {
            "type": NODE_INTERRUPT_EVENT,
            "node_id": "n",
            "interrupts": [],
        }
    )


def _tracer_adds_message_events() -> bool:
    params = list(inspect.signature(Tracer._add_event_messages).parameters)
    return params[:3] == ["self", "span", "messages"]


def check_surface() -> None:
    """Raise :class:`StrandsSurfaceChanged` unless everything this module uses is there and works."""

    def classify(event: BeforeToolCallEvent, **kwargs: Any) -> ClassifierResult:
        return ClassifierResult(requires_human_in_the_loop=True)

    try:
        guarded, plain = HumanInTheLoop(enable_trust=True, classifier=classify), HumanInTheLoop()
        agent = Agent(model=_InertModel(), name="probe", interventions=[guarded], callback_handler=None)
        builder = GraphBuilder()
        builder.add_node(agent, "probe")
        builder.set_max_node_executions(1)
        graph = builder.build()
    except Exception as error:
        raise StrandsSurfaceChanged(_message([f"building a probe Agent and Graph failed: {error!r}"])) from error
    call = BeforeToolCallEvent(agent=agent, selected_tool=None, tool_use=_USE, invocation_state={})
    gate_id = f"{TOOL_GATE_ID_PREFIX}{_USE['toolUseId']}:{uuid.uuid5(uuid.NAMESPACE_OID, HITL_INTERRUPT_NAME)}"
    expected: list[tuple[str, Callable[[], object]]] = [
        ("Agent()._interrupt_state.interrupts (a dict)", lambda: isinstance(interrupts_of(agent), dict)),
        ("Agent()._intervention_registry.handlers", lambda: intervention_handlers(agent) == [guarded]),
        ("Agent()._model_state (a dict)", lambda: isinstance(model_state_of(agent), dict)),
        ("HumanInTheLoop()._enable_trust", lambda: (guarded._enable_trust, plain._enable_trust) == (True, False)),
        ("HumanInTheLoop()._classifier", lambda: (guarded._classifier, plain._classifier) == (classify, None)),
        ("HumanInTheLoop._requires_approval (async)", lambda: inspect.iscoroutinefunction(hitl_decision(plain))),
        ("HumanInTheLoop.before_tool_call consulting _requires_approval", lambda: _consults_decision(agent)),
        (f"HumanInTheLoop.name == {HITL_INTERRUPT_NAME!r}", lambda: HumanInTheLoop.name == HITL_INTERRUPT_NAME),
        (f"BeforeToolCallEvent interrupt ids {gate_id}", lambda: _raised_id(call, HITL_INTERRUPT_NAME) == gate_id),
        ("BeforeToolsEvent._interrupt_id (naming its interrupts)", lambda: _before_tools_id_is_used(agent)),
        ("Graph()._interrupt_state.interrupts / activated", lambda: awaited_interrupts(graph) is None),
        ("Graph.reset_on_revisit (default False)", lambda: graph.reset_on_revisit is False),
        ("Graph.state.completed_nodes / interrupted_nodes (sets)", lambda: _node_sets(graph)),
        (
            'Graph.serialize_state()["_internal_state"]["interrupt_state"]["activated"]',
            lambda: graph.serialize_state()["_internal_state"]["interrupt_state"]["activated"] is False,
        ),
        (f"graph stream events {NODE_INTERRUPT_EVENT!r}, {NODE_CANCEL_EVENT!r}", _graph_events_typed),
        ("Tracer._add_event_messages(span, messages)", _tracer_adds_message_events),
        (
            "Graph._execute_node raising RuntimeError(cancel_message) for cancel_node",
            lambda: set(Graph._execute_node.__code__.co_varnames) >= _CANCEL_LOCALS,
        ),
        (f"strands.multiagent.graph logging to {GRAPH_LOGGER!r}", lambda: graph_module.logger.name == GRAPH_LOGGER),
    ]
    problems = []
    for what, probe in expected:
        try:
            holds = bool(probe())
        except Exception as error:
            problems.append(f"{what} ({type(error).__name__}: {error})")
            continue
        if not holds:
            problems.append(what)
    if problems:
        raise StrandsSurfaceChanged(_message(problems))


check_surface()
