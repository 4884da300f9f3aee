"""``batch-gate``: two regions restart their hosts in parallel, each batch approved as a whole.

What a team uses it for: ``/graph run batch-gate restart the api fleet``. The ``eu`` and
``us`` agents each restart their hosts with several ``restart_host`` calls in ONE model
turn (a tool batch). A ``BeforeToolsEvent`` hook asks once per batch rather than once per
call: one card per region says "restart these N hosts?", and a region's on-call person
approves or rejects that region without touching the other. A ``summary`` node joins the
two outcomes.

Graph: ``eu`` ∥ ``us`` → ``summary``. Interrupt: ``approve_batch`` with reason
``{"region", "calls": [{"tool", "input"}, ...]}``, raised by ``BatchGate`` before the
batch runs. Reject sets ``event.cancel``: no call of the batch runs, and each call's
result is the rejection message.

Both regions deliberately use the same interrupt name. Strands 1.62 derives a
``BeforeToolsEvent`` interrupt id from the name alone (``v1:before_tools:<uuid5(name)>``),
so both parallel asks carry the same id: the engine must keep them apart by node (two
cards) and route each answer only to its own node. This graph is the regression case.

The restarts are simulated (recorded in ``RESTARTED``).
"""

from __future__ import annotations

from typing import Any

from strands import Agent, tool
from strands.hooks import BeforeToolsEvent, HookProvider, HookRegistry
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages

from graph_defs import read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, latest_tool_result_text, say, turn, upstream_output
from graph_defs.scripted import call as call_tool

INTERRUPT_NAME = "approve_batch"
HOSTS: dict[str, tuple[str, ...]] = {"eu": ("eu-api-1", "eu-api-2"), "us": ("us-api-1", "us-api-2", "us-api-3")}

RESTARTED: list[str] = []
"""Hosts restarted in this process (simulated). Tests read it to prove a rejected batch ran nothing."""


@tool
def restart_host(host: str) -> str:
    """Restart one host. Disruptive: its region's batch needs a human's approval.

    Args:
        host: The host name, e.g. "eu-api-1".
    """
    RESTARTED.append(host)
    return f"restarted {host}"


class BatchGate(HookProvider):
    """Ask once for a whole batch of tool calls (one model turn), not once per call.

    Why per batch: a person approves "restart these three hosts" as one decision; asking
    per call would post three cards for one intent, and approving only some of them
    would leave a half-restarted region.
    """

    def __init__(self, *, region: str) -> None:
        self._region = region

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolsEvent, self.gate)

    def gate(self, event: BeforeToolsEvent) -> None:
        calls = [
            {"tool": block["toolUse"]["name"], "input": block["toolUse"]["input"]}
            for block in event.message["content"]
            if "toolUse" in block
        ]
        if not calls:
            return
        answer = read_answer(event.interrupt(INTERRUPT_NAME, reason={"region": self._region, "calls": calls}))
        if answer.decision == "reject":
            event.cancel = f"Batch for {self._region} rejected by {answer.who}: {answer.reason}"


def _restart_all(region: str) -> Step:
    return turn(*(call_tool("restart_host", host=host) for host in HOSTS[region]))


def _outcome(region: str, messages: Messages) -> Step:
    results = [
        item["text"]
        for message in messages
        for block in message["content"]
        if "toolResult" in block
        for item in block["toolResult"]["content"]
        if "text" in item
    ]
    restarted = [r for r in results if r.startswith("restarted ")]
    if restarted and len(restarted) == len(results):
        return say(f"{region}: restarted {len(restarted)} hosts")
    return say(f"{region}: nothing restarted ({latest_tool_result_text(messages)})")


def _region(region: str) -> Agent:
    return Agent(
        name=region,
        model=pick_model(
            offline=lambda: ScriptedModel(
                [lambda m: _restart_all(region), lambda m: _outcome(region, m)], id_prefix=region
            )
        ),
        system_prompt=(
            f"You restart the {region} hosts {', '.join(HOSTS[region])}: call restart_host once per host, "
            "all in one turn. Then say how many hosts were restarted, or why none were."
        ),
        tools=[restart_host],
        hooks=[BatchGate(region=region)],
        callback_handler=None,
    )


def _summary(messages: Messages) -> Step:
    return say(" | ".join(upstream_output(messages, region) or f"{region}: no answer" for region in HOSTS))


@graph_def("batch-gate", description="Two regions restart hosts in parallel; each tool batch asks once")
def build() -> Graph:
    """eu ∥ us (each asks ``approve_batch`` before its batch) → summary."""
    summary = Agent(
        name="summary",
        model=pick_model(offline=lambda: ScriptedModel([_summary])),
        system_prompt="Summarise in one line per region what was restarted.",
        callback_handler=None,
    )
    builder = GraphBuilder()
    for region in HOSTS:
        builder.add_node(_region(region), region)
        builder.set_entry_point(region)
    builder.add_node(summary, "summary")
    for region in HOSTS:
        builder.add_edge(region, "summary")
    builder.set_graph_id("batch-gate")
    builder.set_max_node_executions(10)
    builder.set_execution_timeout(600)
    builder.set_node_timeout(300)
    return builder.build()
