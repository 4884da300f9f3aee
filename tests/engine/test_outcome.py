"""Outcomes read as what they are: which answers decided a run, and how endings are logged.

The record decides how a run's end is shown (``engine.outcome``), so the rules are
tested on records; the logging is tested on real passes of real graphs, because the
records in question are emitted deep inside Strands.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from strands import Agent
from strands.multiagent.graph import Graph, GraphBuilder

import graph_defs.examples.cleanup as cleanup
import graph_defs.examples.node_gate as node_gate
from engine import RunEngine
from engine.execution import StepStatus, run_pass
from engine.outcome import decisive_asks, failure_parts, failure_text, rejections
from engine.records import Ask, AskStatus, Decision, Run, RunStatus, Verdict
from engine.sources import HITL_INTERRUPT_NAME, denies
from graph_defs.scripted import ScriptedModel, say

MakeEngine = Callable[..., RunEngine]
STRANDS_GRAPH = "strands.multiagent.graph"


def ask(key: str, *, created: float, verdict: Verdict | None = None, at: float = 0.0, **changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": key,
        "interrupt_id": f"i-{key}",
        "name": "approve_x",
        "reason": None,
        "node_id": "n",
        "status": AskStatus.CONSUMED if verdict else AskStatus.PENDING,
        "created_at": created,
        "decision": Decision(verdict=verdict, user="U1", at=at, text="why") if verdict else None,
    }
    return Ask(**(fields | changes))


def run_with(*asks: Ask) -> Run:
    return Run(
        run_id="r1",
        graph="g",
        task="t",
        started_by="U0",
        status=RunStatus.COMPLETED,
        version=1,
        created_at=0.0,
        updated_at=0.0,
        asks={a.key: a for a in asks},
    )


def keys(asks: list[Ask]) -> list[str]:
    return [a.key for a in asks]


# --- which answers decided the run --------------------------------------------------------------


def test_the_only_answer_decides() -> None:
    run = run_with(ask("a", created=1, verdict=Verdict.REJECT, at=2))
    assert keys(decisive_asks(run)) == ["a"] and keys(rejections(run)) == ["a"]


def test_an_answer_that_led_to_another_question_does_not_decide() -> None:
    run = run_with(
        ask("draft1", created=1, verdict=Verdict.REJECT, at=2),
        ask("draft2", created=3, verdict=Verdict.APPROVE, at=4),
    )
    assert keys(decisive_asks(run)) == ["draft2"] and rejections(run) == []


def test_parallel_questions_all_decide_in_the_order_answered() -> None:
    run = run_with(
        ask("us", created=1, verdict=Verdict.REJECT, at=5, node_id="us"),
        ask("eu", created=1, verdict=Verdict.APPROVE, at=2, node_id="eu"),
        ask("late", created=3, verdict=Verdict.APPROVE, at=4, node_id="x"),
    )
    assert keys(decisive_asks(run)) == ["late", "us"], "us was answered after the last question was raised"
    assert keys(rejections(run)) == ["us"]


def test_the_last_question_decides_even_if_its_clock_ran_behind() -> None:
    run = run_with(ask("a", created=10.0, verdict=Verdict.REJECT, at=9.99))
    assert keys(rejections(run)) == ["a"]


def test_closed_and_unanswered_asks_decide_nothing() -> None:
    closed = ask("old", created=1, verdict=Verdict.REJECT, at=2, status=AskStatus.OBSOLETE)
    assert rejections(run_with(closed)) == [] and decisive_asks(run_with()) == []


@pytest.mark.parametrize("verdict", list(Verdict))
@pytest.mark.parametrize("name", [HITL_INTERRUPT_NAME, "approve_x"])
def test_only_a_reject_reads_as_a_no(verdict: Verdict, name: str) -> None:
    """A Reply goes to graph code (or to HumanInTheLoop's own ``evaluate``), which decides."""
    asked = ask("a", created=1, name=name)
    answered = asked.__class__(
        **{**asked.__dict__, "decision": Decision(verdict=verdict, user="U1", at=2, text="not before the audit")}
    )
    assert denies(answered) is (verdict is Verdict.REJECT)
    assert denies(asked) is False, "an unanswered ask denies nothing"


def test_failures_are_stored_as_one_line_saying_where() -> None:
    text = failure_text(node_id="boom", error=ValueError("bad input\nsecond line"))
    assert text == "node boom: ValueError: bad input\nsecond line"
    assert failure_parts(text) == ("boom", "ValueError: bad input", True)
    assert failure_parts(failure_text(node_id=None, error=KeyError())) == (None, "KeyError", False)
    assert failure_parts("cannot build graph g: nope") == (None, "cannot build graph g: nope", False)
    assert failure_parts(None) == (None, "(no error message)", False)


# --- how endings are logged -----------------------------------------------------------------------


def _answer(verdict: Verdict, text: str | None = None) -> Decision:
    return Decision(verdict=verdict, user="U0BOB", at=time.time(), text=text)


async def _decide_and_resume(make_engine: MakeEngine, run: Run, decision: Decision) -> Run:
    (pending,) = run.pending_asks()
    assert (await make_engine().decide(run_id=run.run_id, ask_key=pending.key, decision=decision)).accepted
    final = await make_engine().resume(run.run_id)
    assert final is not None
    return final


async def test_a_node_gate_rejection_logs_one_info_line_and_no_error(
    make_engine: MakeEngine, caplog: pytest.LogCaptureFixture
) -> None:
    node_gate.PUBLISHED.clear()
    run = await make_engine().start(graph="node-gate", task="the 2.0 launch", user="U0", channel="C1")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        final = await _decide_and_resume(make_engine, run, _answer(Verdict.REJECT, "legal has not read it"))

    assert final.status is RunStatus.REJECTED
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [r for r in caplog.records if r.exc_info] == [], "no traceback for a documented outcome"
    (line,) = [r for r in caplog.records if r.name == "engine.execution"]
    assert line.levelno == logging.INFO
    assert line.getMessage() == (
        f"run {run.run_id} (graph node-gate): node publish not run, its gate said no: "
        "sign-off refused by U0BOB: legal has not read it"
    )
    assert keys(rejections(final)) == [next(iter(final.asks))]


def _exploding_graph(message: str) -> Graph:
    model = ScriptedModel([say("never")])

    async def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(message)
        yield {}

    model.stream = explode  # type: ignore[method-assign]
    builder = GraphBuilder()
    builder.add_node(Agent(name="boom", model=model, callback_handler=None), "boom")
    builder.set_max_node_executions(2)
    return builder.build()


async def test_a_failure_is_logged_with_its_traceback_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        graph = _exploding_graph("the model exploded\nwith details")
        step = await run_pass(graph=graph, task="go", snapshot=None, about="run r9 (graph boom)")

    assert step.status is StepStatus.FAILED
    assert step.error == "node boom: RuntimeError: the model exploded\nwith details"
    traced = [r for r in caplog.records if r.exc_info]
    assert len(traced) == 1, [r.getMessage() for r in traced]
    (engine_line,) = [r for r in caplog.records if r.name == "engine.execution"]
    assert engine_line.getMessage() == "run r9 (graph boom) failed: node boom: RuntimeError: the model exploded"


async def test_an_error_worded_like_a_gate_still_reaches_strands_error_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        step = await run_pass(graph=_exploding_graph("node cancelled by user"), task="go", snapshot=None)

    assert step.status is StepStatus.FAILED
    strands_errors = [r for r in caplog.records if r.name == STRANDS_GRAPH and r.levelno >= logging.ERROR]
    assert [r.getMessage().split(" | ")[-1] for r in strands_errors] == ["node failed", "graph execution failed"]


async def test_a_denied_cleanup_ends_as_a_rejection_in_plain_words(make_engine: MakeEngine) -> None:
    cleanup.DELETED.clear()
    run = await make_engine().start(graph="cleanup", task="snapshots older than 30 days", user="U0", channel="C1")
    final = await _decide_and_resume(make_engine, run, _answer(Verdict.REJECT, "not before the audit"))

    assert final.status is RunStatus.COMPLETED and cleanup.DELETED == []
    assert (
        final.output
        == "Cleanup cancelled: deletion was not approved, nothing was deleted. Kept 1 resource(s): snapshot-db-2024-01."
    )
    assert [a.decision.text for a in rejections(final) if a.decision] == ["not before the audit"]
