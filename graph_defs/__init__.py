"""Graph definitions: the multi-agent graphs the bot can run, and their registry.

``from graph_defs import graph_def`` and decorate a function that builds a
``strands.multiagent.Graph``::

    @graph_def("deploy", description="Plan, approve and roll out a service version")
    def build() -> Graph: ...

The approval policy goes with the definition: ``@graph_def("payout", approvers=["S0FINANCE"],
quorum=2, asks={"send_payment": AskPolicy(expires_after=3600)})``; ``idempotent=["lookup"]``
names tools or asks whose approved call may run twice harmlessly (see ``graph_def``).

In a hook or tool that raises an interrupt, ``read_answer`` decodes the person's answer
(``Answer``: ``decision`` approve/reject/reply, ``text``, ``user``), failing closed on
anything it cannot read; the example graphs use it the same way.

Importing this package must stay light: the Slack ack path imports it, and importing
strands takes seconds. So only the registry (which imports strands lazily) is loaded
here; the graph modules are imported by ``load_graph_modules`` when a graph is needed.
``review_after`` (which needs strands) is exported lazily, on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graph_defs.answers import Answer, read_answer
from graph_defs.registry import (
    AskPolicy,
    GraphDefinition,
    GraphDefinitionError,
    GraphModuleError,
    UnknownGraph,
    build_graph,
    get_graph,
    graph_def,
    list_graphs,
    load_graph_modules,
)

if TYPE_CHECKING:
    from graph_defs.review import review_after

__all__ = [
    "Answer",
    "AskPolicy",
    "GraphDefinition",
    "GraphDefinitionError",
    "GraphModuleError",
    "UnknownGraph",
    "build_graph",
    "get_graph",
    "graph_def",
    "list_graphs",
    "load_graph_modules",
    "read_answer",
    "review_after",
]


def __getattr__(name: str) -> Any:
    """Import ``review_after`` only when asked for: it imports strands, the ack path must not."""
    if name == "review_after":
        from graph_defs.review import review_after

        return review_after
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
