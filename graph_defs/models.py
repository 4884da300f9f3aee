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
"""

from __future__ import annotations

import os
from collections.abc import Callable

from strands.models import Model

from graph_defs.scripted import ScriptedModel

__all__ = ["DEFAULT_BEDROCK_MODEL_ID", "MODEL_CHOICES", "pick_model"]

DEFAULT_BEDROCK_MODEL_ID = "global.anthropic.claude-sonnet-4-6"
"""Claude Sonnet 4.6 through the global cross-region inference profile (Strands' own default)."""

MODEL_CHOICES = ("bedrock", "offline")


def pick_model(*, offline: ScriptedModel | Callable[[], ScriptedModel]) -> Model:
    """The model for one agent, as ``GRAPH_MODEL`` says.

    Args:
        offline: The scripted model (or a function making it) used when
            ``GRAPH_MODEL=offline``. A function is only called in offline mode.

    Raises:
        ValueError: ``GRAPH_MODEL`` is set to something other than ``MODEL_CHOICES``.
    """
    choice = os.environ.get("GRAPH_MODEL", "bedrock").strip().lower() or "bedrock"
    if choice == "offline":
        return offline if isinstance(offline, ScriptedModel) else offline()
    if choice == "bedrock":
        from strands.models.bedrock import BedrockModel

        model_id = os.environ.get("BEDROCK_MODEL_ID", "").strip() or DEFAULT_BEDROCK_MODEL_ID
        return BedrockModel(model_id=model_id)
    allowed = ", ".join(MODEL_CHOICES)
    raise ValueError(f"GRAPH_MODEL={os.environ.get('GRAPH_MODEL')!r} is not supported; use one of: {allowed}")
