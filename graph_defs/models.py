"""Choose the model the example graphs run on: Bedrock in production, a script offline.

Environment:

``GRAPH_MODEL``
    ``bedrock`` (default): a ``strands.models.BedrockModel``; AWS credentials and region
    come from boto3's usual sources (``AWS_REGION``, profile, role).
    ``offline``: the graph's deterministic ``ScriptedModel``; no network at all. Tests and
    ``approval-bot demo`` use this.
``BEDROCK_MODEL_ID``
    The Bedrock model or inference-profile id used when ``GRAPH_MODEL=bedrock``;
    default ``DEFAULT_BEDROCK_MODEL_ID``.

The variables are read each time a graph is built, not at import, so a test can switch
them with ``monkeypatch.setenv`` and a long-lived server picks up nothing stale.

Offline means offline for every agent: ``check_offline`` (called by
``graph_defs.registry.build_graph`` for every graph, examples and yours) refuses a graph
with an agent that would call a real provider, e.g. a plain ``Agent()`` (Strands gives it
a ``BedrockModel``), naming the agent and what to give it, before anything is sent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from strands.models import Model

from graph_defs.registry import GraphDefinitionError
from graph_defs.scripted import ScriptedModel

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph

__all__ = ["DEFAULT_BEDROCK_MODEL_ID", "MODEL_CHOICES", "OfflineModelError", "check_offline", "offline", "pick_model"]

DEFAULT_BEDROCK_MODEL_ID = "global.anthropic.claude-sonnet-4-6"
"""Claude Sonnet 4.6 through the global cross-region inference profile (Strands' own default)."""

MODEL_CHOICES = ("bedrock", "offline")

_STRANDS_DEFAULT_NAME = "Strands Agents"
"""What Strands names an ``Agent()`` given no name: naming the node says more."""


class OfflineModelError(GraphDefinitionError):
    """``GRAPH_MODEL=offline``, and an agent of the graph has a model that would go online."""


def _choice() -> str:
    return os.environ.get("GRAPH_MODEL", "bedrock").strip().lower() or "bedrock"


def offline() -> bool:
    """Whether ``GRAPH_MODEL`` says offline (the demo, the tests): no model may call a provider."""
    return _choice() == "offline"


def check_offline(graph: Graph) -> None:
    """Under ``GRAPH_MODEL=offline``, refuse ``graph`` if one of its agents has a real model.

    Every node is looked at, nested graphs and swarms included; an executor that is not a
    Strands ``Agent`` (a function node, a custom ``MultiAgentBase``) is the graph's own
    code and is left alone. An agent built elsewhere (inside a tool) is not seen.

    Raises:
        OfflineModelError: one line naming the first such agent (its name and node id) and
            what to give it.
    """
    if not offline():
        return
    for path, agent in _agents(graph, prefix=""):
        model = getattr(agent, "model", None)
        if isinstance(model, ScriptedModel):
            continue
        name = str(getattr(agent, "name", "") or "")
        named = name and name not in (path, _STRANDS_DEFAULT_NAME)
        who = f"agent {name!r} (node {path!r})" if named else f"agent {path!r}"
        raise OfflineModelError(
            f"GRAPH_MODEL=offline, but {who} has a {type(model).__name__}, which would call its provider: "
            "give it model=pick_model(offline=ScriptedModel([...])) (from graph_defs.models and graph_defs.scripted)"
        )


def _agents(executor: object, *, prefix: str) -> Iterator[tuple[str, object]]:
    """(node path, agent) for every Strands ``Agent`` under ``executor``'s nodes, depth first."""
    from strands import Agent

    nodes = getattr(executor, "nodes", None)
    if not isinstance(nodes, dict):
        return
    for node_id, node in nodes.items():
        path = f"{prefix}{node_id}"
        inner = getattr(node, "executor", None)
        if isinstance(inner, Agent):
            yield path, inner
        elif inner is not None:
            yield from _agents(inner, prefix=f"{path}/")


def pick_model(*, offline: ScriptedModel | Callable[[], ScriptedModel]) -> Model:
    """The model for one agent, as ``GRAPH_MODEL`` says.

    Args:
        offline: The scripted model (or a function making it) used when
            ``GRAPH_MODEL=offline``. A function is only called in offline mode.

    Raises:
        ValueError: ``GRAPH_MODEL`` is set to something other than ``MODEL_CHOICES``.
    """
    choice = _choice()
    if choice == "offline":
        return offline if isinstance(offline, ScriptedModel) else offline()
    if choice == "bedrock":
        from strands.models.bedrock import BedrockModel

        model_id = os.environ.get("BEDROCK_MODEL_ID", "").strip() or DEFAULT_BEDROCK_MODEL_ID
        return BedrockModel(model_id=model_id)
    allowed = ", ".join(MODEL_CHOICES)
    raise ValueError(f"GRAPH_MODEL={os.environ.get('GRAPH_MODEL')!r} is not supported; use one of: {allowed}")
