"""The three-node graph every system in the peer benchmark runs: plan → approval → report.

Why one Strands graph shared by ours and Strands' own session manager: the comparison is
about what each persistence layer costs for the same work, so the graph must not differ.
The nodes are tiny ``AgentBase`` executors, not LLM agents: an agent's conversation would
copy the plan into several messages and blur "the state carried by the plan's output".
``plan`` outputs ``PEERS_STATE_BYTES`` bytes of English-like text (deterministic, and
compressing about as well as prose does); ``approval`` is held by a ``BeforeNodeCallEvent``
hook (the interrupt); ``report`` appends one line to the file ``PEERS_MARKER``, the side
effect whose count says whether a resume ran once. The LangGraph version
(``bench/peers/langgraph_peer.py``) has the same three nodes and the same text.

Registered for our engine as ``peers-cycle`` (``GraphCatalog(extra_modules=["bench.peers.graph"])``).
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator
from typing import Any

from strands.agent.agent_result import AgentResult
from strands.hooks import BeforeNodeCallEvent, HookProvider, HookRegistry
from strands.multiagent.graph import Graph, GraphBuilder
from strands.telemetry.metrics import EventLoopMetrics

from bench.graphs import WORDS as _WORDS
from graph_defs import graph_def, read_answer

GRAPH = "peers-cycle"
INTERRUPT_NAME = "approve_plan"
STATE_ENV = "PEERS_STATE_BYTES"
MARKER_ENV = "PEERS_MARKER"


def plan_text(size: int) -> str:
    """``size`` bytes of text from a small vocabulary, the same on every run and in every system."""
    pick = random.Random(size)
    words: list[str] = []
    length = 0
    while length < size:
        word = pick.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def state_bytes() -> int:
    return int(os.environ.get(STATE_ENV, "1024"))


def record_report(line: str) -> None:
    """The side effect: one line per run of the report node, appended to ``PEERS_MARKER``."""
    path = os.environ.get(MARKER_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as marker:
            marker.write(line + "\n")


class Step:
    """A graph node without a model: returns a fixed text, or what ``make`` builds."""

    def __init__(self, *, name: str, make: Any) -> None:
        self.name = name
        self._make = make

    def _result(self, prompt: Any) -> AgentResult:
        text = str(self._make(prompt))
        return AgentResult(
            stop_reason="end_turn",
            message={"role": "assistant", "content": [{"text": text}]},
            metrics=EventLoopMetrics(),
            state={},
        )

    async def invoke_async(self, prompt: Any = None, **kwargs: Any) -> AgentResult:
        return self._result(prompt)

    def __call__(self, prompt: Any = None, **kwargs: Any) -> AgentResult:
        return self._result(prompt)

    async def stream_async(self, prompt: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        yield {"result": self._result(prompt)}


class ApprovalGate(HookProvider):
    """Holds ``approval`` until someone answers; a rejection cancels the node (fail closed)."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeNodeCallEvent, self.gate)

    def gate(self, event: BeforeNodeCallEvent) -> None:
        if event.node_id != "approval":
            return
        answer = read_answer(event.interrupt(INTERRUPT_NAME, reason={"node": "approval", "plan_bytes": state_bytes()}))
        if answer.decision == "reject":
            event.cancel_node = f"plan rejected by {answer.who}"


def _report(prompt: Any) -> str:
    line = f"report pid={os.getpid()}"
    record_report(line)
    return line


def build_graph(*, session_manager: Any = None) -> Graph:
    """The graph; ``session_manager`` only for Strands' own persistence (the peer)."""
    builder = GraphBuilder()
    builder.add_node(Step(name="plan", make=lambda prompt: plan_text(state_bytes())), "plan")
    builder.add_node(Step(name="approval", make=lambda prompt: "approved"), "approval")
    builder.add_node(Step(name="report", make=_report), "report")
    builder.add_edge("plan", "approval")
    builder.add_edge("approval", "report")
    builder.set_entry_point("plan")
    builder.set_hook_providers([ApprovalGate()])
    builder.set_graph_id(GRAPH)
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    if session_manager is not None:
        builder.set_session_manager(session_manager)
    return builder.build()


@graph_def(GRAPH, description="peer benchmark: plan → approval (hook interrupt) → report")
def peers_cycle() -> Graph:
    return build_graph()
