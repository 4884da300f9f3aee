"""What the engine adds to every freshly built graph before a pass, so graph authors
don't have to know Strands 1.62's gaps:

* **Edits.** An Edit on a ``BeforeToolCallEvent`` gate answers the gate with
  ``"approve"`` plus ``"edited_input"``. A hook that runs before every other hook
  replaces the tool's input with the edited one, so every gate, HumanInTheLoop and its
  classifier judge the call that will actually run, and a gate written for
  approve/reject needs no change. Approvals given to the same call before the edit
  were given to other input: the engine names them (``STALE_ANSWERS`` in the
  invocation state, once) and the hook forgets them, so those gates ask again.
* **HumanInTheLoop's classifier memory.** With a risk classifier, HumanInTheLoop
  remembers in process memory which tool calls it already put to a human. A fresh
  process forgets, asks the classifier again, and if the classifier now says "safe",
  runs a call a person just rejected. A call that has an interrupt in the agent's
  (restored) interrupt state was put to a human: it keeps needing one.
* **Parallel BeforeToolsEvent asks.** Strands derives their interrupt id from the name
  alone, so two parallel nodes asking with the same name share one id and one answer
  approves both. The id gets scoped to the agent and its batch of tool uses (stable
  across a resume: the same assistant message is replayed). A run saved with the old
  id keeps it. The patch is process-wide: it applies to any Strands code in the bot.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from engine.sources import HITL_INTERRUPT_NAME, TOOL_GATE_ID_PREFIX

if TYPE_CHECKING:
    from strands.agent import Agent
    from strands.hooks import BeforeToolCallEvent, BeforeToolsEvent
    from strands.multiagent.graph import Graph

logger = logging.getLogger(__name__)

_PATCHED = False
STALE_ANSWERS = "approval_bot_stale_answers"  # invocation-state key: interrupt ids to forget


def prepare(graph: Graph) -> None:
    """Adjust a graph (and graphs nested in it) right after it was built.

    The first call imports ``engine.strands_internals``, which checks the Strands internals
    these adjustments rely on: if they changed, the pass fails here, before running unguarded.
    """
    _scope_before_tools_ids()
    from engine.strands_internals import skip_unrecorded_message_events

    skip_unrecorded_message_events()
    for agent in agents_under(graph):
        _apply_edits_on(agent)
        _keep_hitl_asking(agent)


def agents_under(executor: Any) -> list[Agent]:
    """The agents an executor runs: itself, or the agents of a graph or swarm, nested or not."""
    from strands.agent import Agent

    if isinstance(executor, Agent):
        return [executor]
    found: list[Agent] = []
    for node in (getattr(executor, "nodes", None) or {}).values():
        found.extend(agents_under(getattr(node, "executor", None)))
    return found


def edited_input(agent: Any, tool_use_id: str) -> dict[str, Any] | None:
    """The input a person edited this tool call to, if any (from the agent's interrupts)."""
    from engine.strands_internals import interrupts_of

    prefix = f"{TOOL_GATE_ID_PREFIX}{tool_use_id}:"
    for interrupt_id, interrupt in interrupts_of(agent).items():
        response = interrupt.response
        if interrupt_id.startswith(prefix) and isinstance(response, dict) and "edited_input" in response:
            edited: dict[str, Any] = response["edited_input"]
            return edited
    return None


def _apply_edits_on(agent: Agent) -> None:
    from strands.hooks import BeforeToolCallEvent
    from strands.hooks.registry import HookOrder

    from engine.strands_internals import interrupts_of

    def apply_edit(event: BeforeToolCallEvent) -> None:
        stale = set(event.invocation_state.get(STALE_ANSWERS) or ())
        prefix = f"{TOOL_GATE_ID_PREFIX}{event.tool_use['toolUseId']}:"
        interrupts = interrupts_of(event.agent)
        for interrupt_id in [i for i in interrupts if i in stale and i.startswith(prefix)]:
            del interrupts[interrupt_id]  # answered before the edit: asked again, about the edited call
        edited = edited_input(event.agent, str(event.tool_use["toolUseId"]))
        if edited is not None:
            event.tool_use = {**event.tool_use, "input": edited}

    # First of all hooks: every gate and intervention judges the input that will run.
    agent.hooks.add_callback(BeforeToolCallEvent, apply_edit, order=HookOrder.SDK_FIRST)


def _keep_hitl_asking(agent: Agent) -> None:
    from strands.vended_interventions.hitl.classifier import ClassifierResult

    from engine.strands_internals import (
        Decide,
        hitl_classifier,
        hitl_decision,
        hitl_handlers,
        interrupts_of,
        replace_hitl_decision,
    )

    for handler in hitl_handlers(agent):
        if hitl_classifier(handler) is None:
            continue  # without a classifier every call not allowed is asked anyway
        decide = hitl_decision(handler)

        async def durable(event: BeforeToolCallEvent, _decide: Decide = decide) -> ClassifierResult:
            asked = f"{TOOL_GATE_ID_PREFIX}{event.tool_use['toolUseId']}:{_HITL_NAME_ID}"
            if asked in interrupts_of(event.agent):
                return ClassifierResult(requires_human_in_the_loop=True, reason="already put to a human")
            return await _decide(event)

        replace_hitl_decision(handler, decide=durable)


_HITL_NAME_ID = uuid.uuid5(uuid.NAMESPACE_OID, HITL_INTERRUPT_NAME)


def _scope_before_tools_ids() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from engine.strands_internals import interrupts_of, set_before_tools_interrupt_id

    def scoped_id(self: BeforeToolsEvent, name: str) -> str:
        legacy = f"v1:before_tools:{uuid.uuid5(uuid.NAMESPACE_OID, name)}"
        if legacy in interrupts_of(self.agent):
            return legacy  # saved before this patch: keep its answer
        uses = sorted(
            str(block["toolUse"]["toolUseId"]) for block in self.message.get("content", []) if "toolUse" in block
        )
        scope = uuid.uuid5(uuid.NAMESPACE_OID, f"{getattr(self.agent, 'name', '')}|{','.join(uses)}")
        return f"v1:before_tools:{scope}:{uuid.uuid5(uuid.NAMESPACE_OID, name)}"

    set_before_tools_interrupt_id(scoped_id)
    _PATCHED = True
