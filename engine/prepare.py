"""What the engine adds to every freshly built graph before a pass, so graph authors
don't have to know Strands 1.62's gaps:

* **Edits.** An Edit on a ``BeforeToolCallEvent`` gate answers the gate with
  ``"approve"`` plus ``"edited_input"``. A hook added after the graph's own hooks
  replaces the tool's input with the edited one, so a gate written for approve/reject
  needs no change to support editing.
* **HumanInTheLoop's classifier memory.** With a risk classifier, HumanInTheLoop
  remembers in process memory which tool calls it already put to a human. A fresh
  process forgets, asks the classifier again, and if the classifier now says "safe",
  runs a call a person just rejected. A call that has an interrupt in the agent's
  (restored) interrupt state was put to a human: it keeps needing one.
* **Parallel BeforeToolsEvent asks.** Strands derives their interrupt id from the name
  alone, so two parallel nodes asking with the same name share one id and one answer
  approves both. The id gets scoped to the agent and its batch of tool uses (stable
  across a resume: the same assistant message is replayed).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from engine.sources import TOOL_GATE_ID_PREFIX

if TYPE_CHECKING:
    from strands.agent import Agent
    from strands.hooks import BeforeToolCallEvent, BeforeToolsEvent
    from strands.multiagent.graph import Graph

logger = logging.getLogger(__name__)

_PATCHED = False


def prepare(graph: Graph) -> None:
    """Adjust a graph (and graphs nested in it) right after it was built."""
    _scope_before_tools_ids()
    for agent in _agents(graph):
        _apply_edits_on(agent)
        _keep_hitl_asking(agent)


def _agents(graph: Any) -> list[Agent]:
    from strands.agent import Agent

    found: list[Agent] = []
    for node in getattr(graph, "nodes", {}).values():
        executor = getattr(node, "executor", None)
        if isinstance(executor, Agent):
            found.append(executor)
        elif executor is not None:
            found.extend(_agents(executor))  # a nested Graph or Swarm
    return found


def _apply_edits_on(agent: Agent) -> None:
    from strands.hooks import BeforeToolCallEvent

    def apply_edit(event: BeforeToolCallEvent) -> None:
        prefix = f"{TOOL_GATE_ID_PREFIX}{event.tool_use['toolUseId']}:"
        for interrupt_id, interrupt in event.agent._interrupt_state.interrupts.items():
            response = interrupt.response
            if interrupt_id.startswith(prefix) and isinstance(response, dict) and "edited_input" in response:
                event.tool_use = {**event.tool_use, "input": response["edited_input"]}

    # Registered after the graph's own hooks, so it runs after the gate that asked.
    agent.hooks.add_callback(BeforeToolCallEvent, apply_edit)


def _keep_hitl_asking(agent: Agent) -> None:
    from strands.vended_interventions.hitl import HumanInTheLoop
    from strands.vended_interventions.hitl.classifier import ClassifierResult

    registry = getattr(agent, "_intervention_registry", None)
    for handler in getattr(registry, "handlers", None) or []:
        if not isinstance(handler, HumanInTheLoop) or not getattr(handler, "_classifier", None):
            continue
        decide = handler._requires_approval

        async def durable(event: BeforeToolCallEvent, _decide: Any = decide) -> ClassifierResult:
            prefix = f"{TOOL_GATE_ID_PREFIX}{event.tool_use['toolUseId']}:"
            if any(i.startswith(prefix) for i in event.agent._interrupt_state.interrupts):
                return ClassifierResult(requires_human_in_the_loop=True, reason="already put to a human")
            result: ClassifierResult = await _decide(event)
            return result

        handler._requires_approval = durable  # type: ignore[method-assign]


def _scope_before_tools_ids() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from strands.hooks import BeforeToolsEvent

    def scoped_id(self: BeforeToolsEvent, name: str) -> str:
        uses = sorted(
            str(block["toolUse"]["toolUseId"]) for block in self.message.get("content", []) if "toolUse" in block
        )
        scope = uuid.uuid5(uuid.NAMESPACE_OID, f"{getattr(self.agent, 'name', '')}|{','.join(uses)}")
        return f"v1:before_tools:{scope}:{uuid.uuid5(uuid.NAMESPACE_OID, name)}"

    BeforeToolsEvent._interrupt_id = scoped_id  # type: ignore[method-assign]
    _PATCHED = True
