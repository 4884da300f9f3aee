"""``payout``: money leaves only when two named approvers say yes, and never on its requester's word.

What a team uses it for: ``/graph run payout 1200 EUR to acme``. A planner writes down
what will be paid, then the ``payer`` agent calls ``send_payout``, which a hook holds
until the ask is approved. The graph declares its approval policy with its definition:

- ``approvers``: only alice and bob (the demo's ``U0ALICE`` and ``U0BOB``; in a real
  workspace, your finance team's Slack ids or a user-group id ``S…``) may approve;
- ``quorum=2``: both must approve, one approval each; the card says how many it has;
- ``allow_self_approval`` is left off: whoever started the run may reject it (stopping
  one's own payout is never dangerous) but not approve it, even if they are an approver;
- ``expires_after``: an ask nobody finishes deciding within a day counts as a rejection.

Anyone else's click is refused with a notice, seen only by them, naming who may decide;
nothing is recorded. A single ask could get stricter terms than the graph with
``asks={"send_payout": AskPolicy(quorum=3)}`` (``engine.policy.AskPolicy``).

Graph: ``planner`` → ``payer``. Interrupt: ``approve_payout`` with reason
``{"tool", "amount", "currency", "to"}``, raised by ``PayoutGate`` before
``send_payout`` runs. Only an approval (both of them) lets the call run. A Reject, a
Reply or an expired ask cancels it (``event.cancel_tool``): the tool does not run and
the agent reports why. A Reply does not approve here, because a quorum is counted in
approvals and a Reply is one person's word.

Paying twice is what a payout must never do, and no bot can promise that alone: the
process running ``send_payout`` may die after the money left and before that was saved.
So the gate hands the answer's ``approval_id`` to the payment as its idempotency key
(the same id on every delivery of this approval, a Retry included), and the payment
system drops a second payment with a key it has seen. (After such a crash the bot asks
"may have acted: Retry or Skip?" rather than paying again on its own.)

The payout is simulated (recorded in ``PAYOUTS``, deduplicated by idempotency key).
"""

from __future__ import annotations

import re
from typing import Any

from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages
from strands.types.tools import ToolContext

from graph_defs import read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say

INTERRUPT_NAME = "approve_payout"
GATED_TOOLS = frozenset({"send_payout"})
APPROVERS = ("U0ALICE", "U0BOB")
"""Who may approve a payout: alice and bob of the offline demo's channel."""
QUORUM = 2

PAYOUTS: list[dict[str, Any]] = []
"""Payouts sent in this process (simulated). Tests read it to prove nothing left without a quorum."""
IDEMPOTENCY_KEYS: dict[str, str] = {}
"""toolUseId -> the ``approval_id`` that approved that call, set by ``PayoutGate``."""

_AMOUNT = re.compile(r"(?P<amount>\d+(?:\.\d+)?)\s*(?P<currency>[A-Za-z]{3})?\b")
_PAYEE = re.compile(r"\bto\s+(?P<to>[A-Za-z][\w-]*)")


def parse_payout(task: str) -> dict[str, Any]:
    """Amount, currency and payee from a task like ``1200 EUR to acme``."""
    amount = _AMOUNT.search(task)
    payee = _PAYEE.search(task)
    return {
        "amount": float(amount["amount"]) if amount else 0.0,
        "currency": amount["currency"].upper() if amount and amount["currency"] else "EUR",
        "to": payee["to"] if payee else "unknown",
    }


@tool(context=True)
def send_payout(amount: float, currency: str, to: str, tool_context: ToolContext) -> str:
    """Pay money out to a payee. Irreversible: two approvers must approve every call.

    Args:
        amount: How much to pay.
        currency: ISO currency code, e.g. "EUR".
        to: The payee.
    """
    # A real payment API takes this as its idempotency key (e.g. an Idempotency-Key header).
    key = IDEMPOTENCY_KEYS.get(str(tool_context.tool_use["toolUseId"]))
    if key is not None and any(p.get("idempotency_key") == key for p in PAYOUTS):
        return f"Paid {amount:g} {currency} to {to} before, under this approval ({key}); not paid again."
    PAYOUTS.append({"amount": amount, "currency": currency, "to": to, "idempotency_key": key})
    return f"Paid {amount:g} {currency} to {to}."


class PayoutGate(HookProvider):
    """Hold every call of a gated tool until its ask is approved; anything else cancels it."""

    def __init__(self, *, gated: frozenset[str] = GATED_TOOLS) -> None:
        self._gated = gated

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.gate)

    def gate(self, event: BeforeToolCallEvent) -> None:
        name = event.tool_use["name"]
        if name not in self._gated:
            return
        tool_input = dict(event.tool_use.get("input") or {})
        response = event.interrupt(INTERRUPT_NAME, reason={"tool": name, **tool_input})
        answer = read_answer(response)
        if isinstance(response, dict) and response.get("expired"):
            event.cancel_tool = "Payout not sent: nobody approved it in time."
        elif answer.decision == "reject":
            event.cancel_tool = f"Payout rejected by {answer.who}: {answer.reason}"
        elif answer.decision == "reply":
            event.cancel_tool = f"Payout held: {answer.who} replied instead of approving: {answer.reason}"
        elif isinstance(response, dict) and isinstance(response.get("approval_id"), str):
            IDEMPOTENCY_KEYS[str(event.tool_use["toolUseId"])] = response["approval_id"]


def _plan(messages: Messages) -> Step:
    payout = parse_payout(graph_task(messages))
    return say(
        f"Plan: pay {payout['amount']:g} {payout['currency']} to {payout['to']}. "
        f"Needs {QUORUM} approvals from finance before send_payout runs."
    )


def _pay(messages: Messages) -> Step:
    return call("send_payout", **parse_payout(graph_task(messages)))


def _pay_outcome(messages: Messages) -> Step:
    result = latest_tool_result_text(messages)
    if result.startswith("Paid"):
        return say(f"Payout sent. {result}")
    return say(f"Payout not sent. {result}")


@graph_def(
    "payout",
    description="Pay money out; two of the named approvers must approve, never the requester",
    approvers=list(APPROVERS),
    quorum=QUORUM,
    expires_after=24 * 3600,
)
def build() -> Graph:
    """planner → payer (``send_payout`` gated by ``PayoutGate``, under the graph's policy)."""
    planner = Agent(
        name="planner",
        model=pick_model(offline=lambda: ScriptedModel([_plan], id_prefix="planner")),
        system_prompt=(
            "You prepare payouts. From the task, state the amount, currency and payee in one line. Do not pay anything."
        ),
        callback_handler=None,
    )
    payer = Agent(
        name="payer",
        model=pick_model(offline=lambda: ScriptedModel([_pay, _pay_outcome], id_prefix="payer")),
        system_prompt=(
            "You pay out money. Call send_payout exactly once with the amount, currency and payee of "
            "the original task. Then say whether the payout was sent, quoting the tool result."
        ),
        tools=[send_payout],
        hooks=[PayoutGate()],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(planner, "planner")
    builder.add_node(payer, "payer")
    builder.add_edge("planner", "payer")
    builder.set_entry_point("planner")
    builder.set_graph_id("payout")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    builder.set_node_timeout(300)
    return builder.build()
