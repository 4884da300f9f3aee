"""``node-gate``: a graph-level hook holds a whole node until someone signs off.

What a team uses it for: ``/graph run node-gate announce the 2.0 launch``. A ``writer``
drafts an announcement; the ``publish`` node must not even start until a human signs off
on the draft. The gate is a ``BeforeNodeCallEvent`` hook on the graph
(``GraphBuilder.set_hook_providers``), so it needs no cooperation from the node's agent or
tools: use it when a whole step, not one tool call, needs approval.

Graph: ``writer`` → ``publish``. Interrupt: ``approve_publish`` with reason
``{"node": "publish", "draft": <writer's text>}``, raised by ``SignOffGate`` before
``publish`` starts. Approve (or Reply) lets the node run. Reject sets
``event.cancel_node``: Strands 1.62 then ends the graph with a ``RuntimeError`` carrying
that message, which the engine reports as a rejected run ("node publish not run: ...").

Publishing is simulated (recorded in ``PUBLISHED``).
"""

from __future__ import annotations

from typing import Any

from strands import Agent, tool
from strands.hooks import BeforeNodeCallEvent, HookProvider, HookRegistry
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages

from graph_defs import read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say, upstream_output

INTERRUPT_NAME = "approve_publish"
GATED_NODE = "publish"

PUBLISHED: list[str] = []
"""Texts published in this process (simulated). Tests read it to prove a rejected node never ran."""


@tool
def publish_post(text: str) -> str:
    """Publish an announcement to the company blog.

    Args:
        text: The announcement.
    """
    PUBLISHED.append(text)
    return f"published: {text}"


class SignOffGate(HookProvider):
    """Hold one node of the graph until a human signs off; a rejection cancels the node.

    Why a graph hook: the decision is about running a step at all, so it belongs to the
    graph, not to an agent. The draft shown on the card comes from the graph's own results.
    """

    def __init__(self, *, node_id: str = GATED_NODE, source_node: str = "writer") -> None:
        self._node_id = node_id
        self._source_node = source_node

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeNodeCallEvent, self.gate)

    def gate(self, event: BeforeNodeCallEvent) -> None:
        if event.node_id != self._node_id:
            return
        reason = {"node": self._node_id, "draft": self._draft(event)}
        answer = read_answer(event.interrupt(INTERRUPT_NAME, reason=reason))
        if answer.decision == "reject":
            event.cancel_node = f"sign-off refused by {answer.who}: {answer.reason}"

    def _draft(self, event: BeforeNodeCallEvent) -> str:
        state = getattr(event.source, "state", None)
        result = (getattr(state, "results", None) or {}).get(self._source_node)
        if result is None:
            return "(no draft)"
        return "\n".join(str(r).strip() for r in result.get_agent_results())


def _write(messages: Messages) -> Step:
    return say(f"Announcement: {graph_task(messages)}")


def _publish(messages: Messages) -> Step:
    return call("publish_post", text=upstream_output(messages, "writer") or graph_task(messages))


def _published(messages: Messages) -> Step:
    return say(latest_tool_result_text(messages))


@graph_def("node-gate", description="Draft an announcement; a BeforeNodeCallEvent hook asks before publish runs")
def build() -> Graph:
    """writer → publish (gated by ``SignOffGate``, interrupt ``approve_publish``)."""
    writer = Agent(
        name="writer",
        model=pick_model(offline=lambda: ScriptedModel([_write])),
        system_prompt="Write a two-sentence announcement of what the task describes.",
        callback_handler=None,
    )
    publisher = Agent(
        name="publish",
        model=pick_model(offline=lambda: ScriptedModel([_publish, _published], id_prefix="publish")),
        system_prompt="Publish the writer's announcement with publish_post, verbatim, then quote the result.",
        tools=[publish_post],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(writer, "writer")
    builder.add_node(publisher, "publish")
    builder.add_edge("writer", "publish")
    builder.set_entry_point("writer")
    builder.set_hook_providers([SignOffGate()])
    builder.set_graph_id("node-gate")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    builder.set_node_timeout(300)
    return builder.build()
