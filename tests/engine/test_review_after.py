"""``review_after`` through the real engine: SQLite store, a new engine (process) per step.

The ``incident`` graph wraps ``query_logs`` with ``review_after``. Each ``make_engine()``
stands for another process: its graphs are built fresh and its state comes only from
the store, so the stored tool result must travel in the snapshot. ``incident.QUERIES``
counts the real queries, which must not grow on a resume, only on a Retry.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry
from strands.multiagent.graph import Graph, GraphBuilder

from engine.records import AskStatus, Decision, Run, RunStatus, Verdict
from graph_defs import graph_def, review_after
from graph_defs.examples import incident
from graph_defs.scripted import ScriptedModel, call, latest_tool_result_text, say
from tests.engine.conftest import RecordingPublisher

TASK = "billing errors since the deploy, last 60 minutes"
FETCHES: list[str] = []
"""Real runs of ``fetch`` below."""


@pytest.fixture(autouse=True)
def no_queries() -> None:
    incident.QUERIES.clear()
    FETCHES.clear()


@tool
def fetch(q: str) -> str:
    """Fail once, then return data a person must see first."""
    FETCHES.append(q)
    if len(FETCHES) == 1:
        raise RuntimeError("transient")
    return f"customer data #{len(FETCHES)}"


class RetryErrorsOnce(HookProvider):
    """Strands' own retry: an AfterToolCallEvent hook runs a failed tool use again, once."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self.after)

    def after(self, event: AfterToolCallEvent) -> None:
        if event.result["status"] == "error" and len(FETCHES) < 2:
            event.retry = True


@graph_def("review-after-retry-hook", description="review_after with an AfterToolCallEvent hook that retries")
def retry_hook_graph() -> Graph:
    agent = Agent(
        name="fetcher",
        model=ScriptedModel([call("fetch", q="x"), lambda m: say("agent saw: " + latest_tool_result_text(m))]),
        tools=[review_after(fetch)],
        hooks=[RetryErrorsOnce()],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "fetcher")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(60)
    return builder.build()


def decision(verdict: Verdict, text: str | None = None, user: str = "U1") -> Decision:
    return Decision(verdict=verdict, user=user, at=time.time(), text=text)


async def decide_and_resume(make_engine, run: Run, key: str, made: Decision) -> Run:  # type: ignore[no-untyped-def]
    decided = await make_engine().decide(run_id=run.run_id, ask_key=key, decision=made)
    assert decided.accepted
    resumed = await make_engine().resume(run.run_id, known=decided.run)
    assert resumed is not None
    return resumed  # type: ignore[no-any-return]


async def test_the_ask_offers_retry_and_shows_the_result(make_engine, store, publisher: RecordingPublisher) -> None:
    run = await make_engine().start(graph="incident", task=TASK, user="U0", channel="C1")

    assert run.status is RunStatus.WAITING
    (ask,) = run.pending_asks()
    assert ask.name == "review:query_logs:1" and ask.node_id == "investigator"
    assert ask.verdicts == (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.RETRY)
    assert ask.reason["status"] == "success" and ask.reason["attempt"] == 1
    assert ask.reason["result"].startswith("query #1: billing, last 60 minutes")
    assert incident.QUERIES == [{"service": "billing", "minutes": 60}]
    assert publisher.of("card") == [("card", run.run_id, ask.key)]


async def test_approve_in_another_process_completes_without_querying_again(make_engine, store) -> None:
    run = await make_engine().start(graph="incident", task=TASK, user="U0", channel="C1")
    (ask,) = run.pending_asks()

    final = await decide_and_resume(make_engine, run, ask.key, decision(Verdict.APPROVE))

    assert final.status is RunStatus.COMPLETED
    assert final.output is not None and final.output.startswith("Incident report for billing: Findings: 2 error")
    assert final.asks[ask.key].status is AskStatus.CONSUMED
    assert len(incident.QUERIES) == 1


async def test_reject_keeps_the_logs_from_the_agent(make_engine) -> None:
    run = await make_engine().start(graph="incident", task=TASK, user="U0", channel="C1")
    (ask,) = run.pending_asks()

    final = await decide_and_resume(make_engine, run, ask.key, decision(Verdict.REJECT, "has PII", "U9"))

    assert final.status is RunStatus.COMPLETED and final.output is not None
    assert "Rejected by U9: has PII" in final.output and "ERROR" not in final.output
    assert len(incident.QUERIES) == 1


async def test_reply_passes_the_reviewers_note_along(make_engine) -> None:
    run = await make_engine().start(graph="incident", task=TASK, user="U0", channel="C1")
    (ask,) = run.pending_asks()

    final = await decide_and_resume(make_engine, run, ask.key, decision(Verdict.REPLY, "502s are the LB drain", "U2"))

    assert final.status is RunStatus.COMPLETED and final.output is not None
    assert "Reviewer U2 says: 502s are the LB drain" in final.output
    assert len(incident.QUERIES) == 1


async def test_retry_asks_again_on_a_new_card_and_runs_the_tool_exactly_once_more(
    make_engine, publisher: RecordingPublisher
) -> None:
    run = await make_engine().start(graph="incident", task=TASK, user="U0", channel="C1")
    (first,) = run.pending_asks()

    after_retry = await decide_and_resume(make_engine, run, first.key, decision(Verdict.RETRY))

    assert after_retry.status is RunStatus.WAITING
    (second,) = after_retry.pending_asks()
    assert second.key != first.key and second.interrupt_id != first.interrupt_id
    assert second.name == "review:query_logs:2" and second.reason["attempt"] == 2
    assert second.reason["result"].startswith("query #2:")
    assert after_retry.asks[first.key].status is AskStatus.CONSUMED
    assert [e[2] for e in publisher.of("card")] == [first.key, second.key]
    assert len(incident.QUERIES) == 2

    final = await decide_and_resume(make_engine, after_retry, second.key, decision(Verdict.APPROVE))
    assert final.status is RunStatus.COMPLETED
    assert final.asks[second.key].status is AskStatus.CONSUMED
    assert len(incident.QUERIES) == 2


async def test_a_failed_query_is_reviewed_and_can_be_approved(make_engine) -> None:
    run = await make_engine().start(graph="incident", task="billing, last 48h", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    # The card names the type even though Strands' text for a ValueError subclass does not.
    assert ask.reason["status"] == "error"
    assert ask.reason["result"] == "LogRetentionError: Error: logs are kept for 1440 minutes, asked for 2880"

    final = await decide_and_resume(make_engine, run, ask.key, decision(Verdict.APPROVE))

    assert final.status is RunStatus.COMPLETED and final.output is not None
    assert "The log query failed: Error: logs are kept for 1440 minutes, asked for 2880" in final.output
    assert incident.QUERIES == []


async def test_a_tool_use_strands_runs_again_after_the_review_is_asked_about_on_a_new_card(
    make_engine, publisher: RecordingPublisher
) -> None:
    """Approving the failed first run must not pass the hook-retried second run along unseen."""
    run = await make_engine().start(graph="review-after-retry-hook", task="x", user="U0", channel="C1")
    (first,) = run.pending_asks()
    assert first.name == "review:fetch:1" and first.reason["status"] == "error"

    after_hook_retry = await decide_and_resume(make_engine, run, first.key, decision(Verdict.APPROVE))

    assert after_hook_retry.status is RunStatus.WAITING
    (second,) = after_hook_retry.pending_asks()
    assert second.name == "review:fetch:2" and second.interrupt_id != first.interrupt_id
    assert second.reason["result"] == "customer data #2"
    assert [e[2] for e in publisher.of("card")] == [first.key, second.key]
    assert len(FETCHES) == 2

    final = await decide_and_resume(make_engine, after_hook_retry, second.key, decision(Verdict.APPROVE))
    assert final.status is RunStatus.COMPLETED and final.output == "agent saw: customer data #2"
    assert len(FETCHES) == 2
