"""Strands' private surface: checked at import, and named nowhere else in the engine or graphs.

The engine's safety measures (Edit, HumanInTheLoop's memory, per-batch interrupt ids, the
Trust button, node-gate rejections) ride on Strands internals. These tests prove the check
passes on the pinned Strands, fails loudly and helpfully when an internal disappears, and
that no other module reaches past ``engine.strands_internals`` (where a silent default
could switch a safety measure off).
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import BeforeToolsEvent
from strands.interventions.registry import InterventionRegistry
from strands.multiagent.graph import Graph, GraphBuilder
from strands.vended_interventions.hitl import HumanInTheLoop

from engine import strands_internals
from engine.execution import StepStatus, run_pass
from engine.strands_internals import StrandsSurfaceChanged, check_surface
from graph_defs.scripted import ScriptedModel, call, say

REPO = Path(__file__).resolve().parents[2]

PRIVATE_NAMES = (
    "_interrupt_state",
    "_intervention_registry",
    "_enable_trust",
    "_classifier",
    "_requires_approval",
    "_interrupt_id",
    "_model_state",
    "_internal_state",
    "_tool_context",
)
"""Strands internals the engine uses: only ``engine/strands_internals.py`` may name them."""

PRIVATE_NAME = re.compile(rf"\b({'|'.join(PRIVATE_NAMES)})\b")
"""One of them as a name of its own (``hitl_classifier`` is fine, ``handler._classifier`` is not)."""

PRIVATE_MODULE = re.compile(r"\bstrands(\.\w+)*\._\w+|from strands(\.\w+)* import _\w+")
"""Any import from a private Strands module (``strands.types._events``, ``strands._async``...)."""


def test_the_installed_strands_has_the_expected_surface() -> None:
    check_surface()
    assert importlib.metadata.version("strands-agents") == strands_internals.EXPECTED_STRANDS_VERSION


def test_the_surface_error_is_an_import_error() -> None:
    # Raised while importing: callers that import lazily see an ordinary ImportError.
    assert issubclass(StrandsSurfaceChanged, ImportError)


def _surface_error() -> str:
    with pytest.raises(StrandsSurfaceChanged) as raised:
        check_surface()
    return str(raised.value)


def test_a_missing_class_attribute_is_named_with_the_expected_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(BeforeToolsEvent, "_interrupt_id")
    message = _surface_error()
    assert "BeforeToolsEvent._interrupt_id" in message
    assert f"strands-agents {strands_internals.EXPECTED_STRANDS_VERSION}" in message
    assert importlib.metadata.version("strands-agents") in message
    assert "engine/strands_internals.py" in message


def test_a_missing_registry_property_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(InterventionRegistry, "handlers")
    message = _surface_error()
    assert "_intervention_registry.handlers" in message
    assert "AttributeError" in message


def test_a_hitl_handler_without_its_trust_flag_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # An instance attribute renamed: getattr(h, "_enable_trust", False) would have hidden it.
    built = HumanInTheLoop.__init__

    def without_trust_flag(self: HumanInTheLoop, **kwargs: Any) -> None:
        built(self, **kwargs)
        del self._enable_trust

    monkeypatch.setattr(HumanInTheLoop, "__init__", without_trust_flag)
    assert "HumanInTheLoop()._enable_trust" in _surface_error()


def test_a_hitl_that_stops_consulting_its_decision_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # The durable-classifier guard replaces _requires_approval: it must still be what decides.
    async def always_ask(self: HumanInTheLoop, event: Any, **kwargs: Any) -> Any:
        from strands.interventions import Confirm

        return Confirm(prompt="?")

    monkeypatch.setattr(HumanInTheLoop, "before_tool_call", always_ask)
    assert "before_tool_call consulting _requires_approval" in _surface_error()


def test_every_problem_is_listed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(BeforeToolsEvent, "_interrupt_id")
    monkeypatch.setattr(Graph, "serialize_state", lambda self: {})
    message = _surface_error()
    assert "BeforeToolsEvent._interrupt_id" in message
    assert "_internal_state" in message


async def test_a_pass_on_a_changed_strands_fails_before_any_tool_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # The graph pass imports the module (so runs the check) first: nothing runs unguarded.
    ran: list[str] = []

    @tool
    def deploy(target: str) -> str:
        """Deploy.

        Args:
            target: Where to.
        """
        ran.append(target)
        return "deployed"

    model = ScriptedModel([call("deploy", target="prod"), say("done")])
    builder = GraphBuilder()
    builder.add_node(Agent(model=model, tools=[deploy], interventions=[HumanInTheLoop()], callback_handler=None), "a")
    builder.set_max_node_executions(3)
    graph = builder.build()
    monkeypatch.delitem(sys.modules, "engine.strands_internals")  # imported afresh: checked again
    monkeypatch.delattr(InterventionRegistry, "handlers")

    step = await run_pass(graph=graph, task="ship it", snapshot=None)

    assert step.status is StepStatus.FAILED
    assert step.error is not None and "StrandsSurfaceChanged" in step.error
    assert "_intervention_registry.handlers" in step.error
    assert ran == []


def _engine_and_graph_sources() -> list[Path]:
    files = sorted([*(REPO / "engine").rglob("*.py"), *(REPO / "graph_defs").rglob("*.py")])
    return [f for f in files if f != REPO / "engine" / "strands_internals.py"]


def test_no_other_engine_or_graph_module_names_strands_internals() -> None:
    sources = _engine_and_graph_sources()
    assert len(sources) > 10  # the walk found the packages
    offences = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if PRIVATE_NAME.search(line) or PRIVATE_MODULE.search(line)
    ]
    assert not offences, "use engine.strands_internals instead:\n" + "\n".join(offences)


def test_the_patterns_catch_what_they_should() -> None:
    assert PRIVATE_NAME.search("for h in agent._intervention_registry.handlers:")
    assert PRIVATE_NAME.search('getattr(h, "_enable_trust", False)')
    assert PRIVATE_NAME.search("BeforeToolsEvent._interrupt_id = scoped_id")
    assert not PRIVATE_NAME.search("if hitl_classifier(handler) is None:")
    assert PRIVATE_MODULE.search("from strands.types._events import ToolStreamEvent")
    assert PRIVATE_MODULE.search("from strands.types import _events")
    assert not PRIVATE_MODULE.search("from strands.types.events import ToolResultEvent")
    assert not PRIVATE_MODULE.search("from graph_defs.examples._approval import read_answer")


def test_unrecorded_spans_do_not_serialize_the_conversation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strands would JSON-encode the whole conversation for a span nobody records; the
    patch skips that, and a recording span still gets its events."""
    import strands.telemetry.tracer as tracer_module

    from engine.strands_internals import skip_unrecorded_message_events

    skip_unrecorded_message_events()
    skip_unrecorded_message_events()  # idempotent: applied once per process
    encoded: list[object] = []
    monkeypatch.setattr(tracer_module, "serialize", lambda value: encoded.append(value) or "[]")
    tracer = tracer_module.Tracer()
    messages = [{"role": "user", "content": [{"text": "x" * 1000}]}]

    class Span:
        def __init__(self, recording: bool) -> None:
            self.recording, self.events = recording, []

        def is_recording(self) -> bool:
            return self.recording

        def add_event(self, name: str, attributes: object = None) -> None:
            self.events.append(name)

    tracer._add_event_messages(Span(False), messages)  # type: ignore[arg-type]
    assert encoded == []
    recording = Span(True)
    tracer._add_event_messages(recording, messages)  # type: ignore[arg-type]
    assert encoded, "a recording span still gets the conversation"
