"""A meter that records what is counted, installed as the process's meter for one test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine import metrics
from engine.metrics import Metric


class RecordingMeter:
    def __init__(self) -> None:
        self.added: list[tuple[str, float, dict[str, str]]] = []

    def add(self, metric: Metric, value: float, **dimensions: str) -> None:
        self.added.append((metric.name, value, dimensions))

    def flush(self) -> None:
        return None

    def of(self, name: str, **dimensions: str) -> list[float]:
        return [v for n, v, d in self.added if n == name and d == dimensions]

    def names(self) -> set[str]:
        return {n for n, _, _ in self.added}


@pytest.fixture
def meter() -> Iterator[RecordingMeter]:
    recording = RecordingMeter()
    previous = metrics.install(recording)
    yield recording
    metrics.install(previous)
