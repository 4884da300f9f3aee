"""A graph with a plain ``Agent()`` (Strands gives it a ``BedrockModel``): what a user writes first.

Loaded by ``tests/e2e/test_health.py`` through ``GRAPH_MODULES``; under ``GRAPH_MODEL=offline``
the bot must refuse to run it, naming the agent, before anything calls Bedrock.
"""

from __future__ import annotations

from strands import Agent
from strands.multiagent.graph import Graph, GraphBuilder

from graph_defs import graph_def
from graph_defs.scripted import ScriptedModel, say


@graph_def("online", description="a scripted planner, then a plain Agent() that would call Bedrock")
def online() -> Graph:
    builder = GraphBuilder()
    planner = Agent(name="planner", model=ScriptedModel([say("plan: write it")]), callback_handler=None)
    builder.add_node(planner, "plan")
    builder.add_node(Agent(name="writer", callback_handler=None), "write")
    builder.add_edge("plan", "write")
    return builder.build()
