"""Graph definitions: the multi-agent graphs the bot can run, and their registry.

``from graph_defs import graph_def`` and decorate a function that builds a
``strands.multiagent.Graph``::

    @graph_def("deploy", description="Plan, approve and roll out a service version")
    def build() -> Graph: ...

Importing this package must stay light: the Slack ack path imports it, and importing
strands takes seconds. So only the registry (which imports strands lazily) is loaded
here; the graph modules are imported by ``load_graph_modules`` when a graph is needed.
"""

from graph_defs.registry import (
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

__all__ = [
    "GraphDefinition",
    "GraphDefinitionError",
    "GraphModuleError",
    "UnknownGraph",
    "build_graph",
    "get_graph",
    "graph_def",
    "list_graphs",
    "load_graph_modules",
]
