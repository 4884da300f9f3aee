"""Graph state to bytes and back, working around what Strands 1.62 loses on the way.

``Graph.serialize_state()`` is the source of truth; this module only makes it survive
JSON and a different process:

* Bytes (images, documents in node conversations) are not JSON: Strands' own
  ``encode_bytes_values`` / ``decode_bytes_values`` handle them, over the whole state,
  not just the task as ``serialize_state`` does.
* An interrupted node inside a cycle is not listed in ``next_nodes_to_execute`` (its
  incoming back edge comes from a node that has not completed), and
  ``deserialize_state`` treats a snapshot without next nodes as finished and resets the
  graph: the resumed run then "completes" without running anything. A snapshot taken
  while interrupted always resumes the interrupted nodes (``_execute_graph`` picks them
  from the interrupt state), so naming them as next nodes only makes
  ``deserialize_state`` restore instead of reset.
* A node revisited in a cycle with ``reset_on_revisit`` off is both completed (its
  first visit) and interrupted (this one); ``deserialize_state`` marks it completed
  last, and only interrupted nodes resume: it would be skipped. Interrupted nodes are
  marked interrupted again after restoring.
* With ``reset_on_revisit`` off, a revisited node continues its conversation, but
  ``serialize_state`` keeps conversations only for interrupted nodes: in another
  process the node would start blank. Completed agents' conversations, state and model
  state are stored beside the snapshot (``_approval_bot_agents``) and restored.
* A graph or swarm nested as a node keeps its own state, which the outer graph's
  ``serialize_state`` leaves out: an interrupt raised inside it would be unknown to the
  nested graph rebuilt in another process. Nested states are stored beside the outer
  one (under ``_approval_bot_nested``, by node id, recursively) and restored after it.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph

logger = logging.getLogger(__name__)


def _jsonable(value: Any) -> Any:
    # Interrupt reasons are arbitrary objects from graph code; a card only shows them.
    logger.warning("snapshot: %s is not JSON; stored as its string form", type(value).__name__)
    return str(value)


_NESTED = "_approval_bot_nested"
_AGENTS = "_approval_bot_agents"


def dump_state(graph: Graph) -> bytes:
    from strands.types.session import encode_bytes_values

    state = encode_bytes_values(_serialize(graph))
    return json.dumps(state, separators=(",", ":"), ensure_ascii=False, default=_jsonable).encode()


def restore_state(graph: Graph, snapshot: bytes) -> None:
    from strands.types.session import decode_bytes_values

    _restore(graph, decode_bytes_values(json.loads(snapshot)))


def _serialize(orchestrator: Any) -> dict[str, Any]:
    state: dict[str, Any] = orchestrator.serialize_state()
    nested: dict[str, Any] = {}
    for node_id, inner in _nested_orchestrators(orchestrator):
        try:
            nested[node_id] = _serialize(inner)
        except NotImplementedError:  # e.g. a remote A2A agent: nothing of it lives here
            continue
    if nested:
        state[_NESTED] = nested
    kept = _completed_agents(orchestrator)
    if kept:
        state[_AGENTS] = kept
    return state


def _completed_agents(orchestrator: Any) -> dict[str, Any]:
    """Conversations a revisit continues: only needed when the graph does not reset them."""
    from strands.agent import Agent

    from engine.strands_internals import completed_nodes, continues_revisits, interrupted_nodes, model_state_of

    if not continues_revisits(orchestrator):
        return {}
    kept: dict[str, Any] = {}
    for node in completed_nodes(orchestrator):
        agent = node.executor
        if isinstance(agent, Agent) and node not in interrupted_nodes(orchestrator):
            kept[node.node_id] = {
                "messages": agent.messages,
                "state": agent.state.get(),
                "model_state": model_state_of(agent),
            }
    return kept


def _restore(orchestrator: Any, payload: dict[str, Any]) -> None:
    from engine.strands_internals import snapshot_interrupt_activated

    nested: dict[str, Any] = payload.pop(_NESTED, None) or {}
    interrupted = snapshot_interrupt_activated(payload)
    if payload.get("type") == "graph" and interrupted and not payload.get("next_nodes_to_execute"):
        payload["next_nodes_to_execute"] = list(payload.get("interrupted_nodes") or [])
    agents: dict[str, Any] = payload.pop(_AGENTS, None) or {}
    orchestrator.deserialize_state(payload)
    _mark_interrupted(orchestrator)
    _restore_agents(orchestrator, agents)
    for node_id, inner in _nested_orchestrators(orchestrator):
        if node_id in nested:
            _restore(inner, nested[node_id])


def _mark_interrupted(orchestrator: Any) -> None:
    from strands.multiagent.base import Status

    from engine.strands_internals import interrupted_nodes

    for node in interrupted_nodes(orchestrator):
        node.execution_status = Status.INTERRUPTED


def _restore_agents(orchestrator: Any, agents: dict[str, Any]) -> None:
    from strands.agent.state import AgentState

    from engine.strands_internals import set_model_state

    nodes = getattr(orchestrator, "nodes", None) or {}
    for node_id, saved in agents.items():
        agent = getattr(nodes.get(node_id), "executor", None)
        if agent is None:
            continue
        agent.messages = saved["messages"]
        agent.state = AgentState(saved["state"])
        set_model_state(agent, model_state=saved.get("model_state") or {})


def _nested_orchestrators(orchestrator: Any) -> list[tuple[str, Any]]:
    from strands.multiagent.base import MultiAgentBase

    return [
        (node_id, node.executor)
        for node_id, node in (getattr(orchestrator, "nodes", None) or {}).items()
        if isinstance(getattr(node, "executor", None), MultiAgentBase)
    ]
