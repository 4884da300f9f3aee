"""Hostile review of previews: an approval binds to its preview until the call it approves runs.

Two gates on one call (a gate with a preview, HumanInTheLoop without): the gate's answer is
sent while HumanInTheLoop still waits, so the call does not run then. It runs in the pass
that sends the last answer: the preview the first approval was given on must be checked
then, not only when its own answer was sent.
"""

from __future__ import annotations

import time
from typing import Any

from strands import Agent, ToolContext, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.vended_interventions.hitl import HumanInTheLoop

from engine.records import Decision, RunStatus, Verdict
from graph_defs import graph_def
from graph_defs.scripted import ScriptedModel, call, latest_tool_result_text, say
from tests.engine.test_prepare import PaymentGate, _payer, transfers

RATE = [1.0]


def _rate_preview(details: dict[str, Any]) -> str:
    return f"the payee gets {details['amount'] * RATE[0]:.2f} USD"


@graph_def(
    "review-preview-two-gates",
    description="a gate with a preview and HumanInTheLoop on one transfer",
    previews={"approve_transfer": _rate_preview},
)
def preview_two_gates() -> Graph:
    return _payer(hooks=[PaymentGate()], interventions=[HumanInTheLoop()])


def _approve() -> Decision:
    return Decision(verdict=Verdict.APPROVE, user="U9", at=time.time())


async def test_an_approval_is_bound_to_its_preview_until_its_call_runs(make_engine) -> None:  # type: ignore[no-untyped-def]
    transfers.clear()
    RATE[0] = 1.0
    run = await make_engine().start(graph="review-preview-two-gates", task="pay", user="U0", channel="C1")
    asks = {a.name: a for a in run.pending_asks()}
    gate, hitl = asks["approve_transfer"], asks["strands:human-in-the-loop"]
    assert gate.preview == "the payee gets 100.00 USD" and hitl.preview is None

    result = await make_engine().decide(run_id=run.run_id, ask_key=gate.key, decision=_approve())
    after = await make_engine().resume(run.run_id, known=result.run)
    assert after is not None and after.status is RunStatus.WAITING and transfers == []

    RATE[0] = 0.5  # what the approved preview said no longer holds
    (hitl,) = after.pending_asks()
    result = await make_engine().decide(run_id=run.run_id, ask_key=hitl.key, decision=_approve())
    final = await make_engine().resume(run.run_id, known=result.run)

    assert final is not None
    assert transfers == [], "the call did not run under a preview nobody approved"
    again = [a for a in final.pending_asks() if a.name == "approve_transfer"]
    assert again and again[0].preview == "the payee gets 50.00 USD", "asked again with the new preview"


@graph_def(
    "review-tool-preview-two-gates",
    description="a gate and HumanInTheLoop on one transfer, the preview keyed by the tool",
    previews={"transfer": _rate_preview},
)
def tool_preview_two_gates() -> Graph:
    return _payer(hooks=[PaymentGate()], interventions=[HumanInTheLoop()])


async def test_a_held_approval_whose_preview_held_lets_the_call_run_once(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The held approval is checked on the call it approved (kept on the record while the
    call waits), so an unchanged preview is not taken for a changed one: no card twice."""
    transfers.clear()
    RATE[0] = 1.0
    run = await make_engine().start(graph="review-tool-preview-two-gates", task="pay", user="U0", channel="C1")
    asks = {a.name: a for a in run.pending_asks()}
    gate, hitl = asks["approve_transfer"], asks["strands:human-in-the-loop"]
    assert gate.preview == hitl.preview == "the payee gets 100.00 USD"

    result = await make_engine().decide(run_id=run.run_id, ask_key=gate.key, decision=_approve())
    after = await make_engine().resume(run.run_id, known=result.run)
    assert after is not None and after.status is RunStatus.WAITING and transfers == []
    result = await make_engine().decide(run_id=run.run_id, ask_key=hitl.key, decision=_approve())
    final = await make_engine().resume(run.run_id, known=result.run)

    assert final is not None and final.status is RunStatus.COMPLETED, final.pending_asks()
    assert transfers == [{"amount": 100, "to": "acme"}]


@tool(context=True)
def checked_transfer(amount: int, to: str, tool_context: ToolContext) -> str:
    """Move money once the payee is confirmed inside the tool."""
    if tool_context.interrupt("confirm_payee", reason={"to": to})["decision"] != "approve":
        return "payee not confirmed"
    transfers.append({"amount": amount, "to": to})
    return f"sent {amount} to {to}"


@graph_def(
    "review-preview-gate-then-tool",
    description="a gate with a preview, then an interrupt inside the tool",
    previews={"approve_transfer": _rate_preview},
)
def preview_gate_then_tool() -> Graph:
    agent = Agent(
        name="payer",
        model=ScriptedModel(
            [call("checked_transfer", amount=100, to="acme"), lambda m: say(latest_tool_result_text(m))]
        ),
        tools=[checked_transfer],
        hooks=[PaymentGate()],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "payer")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(60)
    return builder.build()


async def test_a_gates_approval_held_while_the_tool_asks_is_bound_to_its_preview(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The gate's answer lets the tool start; the tool asks inside and the call runs again,
    from its start, when that is answered: the gate's preview is checked then too."""
    transfers.clear()
    RATE[0] = 1.0
    run = await make_engine().start(graph="review-preview-gate-then-tool", task="pay", user="U0", channel="C1")
    (gate,) = run.pending_asks()
    result = await make_engine().decide(run_id=run.run_id, ask_key=gate.key, decision=_approve())
    after = await make_engine().resume(run.run_id, known=result.run)
    assert after is not None and transfers == []
    (inside,) = after.pending_asks()
    assert inside.name == "confirm_payee"

    RATE[0] = 0.5
    result = await make_engine().decide(run_id=run.run_id, ask_key=inside.key, decision=_approve())
    final = await make_engine().resume(run.run_id, known=result.run)

    assert final is not None
    assert transfers == [], "the call did not run under a preview nobody approved"
    assert [a.preview for a in final.pending_asks() if a.name == "approve_transfer"] == ["the payee gets 50.00 USD"]
