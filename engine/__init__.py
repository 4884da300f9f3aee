"""The Slack-free run engine: start a graph run, decide asks exactly once, resume anywhere.

Imports neither Slack nor boto3 nor (at import time) Strands. Importing the package is
cheap: the engine itself (``RunEngine``) is loaded on first use, so the path that acks a
Slack request on a cold Lambda, which only needs the vocabulary, never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.ports import DecideResult, GraphSource, Outcome, Publisher, PublishError, UnknownGraph

if TYPE_CHECKING:
    from engine.lifecycle import RunEngine

__all__ = ["DecideResult", "GraphSource", "Outcome", "PublishError", "Publisher", "RunEngine", "UnknownGraph"]


def __getattr__(name: str) -> Any:
    if name == "RunEngine":
        from engine.lifecycle import RunEngine

        return RunEngine
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
