"""Every interrupt source Strands 1.62 has, paused in one engine and resumed in another.

Each ``make_engine()`` stands for a separate process: it shares nothing with the others
but the SQLite store, and builds every graph afresh from ``graph_defs``. So each test
below proves that what a source needs to resume (its interrupt state, the node's
conversation, the graph's position) is in the saved snapshot, not in memory.

One example graph per source (``graph_defs``):

* ``tool-gate``: ``BeforeToolCallEvent`` hook gating ``send_payment``
* ``batch-gate``: ``BeforeToolsEvent`` hooks of two parallel nodes, same interrupt name
* ``node-gate``: graph-level ``BeforeNodeCallEvent`` hook gating the ``publish`` node
* ``hitl`` / ``hitl-trust`` (tests/support): Strands' ``HumanInTheLoop`` with trust
* ``nested-graph`` / ``nested-swarm``: the asking agent inside a nested Graph / Swarm
* ``review-loop`` / ``review-loop-keep``: the asking node inside a cycle
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from strands.multiagent.base import Status
from strands.types.interrupt import InterruptResponseContent

import tests.support.graphs as test_graphs
import tests.support.source_graphs as source_graphs
from engine import RunEngine
from engine.records import Ask, AskStatus, Decision, Run, RunStatus, Verdict
from graph_defs import build_graph, load_graph_modules
from graph_defs.examples import batch_gate, nested, node_gate, tool_gate
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher

MakeEngine = Callable[..., RunEngine]


@pytest.fixture(autouse=True)
def source_graphs_loaded() -> Iterator[None]:
    load_graph_modules(["tests.support.source_graphs"])
    sinks: list[list[Any]] = [
        tool_gate.PAYMENTS,
        batch_gate.RESTARTED,
        node_gate.PUBLISHED,
        nested.ROTATED,
        source_graphs.BLOB_DIGESTS,
    ]
    for sink in sinks:
        sink.clear()
    yield
    for sink in sinks:
        sink.clear()


def decision(verdict: Verdict = Verdict.APPROVE, *, user: str = "U1", text: str | None = None) -> Decision:
    return Decision(verdict=verdict, user=user, at=time.time(), text=text)


async def answer(make_engine: MakeEngine, run: Run, ask: Ask, choice: Decision) -> Run:
    """Decide ``ask`` in one fresh process and resume the run in another."""
    decided = await make_engine().decide(run_id=run.run_id, ask_key=ask.key, decision=choice)
    assert decided.accepted, decided
    resumed = await make_engine().resume(run.run_id)
    assert resumed is not None
    return resumed


def snapshot_of(run: Run) -> dict[str, Any]:
    assert run.snapshot is not None
    state: dict[str, Any] = json.loads(run.snapshot)
    return state


def execution_order(store: SqliteRunStore, run_id: str) -> list[str]:
    """The nodes run so far, in order, over every pass (the run's trail; a finished run
    has dropped its state, so the trail is what is left to read)."""
    stored = store.load(run_id)
    assert stored is not None
    return list(stored.trail)


def only(asks: list[Ask]) -> Ask:
    assert len(asks) == 1, asks
    return asks[0]


# --- BeforeToolCallEvent (tool-gate) ----------------------------------------------------------


async def test_tool_gate_approved_in_another_process_pays_once(
    make_engine: MakeEngine, store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    run = await make_engine().start(graph="tool-gate", task="pay INV-7 250 EUR to ACME", user="U0", channel="C1")

    assert run.status is RunStatus.WAITING and tool_gate.PAYMENTS == []
    ask = only(run.pending_asks())
    assert ask.name == "approve_payment" and ask.node_id == "payer"
    assert ask.interrupt_id.startswith("v1:before_tool_call:payer_0_send_payment:")
    assert ask.reason == {"tool": "send_payment", "amount": 250.0, "currency": "EUR", "to": "ACME", "invoice": "INV-7"}

    final = await answer(make_engine, run, ask, decision(user="U7"))

    assert final.status is RunStatus.COMPLETED
    assert tool_gate.PAYMENTS == [{"amount": 250.0, "currency": "EUR", "to": "ACME", "invoice": "INV-7"}]
    assert final.output == "Receipt: Payment sent. Paid 250 EUR to ACME for INV-7."
    assert execution_order(store, run.run_id) == ["payer", "receipt"]
    assert len(publisher.of("card")) == 1


async def test_tool_gate_rejected_cancels_the_call_with_the_reason(make_engine: MakeEngine) -> None:
    run = await make_engine().start(graph="tool-gate", task="pay INV-8 99 USD to Mallory", user="U0", channel="C1")

    final = await answer(
        make_engine, run, only(run.pending_asks()), decision(Verdict.REJECT, user="U9", text="unknown payee")
    )

    assert final.status is RunStatus.COMPLETED
    assert tool_gate.PAYMENTS == []
    assert final.output == "Receipt: Payment not sent. Payment rejected by U9: unknown payee"


# --- BeforeToolsEvent in two parallel nodes (batch-gate) ------------------------------------


async def test_batch_gate_asks_once_per_node_with_two_cards(
    make_engine: MakeEngine, publisher: RecordingPublisher
) -> None:
    run = await make_engine().start(graph="batch-gate", task="restart the api fleet", user="U0", channel="C1")

    asks = {a.node_id: a for a in run.pending_asks()}
    assert set(asks) == {"eu", "us"}
    assert {a.name for a in asks.values()} == {"approve_batch"}
    assert asks["eu"].key != asks["us"].key
    assert asks["eu"].interrupt_id != asks["us"].interrupt_id, "one answer must never reach both nodes"
    assert asks["eu"].reason == {
        "region": "eu",
        "calls": [{"tool": "restart_host", "input": {"host": h}} for h in batch_gate.HOSTS["eu"]],
    }
    assert asks["us"].reason["region"] == "us"
    assert sorted(key for _, _, key in publisher.of("card")) == sorted(a.key for a in asks.values())
    assert batch_gate.RESTARTED == []


@pytest.mark.parametrize("first", ["eu", "us"])
async def test_batch_gate_answering_one_node_never_approves_the_other(
    make_engine: MakeEngine, publisher: RecordingPublisher, first: str
) -> None:
    second = "us" if first == "eu" else "eu"
    run = await make_engine().start(graph="batch-gate", task="restart", user="U0", channel="C1")
    asks = {a.node_id: a for a in run.pending_asks()}

    middle = await answer(make_engine, run, asks[first], decision(user="Ualice"))

    assert middle.status is RunStatus.WAITING
    assert list(batch_gate.HOSTS[first]) == batch_gate.RESTARTED, "only the approved batch ran"
    assert [a.key for a in middle.pending_asks()] == [asks[second].key], "the other ask stays open, same card"
    assert len(publisher.of("card")) == 2

    final = await answer(make_engine, middle, asks[second], decision(Verdict.REJECT, user="Ubob", text="peak hours"))

    assert final.status is RunStatus.COMPLETED
    assert list(batch_gate.HOSTS[first]) == batch_gate.RESTARTED
    outputs = dict(part.split(": ", 1) for part in (final.output or "").split(" | "))
    assert outputs[first] == f"restarted {len(batch_gate.HOSTS[first])} hosts"
    assert outputs[second].startswith("nothing restarted (")
    assert f"Batch for {second} rejected by Ubob: peak hours" in outputs[second]


@pytest.mark.parametrize("approved", ["eu", "us"])
async def test_batch_gate_alice_approves_one_bob_rejects_the_other_in_one_round(
    make_engine: MakeEngine, store: SqliteRunStore, approved: str
) -> None:
    rejected = "us" if approved == "eu" else "eu"
    run = await make_engine().start(graph="batch-gate", task="restart", user="U0", channel="C1")
    asks = {a.node_id: a for a in run.pending_asks()}
    # Both decide before anything resumes: one pass gets both answers.
    alice = await make_engine().decide(run_id=run.run_id, ask_key=asks[approved].key, decision=decision(user="Ualice"))
    bob = await make_engine().decide(
        run_id=run.run_id, ask_key=asks[rejected].key, decision=decision(Verdict.REJECT, user="Ubob", text="no")
    )
    assert alice.accepted and bob.accepted

    final = await make_engine().resume(run.run_id)

    assert final is not None and final.status is RunStatus.COMPLETED
    assert list(batch_gate.HOSTS[approved]) == batch_gate.RESTARTED
    assert f"Batch for {rejected} rejected by Ubob: no" in (final.output or "")
    assert all(final.asks[a.key].status is AskStatus.CONSUMED for a in asks.values())
    assert execution_order(store, run.run_id)[-1] == "summary"


# --- BeforeNodeCallEvent graph hook (node-gate) ----------------------------------------------


async def test_node_gate_approved_runs_the_gated_node(make_engine: MakeEngine, store: SqliteRunStore) -> None:
    run = await make_engine().start(graph="node-gate", task="the 2.0 launch", user="U0", channel="C1")

    ask = only(run.pending_asks())
    assert ask.name == "approve_publish" and ask.node_id == "publish"
    assert ask.interrupt_id.startswith("v1:before_node_call:")
    assert ask.reason == {"node": "publish", "draft": "Announcement: the 2.0 launch"}
    assert execution_order(store, run.run_id) == ["writer"] and node_gate.PUBLISHED == []

    final = await answer(make_engine, run, ask, decision())

    assert final.status is RunStatus.COMPLETED
    assert node_gate.PUBLISHED == ["Announcement: the 2.0 launch"]
    assert final.output == "published: Announcement: the 2.0 launch"
    assert execution_order(store, run.run_id) == ["writer", "publish"]


async def test_node_gate_rejected_ends_the_run_rejected_without_running_the_node(
    make_engine: MakeEngine, store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    run = await make_engine().start(graph="node-gate", task="the 2.0 launch", user="U0", channel="C1")

    final = await answer(
        make_engine, run, only(run.pending_asks()), decision(Verdict.REJECT, user="U9", text="legal has not read it")
    )

    assert final.status is RunStatus.REJECTED
    assert final.error == "node publish not run: sign-off refused by U9: legal has not read it"
    assert node_gate.PUBLISHED == []
    assert "publish" not in execution_order(store, run.run_id)
    assert publisher.of("finished") == [("finished", run.run_id, "rejected")]


# --- HumanInTheLoop with trust -----------------------------------------------------------------


async def test_hitl_trust_runs_the_tool_and_later_calls_are_not_asked(
    make_engine: MakeEngine, publisher: RecordingPublisher
) -> None:
    run = await make_engine().start(graph="hitl-trust", task="maintenance", user="U0", channel="C1")
    first = only(run.pending_asks())
    assert first.name == "strands:human-in-the-loop" and Verdict.TRUST in first.verdicts
    assert "drop_table" in str(first.reason) and test_graphs.markers() == []

    middle = await answer(make_engine, run, first, decision(Verdict.TRUST))

    # drop a (trusted) and drop b (not asked again) ran; the other tool still asks.
    assert middle.status is RunStatus.WAITING
    assert test_graphs.markers() == ["dropped a", "dropped b"]
    second = only(middle.pending_asks())
    assert second.key != first.key and "rotate_keys" in str(second.reason)

    final = await answer(make_engine, middle, second, decision())

    # The trust was kept in the snapshot: drop c in yet another process is not asked.
    assert final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["dropped a", "dropped b", "rotated", "dropped c"]
    assert len(publisher.of("card")) == 2
    assert final.output == "dba: dropped c"


async def test_hitl_trust_on_the_shared_hitl_graph(make_engine: MakeEngine) -> None:
    run = await make_engine().start(graph="hitl", task="clean", user="U0", channel="C1")
    final = await answer(make_engine, run, only(run.pending_asks()), decision(Verdict.TRUST))
    assert final.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["dropped users"]


# --- nested Graph / Swarm ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["nested-graph", "nested-swarm"])
def test_nested_resumes_in_the_same_process(name: str) -> None:
    """Control: Strands itself resumes a nested interrupt from memory (same graph object)."""
    graph = build_graph(name)
    first = graph("rotate KEY-42")
    assert first.status == Status.INTERRUPTED
    (interrupt,) = first.interrupts
    responses: list[InterruptResponseContent] = [
        {"interruptResponse": {"interruptId": interrupt.id, "response": {"decision": "approve", "user": "U1"}}}
    ]
    result = graph(responses)
    assert result.status == Status.COMPLETED
    assert nested.ROTATED == ["KEY-42"]


@pytest.mark.parametrize("name", ["nested-graph", "nested-swarm"])
async def test_nested_approved_in_another_process(make_engine: MakeEngine, store: SqliteRunStore, name: str) -> None:
    run = await make_engine().start(graph=name, task="rotate KEY-42", user="U0", channel="C1")
    ask = only(run.pending_asks())
    assert ask.name == "approve_rotation" and ask.node_id == "ops" and ask.reason == {"key": "KEY-42"}

    final = await answer(make_engine, run, ask, decision(user="U5"))

    assert final.status is RunStatus.COMPLETED, final.error
    assert nested.ROTATED == ["KEY-42"]
    assert final.output == "Report: operator: rotated KEY-42 (approved by U5)"
    assert execution_order(store, run.run_id) == ["intake", "ops", "report"]


@pytest.mark.parametrize("name", ["nested-graph", "nested-swarm"])
async def test_nested_rejected_in_another_process(make_engine: MakeEngine, name: str) -> None:
    run = await make_engine().start(graph=name, task="rotate KEY-7", user="U0", channel="C1")

    final = await answer(make_engine, run, only(run.pending_asks()), decision(Verdict.REJECT, user="U9", text="no"))

    assert final.status is RunStatus.COMPLETED, final.error
    assert nested.ROTATED == []
    assert final.output == "Report: operator: not rotated: rejected by U9: no"


# --- cycles (review-loop) --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["review-loop", "review-loop-keep"])
async def test_review_loop_first_ask_resumes_and_runs_only_what_follows(
    make_engine: MakeEngine, store: SqliteRunStore, name: str
) -> None:
    run = await make_engine().start(graph=name, task="notes for 2.0", user="U0", channel="C1")
    ask = only(run.pending_asks())
    assert ask.name == "review_draft" and ask.node_id == "review"
    assert ask.reason == {"draft": "Draft #1 of notes for 2.0", "round": 1}
    assert execution_order(store, run.run_id) == ["draft"]

    final = await answer(make_engine, run, ask, decision(user="U3"))

    assert final.status is RunStatus.COMPLETED
    assert final.output == "Published after review: approved by U3"
    assert execution_order(store, run.run_id) == ["draft", "review", "publish"]


@pytest.mark.parametrize(
    "name",
    [
        "review-loop",
        "review-loop-keep",
    ],
)
async def test_review_loop_second_visit_asks_again_with_a_new_card(
    make_engine: MakeEngine, store: SqliteRunStore, publisher: RecordingPublisher, name: str
) -> None:
    run = await make_engine().start(graph=name, task="notes", user="U0", channel="C1")
    first = only(run.pending_asks())

    again = await answer(make_engine, run, first, decision(Verdict.REJECT, user="U3", text="add numbers"))

    assert again.status is RunStatus.WAITING
    assert execution_order(store, run.run_id) == ["draft", "review", "draft"]
    second = only(again.pending_asks())
    assert second.key != first.key and again.asks[first.key].status is AskStatus.CONSUMED
    assert len(publisher.of("card")) == 2, "the second visit got a card of its own"
    assert second.reason["draft"].endswith("revised after: review: changes requested by U3: add numbers")
    if name == "review-loop":
        # A fresh agent per visit replays the same tool-use id, so Strands repeats the id.
        assert second.interrupt_id == first.interrupt_id
    else:
        assert second.interrupt_id != first.interrupt_id
        assert second.reason["round"] == 2, "the kept reviewer remembers the first round"

    final = await answer(make_engine, again, second, decision(user="U4"))

    assert final.status is RunStatus.COMPLETED
    assert final.output == "Published after review: approved by U4"
    assert execution_order(store, run.run_id) == ["draft", "review", "draft", "review", "publish"]
    assert all(final.asks[a.key].status is AskStatus.CONSUMED for a in (first, second))


async def test_review_loop_keep_drafter_keeps_its_history_across_processes(make_engine: MakeEngine) -> None:
    """With reset_on_revisit off, the revisited drafter should see its first draft (as in one process)."""
    in_memory = build_graph("review-loop-keep")
    result = in_memory("notes")
    (interrupt,) = result.interrupts
    reject = {"decision": "reject", "text": "add numbers", "user": "U3"}
    responses: list[InterruptResponseContent] = [
        {"interruptResponse": {"interruptId": interrupt.id, "response": reject}}
    ]
    result = in_memory(responses)
    assert result.interrupts[0].reason["draft"].startswith("Draft #2 of notes")

    run = await make_engine().start(graph="review-loop-keep", task="notes", user="U0", channel="C1")
    again = await answer(make_engine, run, only(run.pending_asks()), decision(Verdict.REJECT, text="add numbers"))
    assert only(again.pending_asks()).reason["draft"].startswith("Draft #2 of notes")
