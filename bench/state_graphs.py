"""Graphs whose paused state has a chosen size, for ``bench/resume_size.py``.

Why a module of their own: the catalog imports graph modules by name, and the bench's own
module runs as ``__main__`` under ``python -m``, where registering would define each graph
twice. One node reads a document of the given size (``bench.graphs.page_text``: English-like,
so it compresses as prose does), then asks; the snapshot carries the document once.

``bench-state-handoff`` is the case a compressor with a short window misses: a node writes
a 160 KB report, the next node receives it as its input and asks, so the snapshot carries
the report in the first node's result and again in the second node's conversation, more
than zlib's 32 KB apart.
"""

from __future__ import annotations

import functools

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder

from bench.graphs import bench_act, page_text
from graph_defs import graph_def
from graph_defs.registry import unregister
from graph_defs.scripted import ScriptedModel, call, say

MODULE = __name__
SIZES: dict[str, int] = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
HANDOFF = "bench-state-handoff"
HANDOFF_BYTES = 160_000


def graph_name(size: str) -> str:
    return "bench-state-" + size.replace(" ", "").lower()


@functools.lru_cache(maxsize=8)
def state_text(size: int) -> str:
    """``size`` characters of English-like text, the same on every call."""
    pages: list[str] = []
    length = 0
    page = 0
    while length < size:
        pages.append(page_text(page))
        length += len(pages[-1]) + 1
        page += 1
    return "\n".join(pages)[:size]


@tool
def bench_read_state(size: int) -> str:
    """Read a document of ``size`` characters."""
    return state_text(size)


def _graph(size: int) -> Graph:
    agent = Agent(
        name="worker",
        model=ScriptedModel(
            [call("bench_read_state", size=size), call("bench_act", action="ship it"), say("done")],
            id_prefix="tu_state",
        ),
        tools=[bench_read_state, bench_act],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "worker")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    return builder.build()


@graph_def("bench-state-10kb", description="benchmark: 10 KB of state, then asks")
def state_10kb() -> Graph:
    return _graph(SIZES["10 KB"])


@graph_def("bench-state-100kb", description="benchmark: 100 KB of state, then asks")
def state_100kb() -> Graph:
    return _graph(SIZES["100 KB"])


@graph_def("bench-state-1mb", description="benchmark: 1 MB of state, then asks")
def state_1mb() -> Graph:
    return _graph(SIZES["1 MB"])


@graph_def("bench-state-10mb", description="benchmark: 10 MB of state, then asks")
def state_10mb() -> Graph:
    return _graph(SIZES["10 MB"])


def _handoff_graph() -> Graph:
    writer = Agent(
        name="writer",
        model=ScriptedModel([say(state_text(HANDOFF_BYTES))], id_prefix="tu_write"),
        callback_handler=None,
    )
    reviewer = Agent(
        name="reviewer",
        model=ScriptedModel([call("bench_act", action="publish the report"), say("done")], id_prefix="tu_review"),
        tools=[bench_act],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(writer, "writer")
    builder.add_node(reviewer, "reviewer")
    builder.add_edge("writer", "reviewer")
    builder.set_entry_point("writer")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    return builder.build()


@graph_def(HANDOFF, description="benchmark: a 160 KB report handed to the next node, which asks")
def state_handoff() -> Graph:
    return _handoff_graph()


def forget() -> None:
    """Unregister the graphs (tests must not see them in a later ``/graph list``)."""
    for label in SIZES:
        unregister(graph_name(label))
    unregister(HANDOFF)
