"""``nested-graph`` / ``nested-swarm``: a team's sub-workflow reused as one node of a bigger graph.

What a team uses it for: ``/graph run nested-graph rotate key KEY-42``. An ``intake``
agent reads the request, then the ``ops`` node, which is itself a multi-agent system the
ops team owns (a ``Graph`` in ``nested-graph``, a ``Swarm`` in ``nested-swarm``), rotates
the key with a tool that asks for approval, and a ``report`` agent sums up. The
interrupt comes from an agent two levels down; the card and the answer must still reach
it, also when the resume happens in another process.

Graph: ``intake`` → ``ops`` [inner: ``operator``] → ``report``. Interrupt:
``approve_rotation`` with reason ``{"key": <key id>}``, raised by ``rotate_key`` inside the
inner ``operator`` agent. Reject leaves the key alone.

Strands 1.62's outer ``Graph.serialize_state()`` records an interrupted node's
conversation only when the node is an ``Agent``: for a nested ``Graph``/``Swarm`` node it
keeps just the interrupt ids, and the inner system's own state (its interrupted agent's
messages and interrupt state) is not in the outer snapshot. Resuming in the same process
works from memory; resuming elsewhere needs the engine to save and restore the nested
state too (see ``engine/snapshot.py``).

The rotation is simulated (recorded in ``ROTATED``).
"""

from __future__ import annotations

import re

from strands import Agent, tool
from strands.multiagent import Swarm
from strands.multiagent.base import MultiAgentBase
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages
from strands.types.tools import ToolContext

from graph_defs import read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say, upstream_output

INTERRUPT_NAME = "approve_rotation"

ROTATED: list[str] = []
"""Keys rotated in this process (simulated). Tests read it to prove a rejection rotated nothing."""

_KEY = re.compile(r"\b(KEY-\d+)\b", re.IGNORECASE)


def key_of(text: str) -> str:
    """The key id named in a request (``KEY-<n>``), or ``KEY-0`` when none is."""
    match = _KEY.search(text)
    return match[1].upper() if match else "KEY-0"


@tool(context=True)
def rotate_key(key_id: str, tool_context: ToolContext) -> str:
    """Rotate an API key after a human approved it.

    Args:
        key_id: The key to rotate, e.g. "KEY-42".
    """
    answer = read_answer(tool_context.interrupt(INTERRUPT_NAME, reason={"key": key_id}))
    if answer.decision == "reject":
        return f"not rotated: rejected by {answer.who}: {answer.reason}"
    ROTATED.append(key_id)
    return f"rotated {key_id} (approved by {answer.who})"


def _intake(messages: Messages) -> Step:
    return say(f"Request: rotate {key_of(graph_task(messages))}")


def _rotate(messages: Messages) -> Step:
    return call("rotate_key", key_id=key_of(graph_task(messages)))


def _rotated(messages: Messages) -> Step:
    return say(f"operator: {latest_tool_result_text(messages)}")


def _report(messages: Messages) -> Step:
    return say(f"Report: {upstream_output(messages, 'ops') or 'ops reported nothing'}")


def _operator() -> Agent:
    return Agent(
        name="operator",
        model=pick_model(offline=lambda: ScriptedModel([_rotate, _rotated], id_prefix="operator")),
        system_prompt="Rotate the key named in the request with rotate_key, once, then quote the result.",
        tools=[rotate_key],
        callback_handler=None,
    )


def _inner_graph() -> Graph:
    builder = GraphBuilder()
    builder.add_node(_operator(), "operator")
    builder.set_entry_point("operator")
    builder.set_graph_id("ops")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    return builder.build()


def _inner_swarm() -> Swarm:
    return Swarm([_operator()], id="ops", max_handoffs=2, max_iterations=4, execution_timeout=600.0)


def _outer(*, graph_id: str, ops: MultiAgentBase) -> Graph:
    intake = Agent(
        name="intake",
        model=pick_model(offline=lambda: ScriptedModel([_intake])),
        system_prompt="Restate which key the request asks to rotate.",
        callback_handler=None,
    )
    report = Agent(
        name="report",
        model=pick_model(offline=lambda: ScriptedModel([_report])),
        system_prompt="Report in one line what the ops team did.",
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(intake, "intake")
    builder.add_node(ops, "ops")
    builder.add_node(report, "report")
    builder.add_edge("intake", "ops")
    builder.add_edge("ops", "report")
    builder.set_entry_point("intake")
    builder.set_graph_id(graph_id)
    builder.set_max_node_executions(6)
    builder.set_execution_timeout(900)
    builder.set_node_timeout(600)
    return builder.build()


@graph_def("nested-graph", description="Rotate a key; the ops node is a nested Graph whose agent asks")
def build_graph() -> Graph:
    """intake → ops (a ``Graph`` of ``operator``, interrupt ``approve_rotation``) → report."""
    return _outer(graph_id="nested-graph", ops=_inner_graph())


@graph_def("nested-swarm", description="Rotate a key; the ops node is a nested Swarm whose agent asks")
def build_swarm() -> Graph:
    """intake → ops (a ``Swarm`` of ``operator``, interrupt ``approve_rotation``) → report."""
    return _outer(graph_id="nested-swarm", ops=_inner_swarm())
