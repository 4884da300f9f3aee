"""``GRAPH_MODEL=offline`` refuses, at build time, any agent whose model would call a provider."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from strands import Agent
from strands.multiagent.graph import Graph, GraphBuilder

from graph_defs import graph_def, read_answer
from graph_defs.models import OfflineModelError, check_offline
from graph_defs.registry import build_graph, unregister
from graph_defs.scripted import ScriptedModel, say


def _scripted(name: str) -> Agent:
    return Agent(name=name, model=ScriptedModel([say("ok")]), callback_handler=None)


def _graph(*agents: tuple[str, Agent | Graph]) -> Graph:
    builder = GraphBuilder()
    for node_id, executor in agents:
        builder.add_node(executor, node_id)
    return builder.build()


@pytest.fixture
def registered() -> Iterator[None]:
    @graph_def("offline-guard-plain")
    def plain() -> Graph:
        return _graph(("plan", _scripted("planner")), ("write", Agent(callback_handler=None)))

    yield
    unregister("offline-guard-plain")


def test_a_plain_agent_fails_the_build_offline_naming_its_node(
    registered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    with pytest.raises(OfflineModelError) as refused:
        build_graph("offline-guard-plain")
    line = str(refused.value)
    assert "\n" not in line
    assert "agent 'write' has a BedrockModel" in line  # unnamed: Strands' default name is not shown
    assert "model=pick_model(offline=ScriptedModel([...]))" in line


def test_the_same_graph_builds_when_bedrock_is_wanted(registered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPH_MODEL", "bedrock")
    assert isinstance(build_graph("offline-guard-plain"), Graph)


def test_a_nested_graph_is_looked_into(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    inner = _graph(("check", Agent(name="checker", callback_handler=None)))
    outer = _graph(("plan", _scripted("planner")), ("ops", inner))
    with pytest.raises(OfflineModelError, match=r"agent 'checker' \(node 'ops/check'\)"):
        check_offline(outer)
    check_offline(_graph(("plan", _scripted("planner")), ("ops", _graph(("check", _scripted("checker"))))))


def test_read_answer_is_public() -> None:
    assert read_answer({"decision": "approve", "user": "U1"}).decision == "approve"
    assert read_answer("maybe").decision == "reject"  # fails closed
