"""Traces: a span per graph pass and a span per ask, through OpenTelemetry (Strands' own).

Strands emits its graph, agent, model and tool spans through OpenTelemetry's global tracer
provider (``strands.telemetry.StrandsTelemetry`` sets one up; so do ``opentelemetry-instrument``
and the ADOT Lambda layer). The engine adds two spans of its own to the same provider:

* ``approval-bot pass``: opened around each graph pass, so Strands' spans are its
  children. It links to the ask spans whose answers it sends.
* ``approval-bot ask``: one per ask, from raised to decided. An ask waits across processes
  (for hours, with a Lambda invocation per click), so its span cannot stay open: it is
  emitted when the ask finishes (a landed save that hands its answer to a pass or closes
  it), with the record's times: from ``created_at`` to the decision's time. Its parent is
  the pass that raised it, whose context the ask keeps (``Ask.trace``); it links to the
  pass that used its answer.

The resuming pass starts before the ask span exists, so it links to a context it can
compute: the raising pass's trace id and a span id derived from the run id and the ask key
(``ask_span_id``), which is the id the ask span is then emitted with (on OpenTelemetry's
SDK, whose tracers take their span ids from a replaceable ``id_generator``). A crash
between a save and the emission loses that span, never doubles it under another id.

Nothing here runs on the path that acks. OpenTelemetry is imported only around a pass
(Strands imports it there anyway) and for asks that carry a trace. With no tracer provider
configured (the default), no span is opened and asks record nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.records import Ask, AskStatus, Decision, Run, Verdict

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanContext, Tracer

logger = logging.getLogger(__name__)

SCOPE = "approval_bot"
PASS_SPAN = "approval-bot pass"
ASK_SPAN = "approval-bot ask"
OPEN = (AskStatus.PENDING, AskStatus.DECIDED)
FINISHED = (AskStatus.CONSUMED, AskStatus.OBSOLETE)

# The span id the next span started on this thread or task gets (``_ChosenIds``).
_CHOSEN: contextvars.ContextVar[int | None] = contextvars.ContextVar("approval_bot_span_id", default=None)


@dataclass(kw_only=True)
class PassTrace:
    """The span of one pass, while it runs: ``context`` is what its new asks keep."""

    span: Span | None = None
    context: str | None = None
    links: list[Any] = field(default_factory=list)

    def ended(self, status: str) -> None:
        """Say how the pass ended (``StepStatus``) on its span."""
        if self.span is not None:
            self.span.set_attribute("approval_bot.pass.status", status)


def ask_span_id(run_id: str, key: str) -> int:
    """The span id of an ask's span: the same in every process, never 0 (invalid)."""
    digest = hashlib.sha256(f"{run_id}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def outcome_of(decision: Decision) -> str:
    """The decision in the words of the metrics (``Decisions``' outcome dimension)."""
    if decision.expired:
        return "expired"
    approved = decision.verdict in (Verdict.APPROVE, Verdict.TRUST, Verdict.RETRY)
    if decision.policy is not None and decision.verdict in (Verdict.APPROVE, Verdict.REJECT):
        return "auto_approved" if approved else "auto_rejected"
    words = {Verdict.REJECT: "rejected", Verdict.REPLY: "replied", Verdict.EDIT: "edited"}
    return "approved" if approved else words.get(decision.verdict, decision.verdict.value)


def decider_of(decision: Decision) -> str:
    """Who decided: a user id, or the bot itself ("expiry", "rule")."""
    if decision.user:
        return decision.user
    return "expiry" if decision.expired else "rule"


@contextlib.contextmanager
def pass_span(*, run: Run, answering: Iterable[Ask]) -> Iterator[PassTrace]:
    """The span a pass runs under (current, so Strands' spans are its children), linked
    to the spans of the asks whose answers it sends. Nothing when tracing is off."""
    tracer = _tracer()
    if tracer is None:
        yield PassTrace()
        return
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    try:
        links = [trace.Link(c) for a in answering if (c := _ask_context(run.run_id, a)) is not None]
        attributes = {"approval_bot.run_id": run.run_id, "approval_bot.graph": run.graph}
        span = tracer.start_span(PASS_SPAN, attributes=attributes, links=links)
        context = span.get_span_context()
        traced = context.is_valid and context.trace_flags.sampled
    except Exception:  # a span processor's or exporter's bug: the pass runs untraced
        logger.warning("run %s: the pass span could not be started", run.run_id, exc_info=True)
        yield PassTrace()
        return
    # Not ``start_as_current_span``: its end (the processors' ``on_end``) comes after the
    # graph ran its side effects, and an error there must never lose the pass's result.
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield PassTrace(span=span, context=_text(context) if traced else None)
    except Exception as error:
        with contextlib.suppress(Exception):
            span.record_exception(error)
            span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))
        raise
    finally:
        otel_context.detach(token)
        try:
            span.end()
        except Exception:
            logger.warning("run %s: the pass span could not be ended", run.run_id, exc_info=True)


def asks_finished(before: Run, after: Run, *, by: PassTrace | None = None) -> None:
    """Emit the span of each traced ask that was open in ``before`` and is finished in
    ``after`` (a landed save): linked to the pass ``by`` when that pass used its answer."""
    ended = [
        (ask, trace)
        for key, ask in after.asks.items()
        if ask.status in FINISHED
        and (was := before.asks.get(key)) is not None
        and was.status in OPEN
        and (trace := was.trace) is not None
    ]
    if not ended:
        return  # the common case when tracing is off: OpenTelemetry is not even imported
    tracer = _tracer()
    if tracer is None:
        return
    resumed = by.span if by is not None else None
    for ask, trace in ended:
        try:
            used = resumed if ask.status is AskStatus.CONSUMED else None
            _emit(tracer, run=after, ask=ask, trace=trace, resumed=used)
        except Exception:  # a trace is never worth a run: the save landed, the work goes on
            logger.warning("run %s: the span of ask %s could not be emitted", after.run_id, ask.key, exc_info=True)


def _emit(tracer: Tracer, *, run: Run, ask: Ask, trace: str, resumed: Span | None) -> None:
    from opentelemetry import trace as api

    parent = _context(trace)
    if parent is None:
        return
    decision = ask.decision
    attributes: dict[str, str] = {
        "approval_bot.run_id": run.run_id,
        "approval_bot.graph": run.graph,
        "approval_bot.ask.key": ask.key,
        "approval_bot.ask.name": ask.name,
        "approval_bot.ask.outcome": outcome_of(decision) if decision is not None else "closed",
    }
    if ask.rules.label is not None:
        attributes["approval_bot.ask.rule"] = ask.rules.label
    if decision is not None:
        attributes["approval_bot.ask.decider"] = decider_of(decision)
    if ask.closed is not None:
        attributes["approval_bot.ask.closed"] = ask.closed.value
    links = [api.Link(resumed.get_span_context())] if resumed is not None else []
    end = decision.at if decision is not None else run.updated_at
    token = _CHOSEN.set(ask_span_id(run.run_id, ask.key))
    try:
        span = tracer.start_span(
            ASK_SPAN,
            context=api.set_span_in_context(api.NonRecordingSpan(parent)),
            attributes=attributes,
            links=links,
            start_time=_nanos(ask.created_at),
        )
    finally:
        _CHOSEN.reset(token)
    span.end(end_time=_nanos(max(end, ask.created_at)))


def _tracer() -> Tracer | None:
    """The engine's tracer on the global provider, or None when none is configured (or a
    provider fails: a pass is never stopped by its trace)."""
    try:
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
        tracer = provider.get_tracer(SCOPE)
        ids = getattr(tracer, "id_generator", None)  # the SDK's; other providers keep theirs
        if ids is not None and not isinstance(ids, _ChosenIds):
            tracer.id_generator = _ChosenIds(ids)  # type: ignore[attr-defined]
    except Exception:
        logger.warning("no tracer: the engine's spans are left out", exc_info=True)
        return None
    return tracer


class _ChosenIds:
    """The SDK's id generator for the engine's own tracer, giving an ask span its chosen id."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def generate_span_id(self) -> int:
        chosen = _CHOSEN.get()
        return chosen if chosen is not None else int(self._inner.generate_span_id())

    def generate_trace_id(self) -> int:
        return int(self._inner.generate_trace_id())

    def is_trace_id_random(self) -> bool:
        return bool(getattr(self._inner, "is_trace_id_random", lambda: False)())


def _ask_context(run_id: str, ask: Ask) -> SpanContext | None:
    """The context an ask's span has (or will have): under its raising pass's trace."""
    raised = _context(ask.trace) if ask.trace is not None else None
    if raised is None:
        return None
    from opentelemetry import trace

    span_id = ask_span_id(run_id, ask.key)
    return trace.SpanContext(raised.trace_id, span_id, is_remote=True, trace_flags=raised.trace_flags)


def _context(text: str) -> SpanContext | None:
    """The span context written by ``_text``, or None for anything else (never trusted)."""
    from opentelemetry import trace

    trace_hex, _, span_hex = text.partition("-")
    try:
        trace_id, span_id = int(trace_hex, 16), int(span_hex, 16)
    except ValueError:
        return None
    sampled = trace.TraceFlags(trace.TraceFlags.SAMPLED)
    context = trace.SpanContext(trace_id, span_id, is_remote=True, trace_flags=sampled)
    return context if context.is_valid else None


def _text(context: SpanContext) -> str:
    from opentelemetry import trace

    return f"{trace.format_trace_id(context.trace_id)}-{trace.format_span_id(context.span_id)}"


def _nanos(seconds: float) -> int:
    return int(seconds * 1e9)
