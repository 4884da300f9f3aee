"""The Slack-free run engine: start a graph run, decide asks exactly once, resume anywhere.

Imports neither Slack nor boto3 nor (at import time) Strands, so the path that acks a
Slack request can import it for free.
"""

from engine.lifecycle import DecideResult, RunEngine, UnknownGraph
from engine.ports import GraphSource, Publisher, PublishError

__all__ = ["DecideResult", "GraphSource", "PublishError", "Publisher", "RunEngine", "UnknownGraph"]
