"""Graphs made for the benchmarks: deterministic, offline, and sized on purpose.

``bench-ask`` is the smallest graph that pauses for a human (one node, one ask), so that
the ack benchmark's background work is short and the resume benchmark measures our
fixed overhead. ``bench-chatty`` reads many pages before it asks, so its snapshot carries
a conversation of realistic size (tens of KB of JSON): that is where restoring and
saving a snapshot could start to cost more than the resume itself.

Imported as a graph module (``GRAPH_MODULES=bench.graphs`` or ``load_graph_modules``).
"""

from __future__ import annotations

import random
from typing import Any

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.tools import ToolContext

from graph_defs import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, say

SMALL = "bench-ask"
CHATTY = "bench-chatty"
CHATTY_PAGES = 16  # stays under Strands' default 40-message window, which would trim the script
APPROVAL_INTERRUPT = "bench_approve"

WORDS = (  # words of the filler text; bench/peers uses the same
    "deploy",
    "service",
    "billing",
    "region",
    "replica",
    "lease",
    "snapshot",
    "version",
    "approve",
    "reject",
    "reply",
    "table",
    "index",
    "partition",
    "throughput",
    "latency",
    "budget",
    "owner",
    "channel",
    "thread",
    "card",
    "modal",
    "decision",
    "resume",
    "graph",
    "node",
)


def page_text(page: int, *, words: int = 600) -> str:
    """About 4 KB of English-like text, different per page but the same on every run.

    Random words from a small vocabulary compress about as well as real prose does, unlike
    ``"x" * n``, which would make the stored-size numbers meaninglessly good.
    """
    pick = random.Random(page)
    return f"page {page}: " + " ".join(pick.choice(WORDS) for _ in range(words))


@tool
def bench_lookup(page: int) -> str:
    """Read one page of reference material."""
    return page_text(page)


@tool(context=True)
def bench_act(action: str, tool_context: ToolContext) -> str:
    """Do something that needs a human's approval first."""
    answer: dict[str, Any] = tool_context.interrupt(APPROVAL_INTERRUPT, reason={"action": action})
    return f"{answer.get('decision')} by {answer.get('user')}: {action}"


def _graph(pages: int) -> Graph:
    script: list[Step] = [call("bench_lookup", page=page) for page in range(pages)]
    script += [call("bench_act", action="ship it"), say("done")]
    agent = Agent(
        name="worker",
        model=ScriptedModel(script, id_prefix="tu_bench"),
        tools=[bench_lookup, bench_act],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "worker")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(120)
    return builder.build()


@graph_def(SMALL, description="benchmark: one node, one ask, tiny state")
def bench_ask() -> Graph:
    return _graph(0)


@graph_def(CHATTY, description=f"benchmark: reads {CHATTY_PAGES} pages, then asks (large snapshot)")
def bench_chatty() -> Graph:
    return _graph(CHATTY_PAGES)
