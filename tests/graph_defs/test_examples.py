"""The example graphs, run offline for real: interrupt, save, restore in a fresh graph, resume.

Every resume goes through ``serialize_state()`` → JSON → a new graph from the registry →
``deserialize_state()``, the way the bot resumes a run in another process.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from strands.models.bedrock import BedrockModel
from strands.multiagent.base import Status
from strands.multiagent.graph import Graph, GraphResult
from strands.types.interrupt import InterruptResponseContent

from graph_defs import build_graph, load_graph_modules
from graph_defs.examples import cleanup, deploy, release_check
from graph_defs.scripted import ScriptedModel

EXAMPLES = ["deploy", "release-check", "cleanup"]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    load_graph_modules()
    deploy.DEPLOYMENTS.clear()
    cleanup.DELETED.clear()
    yield
    deploy.DEPLOYMENTS.clear()
    cleanup.DELETED.clear()


def restore(name: str, graph: Graph) -> Graph:
    """What another process does: JSON snapshot in, fresh graph from code, state restored."""
    snapshot = json.loads(json.dumps(graph.serialize_state()))
    fresh = build_graph(name)
    fresh.deserialize_state(snapshot)
    return fresh


def answer(decision: str, text: str | None = None, user: str = "U1") -> dict[str, Any]:
    return {"decision": decision, "text": text, "user": user}


def resume(graph: Graph, responses: dict[str, Any]) -> GraphResult:
    contents: list[InterruptResponseContent] = [
        {"interruptResponse": {"interruptId": i, "response": r}} for i, r in responses.items()
    ]
    return graph(contents)


def output(result: GraphResult) -> str:
    """The run's output as the bot posts it: the last node's result."""
    last = result.execution_order[-1].node_id
    return str(result.results[last].result).strip()


def start(name: str, task: str) -> tuple[Graph, GraphResult]:
    graph = build_graph(name)
    result = graph(task)
    assert result.status == Status.INTERRUPTED
    return graph, result


# --- deploy -----------------------------------------------------------------------------


def test_deploy_asks_with_the_parsed_target_and_plan() -> None:
    _, result = start("deploy", "deploy billing 1.2.3 to staging")

    [interrupt] = result.interrupts
    assert interrupt.name == "approve_deploy"
    reason = interrupt.reason
    assert {k: reason[k] for k in ("service", "version", "environment")} == {
        "service": "billing",
        "version": "1.2.3",
        "environment": "staging",
    }
    assert "billing 1.2.3" in reason["plan"]
    assert deploy.DEPLOYMENTS == []


def test_deploy_approved_in_another_process_deploys_and_reports() -> None:
    graph, result = start("deploy", "deploy billing 1.2.3 to staging")

    done = resume(restore("deploy", graph), {result.interrupts[0].id: answer("approve", user="U1")})

    assert done.status == Status.COMPLETED
    assert done.interrupts == []
    assert [n.node_id for n in done.execution_order] == ["planner", "deployer", "reporter"]
    assert deploy.DEPLOYMENTS == [
        {"service": "billing", "version": "1.2.3", "environment": "staging", "instructions": None}
    ]
    text = output(done)
    assert text.startswith("Deploy report for billing 1.2.3 (staging)")
    assert "Deployed billing 1.2.3 to staging" in text and "by U1" in text


@pytest.mark.parametrize(
    ("text", "shown"), [("not during the freeze", "not during the freeze"), (None, "no reason given")]
)
def test_deploy_rejected_does_not_deploy_and_says_so(text: str | None, shown: str) -> None:
    graph, result = start("deploy", "please deploy search@v2.0.1 to prod")
    assert result.interrupts[0].reason["version"] == "v2.0.1"
    assert result.interrupts[0].reason["environment"] == "production"

    done = resume(restore("deploy", graph), {result.interrupts[0].id: answer("reject", text, user="U2")})

    assert done.status == Status.COMPLETED
    assert deploy.DEPLOYMENTS == []
    deployer = str(done.results["deployer"].result)
    assert deployer.startswith("Deployment cancelled.")
    assert f"Deployment rejected by U2: {shown}" in output(done)


def test_deploy_reply_text_reaches_the_result() -> None:
    graph, result = start("deploy", "deploy billing 1.2.3")

    reply = answer("reply", "roll out to 10% first, then wait for the dashboard", user="U3")
    done = resume(restore("deploy", graph), {result.interrupts[0].id: reply})

    assert done.status == Status.COMPLETED
    assert deploy.DEPLOYMENTS[0]["instructions"] == "roll out to 10% first, then wait for the dashboard"
    assert deploy.DEPLOYMENTS[0]["environment"] == "production"
    assert "operator instructions: roll out to 10% first, then wait for the dashboard" in output(done)
    assert "by U3" in output(done)


def test_deploy_fails_closed_on_an_unreadable_answer() -> None:
    graph, result = start("deploy", "deploy billing 1.2.3")

    done = resume(restore("deploy", graph), {result.interrupts[0].id: "maybe later"})

    assert deploy.DEPLOYMENTS == []
    assert "Deployment rejected" in output(done)


@pytest.mark.parametrize(
    ("task", "target"),
    [
        ("billing 1.2.3", ("billing", "1.2.3", "production")),
        ("deploy Billing-API version 3.4 to stage", ("billing-api", "3.4", "staging")),
        ("ship payments:10.0.0-rc.1 on dev", ("payments", "10.0.0-rc.1", "dev")),
        ("please deploy the search service", ("search", "latest", "production")),
        ("", ("service", "latest", "production")),
    ],
)
def test_parse_target(task: str, target: tuple[str, str, str]) -> None:
    assert deploy.parse_target(task) == target


# --- release-check ----------------------------------------------------------------------


def test_release_check_raises_two_parallel_interrupts() -> None:
    _, result = start("release-check", "release-check payments 2.4.0")

    by_name = {i.name: i for i in result.interrupts}
    assert set(by_name) == {"security_signoff", "qa_signoff"}
    assert by_name["security_signoff"].id != by_name["qa_signoff"].id
    assert by_name["security_signoff"].reason["release"] == "payments 2.4.0"
    assert by_name["security_signoff"].reason["check"] == "security"
    assert by_name["qa_signoff"].reason["check"] == "qa"
    assert "412 regression tests green" in by_name["qa_signoff"].reason["tests"]
    assert "summary" not in result.results


def test_release_check_answers_can_come_one_at_a_time() -> None:
    graph, result = start("release-check", "payments 2.4.0")
    ids = {i.name: i.id for i in result.interrupts}

    graph = restore("release-check", graph)
    partial = resume(graph, {ids["qa_signoff"]: answer("approve", user="UQA")})

    # The unanswered interrupt comes back with the same id; the answered one is done.
    assert partial.status == Status.INTERRUPTED
    assert [(i.name, i.id) for i in partial.interrupts] == [("security_signoff", ids["security_signoff"])]

    done = resume(restore("release-check", graph), {ids["security_signoff"]: answer("approve", user="USEC")})

    assert done.status == Status.COMPLETED
    assert done.execution_order[-1].node_id == "summary"
    text = output(done)
    assert text.startswith("Release payments 2.4.0: GO.")
    assert "Security sign-off given by USEC" in text and "QA sign-off given by UQA" in text


def test_release_check_answered_together_with_a_refusal_is_no_go() -> None:
    graph, result = start("release-check", "payments 2.4.0")
    ids = {i.name: i.id for i in result.interrupts}

    done = resume(
        restore("release-check", graph),
        {
            ids["security_signoff"]: answer("reject", "CVE-2025-1234 is still open", user="USEC"),
            ids["qa_signoff"]: answer("reply", "ok, flaky tests tracked in QA-77", user="UQA"),
        },
    )

    assert done.status == Status.COMPLETED
    text = output(done)
    assert text.startswith("Release payments 2.4.0: NO-GO.")
    assert "REFUSED by USEC: CVE-2025-1234 is still open" in text
    assert "with a note: ok, flaky tests tracked in QA-77" in text


# --- cleanup ----------------------------------------------------------------------------


def test_cleanup_lists_freely_and_asks_before_deleting() -> None:
    _, result = start("cleanup", "clean up preview environments older than 14 days")

    [interrupt] = result.interrupts
    assert interrupt.name == "strands:human-in-the-loop"
    assert 'Approve "delete_resources"' in interrupt.reason
    assert "preview-env-1842" in interrupt.reason and "preview-env-1907" in interrupt.reason
    assert "preview-env-1990" not in interrupt.reason  # too young: list_resources really ran
    assert cleanup.DELETED == []


def test_cleanup_approved_with_yes_deletes() -> None:
    graph, result = start("cleanup", "clean up preview environments older than 14 days")

    done = resume(restore("cleanup", graph), {result.interrupts[0].id: "yes"})

    assert done.status == Status.COMPLETED
    assert cleanup.DELETED == ["preview-env-1842", "preview-env-1907"]
    assert output(done) == "Cleanup done. Deleted 2 resource(s): preview-env-1842, preview-env-1907."


@pytest.mark.parametrize("denial", ["no", answer("approve")])
def test_cleanup_denied_deletes_nothing(denial: Any) -> None:
    # HumanInTheLoop only understands "yes"/True: even the bot's approve dict is a denial,
    # which is why the bot must translate decisions for this interrupt.
    graph, result = start("cleanup", "clean up snapshots")

    done = resume(restore("cleanup", graph), {result.interrupts[0].id: denial})

    assert done.status == Status.COMPLETED
    assert cleanup.DELETED == []
    assert output(done).startswith("Cleanup cancelled: deletion was not approved, nothing was deleted.")
    assert "CONFIRMATION_FAILED" not in output(done), "no Strands internals in what people read"


# --- all examples -----------------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_are_bounded_and_rebuild_identically(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first, second = build_graph(name), build_graph(name)

    assert first.max_node_executions is not None
    assert first.execution_timeout is not None
    assert sorted(first.nodes) == sorted(second.nodes)
    for node_id, node in first.nodes.items():
        other = second.nodes[node_id].executor
        assert sorted(node.executor.tool_names) == sorted(other.tool_names)  # type: ignore[union-attr]
        assert isinstance(node.executor.model, ScriptedModel)  # type: ignore[union-attr]
        assert node.executor is not other


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_use_bedrock_by_default(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPH_MODEL")
    monkeypatch.setenv("AWS_REGION", "us-east-1")

    graph = build_graph(name)

    assert all(isinstance(n.executor.model, BedrockModel) for n in graph.nodes.values())  # type: ignore[union-attr]


def test_example_modules_name_their_interrupts() -> None:
    assert deploy.INTERRUPT_NAME == "approve_deploy"
    assert (release_check.SECURITY_INTERRUPT, release_check.QA_INTERRUPT) == (
        "security_signoff",
        "qa_signoff",
    )
    assert cleanup.INTERRUPT_NAME == "strands:human-in-the-loop"
