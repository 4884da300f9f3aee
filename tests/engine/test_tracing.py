"""Traces through the engine: a span per pass (Strands' spans under it) and a span per ask,
from raised to decided, linked to the pass that raised it and the pass that used its answer.

The real SQLite store and real graphs; spans go to an in-memory exporter on the global
tracer provider (Strands' and the engine's alike), switched on for these tests only.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision as Sampled
from opentelemetry.sdk.trace.sampling import Sampler, SamplingResult

from engine import RunEngine
from engine.records import Decision, Run, RunStatus, Verdict
from engine.tracing import ASK_SPAN, PASS_SPAN, ask_span_id
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource


class _Switch(Sampler):
    """Samples everything while on; off, every span is a no-op (the rest of the suite)."""

    on = False

    def should_sample(
        self,
        parent_context: Any,
        trace_id: int,
        name: str,
        kind: Any = None,
        attributes: Any = None,
        links: Any = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        return SamplingResult(Sampled.RECORD_AND_SAMPLE, attributes) if self.on else SamplingResult(Sampled.DROP)

    def get_description(self) -> str:
        return "switch"


_SWITCH = _Switch()
_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):  # once per process: it is global
        provider = TracerProvider(sampler=_SWITCH)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    _SWITCH.on = True
    try:
        yield _EXPORTER
    finally:
        _SWITCH.on = False
        _EXPORTER.clear()


def _named(found: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return sorted((s for s in found if s.name == name), key=lambda s: s.start_time or 0)


def _nanos(seconds: float) -> int:
    return int(seconds * 1e9)


def _hex(span: ReadableSpan) -> str:
    assert span.context is not None
    return f"{trace.format_trace_id(span.context.trace_id)}-{trace.format_span_id(span.context.span_id)}"


def _linked(span: ReadableSpan) -> set[tuple[int, int]]:
    return {(link.context.trace_id, link.context.span_id) for link in span.links}


def _ids(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def _one_ask_traced(found: Sequence[ReadableSpan], run: Run) -> tuple[ReadableSpan, ReadableSpan, ReadableSpan]:
    """The raising pass, the ask and the resuming pass of ``run``'s one ask, checked linked."""
    raising, resuming = _named(found, PASS_SPAN)
    (ask_span,) = _named(found, ASK_SPAN)
    (ask,) = run.asks.values()
    for span in (raising, resuming):
        assert span.attributes is not None
        named = (span.attributes["approval_bot.run_id"], span.attributes["approval_bot.graph"])
        assert named == (run.run_id, run.graph)
    # Under the pass that raised it, with the id the resuming pass computed before it existed.
    assert ask_span.parent is not None and ask_span.parent.span_id == _ids(raising)[1]
    assert _ids(ask_span) == (_ids(raising)[0], ask_span_id(run.run_id, ask.key))
    assert _ids(ask_span) in _linked(resuming)
    assert _ids(resuming) in _linked(ask_span)
    assert ask_span.start_time == _nanos(ask.created_at)
    assert ask.decision is not None and ask_span.end_time == _nanos(ask.decision.at)
    # Strands' spans (the graph, its agents and tools) are the passes' children.
    strands = [s for s in found if s.name not in (PASS_SPAN, ASK_SPAN)]
    children_of = {s.parent.span_id for s in strands if s.parent is not None}
    assert _ids(raising)[1] in children_of and _ids(resuming)[1] in children_of
    assert {s.context.trace_id for s in strands if s.context} <= {_ids(raising)[0], _ids(resuming)[0]}
    assert any(s.name.startswith("execute_tool") for s in strands)
    return raising, ask_span, resuming


async def test_a_persons_approval_is_one_ask_span_between_the_two_passes(
    spans: InMemorySpanExporter, store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
    (waiting,) = run.pending_asks()
    (raising,) = _named(spans.get_finished_spans(), PASS_SPAN)
    assert waiting.trace == _hex(raising), "the ask keeps the context of the pass that raised it"
    assert _named(spans.get_finished_spans(), ASK_SPAN) == [], "no span while it waits"

    approve = Decision(verdict=Verdict.APPROVE, user="U0ALICE", at=time.time())
    later = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)  # another process
    result = await later.decide(run_id=run.run_id, ask_key=waiting.key, decision=approve, claim=True)
    ended = await later.follow_up(result)
    assert ended is not None and ended.status is RunStatus.COMPLETED
    assert ended.asks[waiting.key].trace is None, "a finished ask's record lets its trace go"

    _, ask_span, resuming = _one_ask_traced(spans.get_finished_spans(), ended)
    assert ask_span.attributes == {
        "approval_bot.run_id": run.run_id,
        "approval_bot.graph": "guarded-write",
        "approval_bot.ask.key": waiting.key,
        "approval_bot.ask.name": "approve_write_writer",
        "approval_bot.ask.outcome": "approved",
        "approval_bot.ask.decider": "U0ALICE",
    }
    assert resuming.attributes is not None and resuming.attributes["approval_bot.pass.status"] == "completed"


async def test_a_rules_decision_and_an_expiry_get_their_spans_too(
    spans: InMemorySpanExporter, store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    auto = await engine.start(graph="payout-rules", task="5", user="U0REQ", channel="C1")
    assert auto.status is RunStatus.COMPLETED
    _, ask_span, _ = _one_ask_traced(spans.get_finished_spans(), auto)
    assert ask_span.attributes is not None
    said = {k: ask_span.attributes.get(f"approval_bot.ask.{k}") for k in ("decider", "outcome", "rule")}
    assert said == {"decider": "rule", "outcome": "auto_approved", "rule": "small"}

    spans.clear()
    waits = await engine.start(graph="guarded-soon-expiring", task="t", user="U0REQ", channel="C1")
    sweeper = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    sweeper._clock = lambda: time.time() + 60  # type: ignore[method-assign]
    (expired,) = await sweeper.sweep()
    assert expired.run_id == waits.run_id and expired.status is RunStatus.COMPLETED
    _, ask_span, _ = _one_ask_traced(spans.get_finished_spans(), expired)
    assert ask_span.attributes is not None
    said = {k: ask_span.attributes.get(f"approval_bot.ask.{k}") for k in ("decider", "outcome")}
    assert said == {"decider": "expiry", "outcome": "expired"}


async def test_with_no_tracer_provider_asks_record_nothing(
    store: SqliteRunStore, publisher: RecordingPublisher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)  # OpenTelemetry's default
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
    assert [a.trace for a in run.asks.values()] == [None]


def test_the_ack_path_imports_no_opentelemetry() -> None:
    code = (
        "import sys, engine.lifecycle, engine.tracing, bot.app, bot.lambda_handler;"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


class _Broken(SpanProcessor):
    """A span processor that raises for the engine's pass span (an exporter's bug, say)."""

    on = False

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.on and span.name == PASS_SPAN:
            raise RuntimeError("the processor broke at the start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.on and span.name == PASS_SPAN:
            raise RuntimeError("the processor broke at the end")


_BROKEN = _Broken()


async def test_a_span_processor_that_raises_fails_no_pass(
    spans: InMemorySpanExporter, store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    """The pass span ends after the graph ran its side effects: a tracer that raises there
    must not lose the pass (it would be taken over and asked again), nor at its start."""
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    if _BROKEN not in provider._active_span_processor._span_processors:  # type: ignore[attr-defined]
        provider.add_span_processor(_BROKEN)
    _BROKEN.on = True
    try:
        engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
        run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
        (waiting,) = run.pending_asks()
        approve = Decision(verdict=Verdict.APPROVE, user="U0ALICE", at=time.time())
        result = await engine.decide(run_id=run.run_id, ask_key=waiting.key, decision=approve, claim=True)
        ended = await engine.follow_up(result)
    finally:
        _BROKEN.on = False
    assert ended is not None and ended.status is RunStatus.COMPLETED
