"""What the engine adds to every graph: edits applied, HumanInTheLoop's classifier kept honest.

Through the real engine and store; every engine stands for another process.
"""

from __future__ import annotations

import time
from typing import Any

from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.multiagent.graph import Graph, GraphBuilder
from strands.vended_interventions.hitl import HumanInTheLoop
from strands.vended_interventions.hitl.classifier import ClassifierResult

from engine.records import Decision, RunStatus, Verdict
from graph_defs import graph_def
from graph_defs.scripted import ScriptedModel, call, latest_tool_result_text, say

transfers: list[dict[str, Any]] = []
CLASSIFIER_SAYS_RISKY = [True]


@tool
def transfer(amount: int, to: str) -> str:
    """Move money."""
    transfers.append({"amount": amount, "to": to})
    return f"sent {amount} to {to}"


class PaymentGate(HookProvider):
    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.gate)

    def gate(self, event: BeforeToolCallEvent) -> None:
        answer = event.interrupt("approve_transfer", reason={"amount": event.tool_use["input"]["amount"]})
        if answer["decision"] != "approve":
            event.cancel_tool = "not approved"


def _payer(*, hooks: list[HookProvider] | None = None, interventions: list[Any] | None = None) -> Graph:
    agent = Agent(
        name="payer",
        model=ScriptedModel([call("transfer", amount=100, to="acme"), lambda m: say(latest_tool_result_text(m))]),
        tools=[transfer],
        hooks=hooks or [],
        interventions=interventions or [],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "payer")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(60)
    return builder.build()


@graph_def("prepare-gated-transfer", description="a BeforeToolCallEvent gate on a transfer")
def gated_transfer() -> Graph:
    return _payer(hooks=[PaymentGate()])


def _classifier(event: BeforeToolCallEvent, **kwargs: Any) -> ClassifierResult:
    return ClassifierResult(requires_human_in_the_loop=CLASSIFIER_SAYS_RISKY[0], reason="money moves")


@graph_def("prepare-classified-transfer", description="HumanInTheLoop with a risk classifier")
def classified_transfer() -> Graph:
    return _payer(interventions=[HumanInTheLoop(classifier=_classifier)])


def _decision(verdict: Verdict, **extra: Any) -> Decision:
    return Decision(verdict=verdict, user="U9", at=time.time(), **extra)


async def test_an_edit_makes_the_tool_run_with_the_edited_input(make_engine) -> None:
    transfers.clear()
    run = await make_engine().start(graph="prepare-gated-transfer", task="pay", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    assert ask.tool is not None and ask.tool.name == "transfer" and ask.tool.input == {"amount": 100, "to": "acme"}
    assert ask.tool.input_schema is not None and "amount" in ask.tool.input_schema["properties"]
    assert Verdict.EDIT in ask.verdicts

    edited = {"amount": 40, "to": "acme"}
    result = await make_engine().decide(
        run_id=run.run_id, ask_key=ask.key, decision=_decision(Verdict.EDIT, edited_input=edited)
    )
    final = await make_engine().resume(run.run_id, known=result.run)

    assert final is not None and final.status is RunStatus.COMPLETED
    assert transfers == [edited], "the tool ran once, with the edited input"
    assert final.output == "sent 40 to acme"


async def test_a_rejected_call_stays_rejected_when_the_classifier_changes_its_mind(make_engine) -> None:
    transfers.clear()
    CLASSIFIER_SAYS_RISKY[0] = True
    run = await make_engine().start(graph="prepare-classified-transfer", task="pay", user="U0", channel="C1")
    (ask,) = run.pending_asks()
    assert ask.tool is not None and ask.tool.name == "transfer"

    CLASSIFIER_SAYS_RISKY[0] = False  # a model's verdict is not stable; a fresh process asks it again
    try:
        result = await make_engine().decide(run_id=run.run_id, ask_key=ask.key, decision=_decision(Verdict.REJECT))
        final = await make_engine().resume(run.run_id, known=result.run)
    finally:
        CLASSIFIER_SAYS_RISKY[0] = True

    assert final is not None and final.status is RunStatus.COMPLETED
    assert transfers == [], "the human said no; no classifier gets to overrule that"
    assert "CONFIRMATION_FAILED" in (final.output or "")


class TwoGates(HookProvider):
    """ops always signs off; the CFO only above 1000 (and judges the input that will run)."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.ops)
        registry.add_callback(BeforeToolCallEvent, self.cfo)

    def ops(self, event: BeforeToolCallEvent) -> None:
        if event.interrupt("ops_ok", reason=dict(event.tool_use["input"]))["decision"] != "approve":
            event.cancel_tool = "ops said no"

    def cfo(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["input"]["amount"] > 1000:
            answer = event.interrupt("cfo_ok", reason=dict(event.tool_use["input"]))
            if answer["decision"] != "approve":
                event.cancel_tool = "the CFO said no"


@graph_def("prepare-two-gates", description="two gates on one transfer")
def two_gates() -> Graph:
    return _payer(hooks=[TwoGates()])


@graph_def("prepare-gate-and-hitl", description="a gate and HumanInTheLoop on one transfer")
def gate_and_hitl() -> Graph:
    return _payer(hooks=[PaymentGate()], interventions=[HumanInTheLoop()])


async def test_an_edit_is_judged_by_every_gate_on_the_call(make_engine) -> None:
    transfers.clear()
    run = await make_engine().start(graph="prepare-two-gates", task="pay", user="U0", channel="C1")
    (ops,) = run.pending_asks()  # 100 is below the CFO's threshold
    edited = {"amount": 999_999, "to": "mallory"}
    result = await make_engine().decide(
        run_id=run.run_id, ask_key=ops.key, decision=_decision(Verdict.EDIT, edited_input=edited)
    )
    after = await make_engine().resume(run.run_id, known=result.run)

    assert after is not None and after.status is RunStatus.WAITING, "the edited amount needs the CFO"
    (cfo,) = after.pending_asks()
    assert cfo.name == "cfo_ok" and cfo.reason == edited and transfers == []
    assert cfo.tool is not None and cfo.tool.input == edited, "the card shows the call that will run"

    result = await make_engine().decide(run_id=run.run_id, ask_key=cfo.key, decision=_decision(Verdict.REJECT))
    final = await make_engine().resume(run.run_id, known=result.run)
    assert final is not None and final.status is RunStatus.COMPLETED and transfers == []


async def test_an_approval_given_before_an_edit_is_asked_again(make_engine) -> None:
    transfers.clear()
    run = await make_engine().start(graph="prepare-gate-and-hitl", task="pay", user="U0", channel="C1")
    asks = {a.name: a for a in run.pending_asks()}
    assert set(asks) == {"approve_transfer", "strands:human-in-the-loop"}
    hitl, gate = asks["strands:human-in-the-loop"], asks["approve_transfer"]

    # Someone approves the original 100 in the HumanInTheLoop card; then someone else edits it.
    await make_engine().decide(run_id=run.run_id, ask_key=hitl.key, decision=_decision(Verdict.APPROVE))
    edited = {"amount": 5000, "to": "acme"}
    result = await make_engine().decide(
        run_id=run.run_id, ask_key=gate.key, decision=_decision(Verdict.EDIT, edited_input=edited)
    )
    after = await make_engine().resume(run.run_id, known=result.run)

    assert after is not None and after.status is RunStatus.WAITING and transfers == []
    (again,) = after.pending_asks()
    assert again.name == "strands:human-in-the-loop" and again.key != hitl.key
    assert "5000" in str(again.reason), "asked about the edited call"

    result = await make_engine().decide(run_id=run.run_id, ask_key=again.key, decision=_decision(Verdict.APPROVE))
    final = await make_engine().resume(run.run_id, known=result.run)
    assert final is not None and final.status is RunStatus.COMPLETED
    assert transfers == [edited], "ran once, with the edited input, after both said yes to it"


async def test_an_edit_closes_the_other_card_on_the_call_and_asks_again_with_the_edited_input(
    make_engine, publisher
) -> None:
    """The card a person approves is the card they saw: after an Edit of the gated call, the
    HumanInTheLoop card about the old input is closed as changed, a new card asks about the
    edited call, and a click on the old card decides nothing."""
    transfers.clear()
    run = await make_engine().start(graph="prepare-gate-and-hitl", task="pay", user="U0", channel="C1")
    asks = {a.name: a for a in run.pending_asks()}
    hitl, gate = asks["strands:human-in-the-loop"], asks["approve_transfer"]
    assert "100" in str(hitl.reason)

    edited = {"amount": 5000, "to": "mallory"}
    result = await make_engine().decide(
        run_id=run.run_id, ask_key=gate.key, decision=_decision(Verdict.EDIT, edited_input=edited)
    )
    after = await make_engine().resume(run.run_id, known=result.run)

    assert after is not None and after.status is RunStatus.WAITING and transfers == []
    old = after.asks[hitl.key]
    assert old.status.value == "obsolete" and old.closed is not None and old.closed.value == "changed"
    (again,) = after.pending_asks()
    assert again.name == "strands:human-in-the-loop" and again.key != hitl.key and "5000" in str(again.reason)
    assert again.digest != hitl.digest
    assert ("changed", run.run_id, f"{hitl.key}:closed:changed") in publisher.events, "the old card says so"
    assert ("card", run.run_id, again.key) in publisher.events, "a new card asks about the edited call"

    stale = await make_engine().decide(run_id=run.run_id, ask_key=hitl.key, decision=_decision(Verdict.APPROVE))
    assert not stale.accepted and stale.ask is not None and stale.ask.closed is not None
    assert (await make_engine().resume(run.run_id)) is not None and transfers == [], "the old card approved nothing"

    result = await make_engine().decide(run_id=run.run_id, ask_key=again.key, decision=_decision(Verdict.APPROVE))
    final = await make_engine().resume(run.run_id, known=result.run)
    assert final is not None and final.status is RunStatus.COMPLETED and transfers == [edited]


async def test_an_approval_given_after_an_edit_on_a_card_showing_the_old_call_counts_for_nothing(make_engine) -> None:
    """Alice edits the gate; Bob then approves the HumanInTheLoop card, which still shows
    the old call. Both answers reach the same pass. Bob approved 100 to acme, not the
    edited call: his answer is void, and the question is asked again about the edit."""
    transfers.clear()
    run = await make_engine().start(graph="prepare-gate-and-hitl", task="pay", user="U0", channel="C1")
    asks = {a.name: a for a in run.pending_asks()}
    hitl, gate = asks["strands:human-in-the-loop"], asks["approve_transfer"]
    edited = {"amount": 5000, "to": "mallory"}
    await make_engine().decide(
        run_id=run.run_id, ask_key=gate.key, decision=_decision(Verdict.EDIT, edited_input=edited)
    )
    await make_engine().decide(run_id=run.run_id, ask_key=hitl.key, decision=_decision(Verdict.APPROVE))

    after = await make_engine().resume(run.run_id)

    assert after is not None and after.status is RunStatus.WAITING and transfers == [], "nothing ran on Bob's word"
    old = after.asks[hitl.key]
    assert old.status.value == "obsolete" and old.closed is not None and old.closed.value == "changed"
    (again,) = after.pending_asks()
    assert again.name == "strands:human-in-the-loop" and "5000" in str(again.reason)


class TwoEditGates(HookProvider):
    """Two gates on every transfer, both with Edit (each is a BeforeToolCallEvent gate)."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.first)
        registry.add_callback(BeforeToolCallEvent, self.second)

    def first(self, event: BeforeToolCallEvent) -> None:
        if event.interrupt("first_ok", reason=dict(event.tool_use["input"]))["decision"] != "approve":
            event.cancel_tool = "first said no"

    def second(self, event: BeforeToolCallEvent) -> None:
        if event.interrupt("second_ok", reason=dict(event.tool_use["input"]))["decision"] != "approve":
            event.cancel_tool = "second said no"


@graph_def("prepare-two-edit-gates", description="two gates with Edit on one transfer")
def two_edit_gates() -> Graph:
    return _payer(hooks=[TwoEditGates()])


async def test_edits_made_in_turn_by_two_people_stick_and_the_last_one_runs(make_engine) -> None:
    transfers.clear()
    run = await make_engine().start(graph="prepare-two-edit-gates", task="pay", user="U0", channel="C1")
    asks = {a.name: a for a in run.pending_asks()}
    x, y = {"amount": 200, "to": "acme"}, {"amount": 300, "to": "acme"}

    await make_engine().decide(
        run_id=run.run_id, ask_key=asks["first_ok"].key, decision=_decision(Verdict.EDIT, edited_input=x)
    )
    after = await make_engine().resume(run.run_id)
    assert after is not None
    (second,) = after.pending_asks()
    assert second.name == "second_ok" and second.tool is not None and second.tool.input == x

    await make_engine().decide(run_id=run.run_id, ask_key=second.key, decision=_decision(Verdict.EDIT, edited_input=y))
    after = await make_engine().resume(run.run_id)
    assert after is not None and after.asks[second.key].status.value == "consumed", "the second edit stuck"
    (first,) = after.pending_asks()
    assert first.name == "first_ok" and first.tool is not None and first.tool.input == y, "asked again about y"

    result = await make_engine().decide(run_id=run.run_id, ask_key=first.key, decision=_decision(Verdict.APPROVE))
    final = await make_engine().resume(run.run_id, known=result.run)
    assert final is not None and final.status is RunStatus.COMPLETED and transfers == [y]


async def test_the_same_edit_made_by_two_people_at_once_counts_for_both(make_engine) -> None:
    transfers.clear()
    run = await make_engine().start(graph="prepare-two-edit-gates", task="pay", user="U0", channel="C1")
    x = {"amount": 200, "to": "acme"}
    for ask in run.pending_asks():
        await make_engine().decide(run_id=run.run_id, ask_key=ask.key, decision=_decision(Verdict.EDIT, edited_input=x))
    final = await make_engine().resume(run.run_id)
    assert final is not None and final.status is RunStatus.COMPLETED and transfers == [x]


async def test_two_different_edits_at_once_the_first_recorded_wins_and_the_other_gate_asks_again(make_engine) -> None:
    transfers.clear()
    run = await make_engine().start(graph="prepare-two-edit-gates", task="pay", user="U0", channel="C1")
    asks = {a.name: a for a in run.pending_asks()}
    x, y = {"amount": 200, "to": "acme"}, {"amount": 999, "to": "mallory"}
    first = Decision(verdict=Verdict.EDIT, user="U1", at=time.time(), edited_input=x)
    await make_engine().decide(run_id=run.run_id, ask_key=asks["first_ok"].key, decision=first)
    later = Decision(verdict=Verdict.EDIT, user="U2", at=first.at + 1, edited_input=y)
    await make_engine().decide(run_id=run.run_id, ask_key=asks["second_ok"].key, decision=later)
    after = await make_engine().resume(run.run_id)
    assert after is not None and transfers == [], "neither edit ran on the other's approval"
    (again,) = after.pending_asks()
    assert again.name == "second_ok" and again.tool is not None and again.tool.input == x
