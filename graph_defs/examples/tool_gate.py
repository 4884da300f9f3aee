"""``tool-gate``: a hook gates one dangerous tool, so the tool itself needs no approval code.

What a team uses it for: ``/graph run tool-gate pay invoice INV-7 250 EUR to ACME``. The
``payer`` agent may look invoices up freely, but every ``send_payment`` call is held by a
``BeforeToolCallEvent`` hook until a human approves it in Slack. This is the pattern for
tools you do not own (a vendor SDK's tool, an MCP tool): the gate lives in a
``HookProvider`` registered on the agent, and the tool stays unaware of approvals.

Graph: ``payer`` → ``receipt``. Interrupt: ``approve_payment`` with reason
``{"tool", "amount", "currency", "to", "invoice"}``, raised by ``PaymentGate`` before
``send_payment`` runs. Approve lets the call run; Reject sets ``event.cancel_tool`` to a
message naming who rejected it and why: the tool does not run, and the agent sees that
message as the tool's (error) result. A Reply approves with the reply shown in the result.

The payment is simulated (recorded in ``PAYMENTS``).
"""

from __future__ import annotations

import re
from typing import Any

from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages

from graph_defs import read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say, upstream_output

INTERRUPT_NAME = "approve_payment"
GATED_TOOLS = frozenset({"send_payment"})

PAYMENTS: list[dict[str, Any]] = []
"""Payments sent in this process (simulated). Tests read it to prove a rejection paid nothing."""

_AMOUNT = re.compile(r"(?P<amount>\d+(?:\.\d+)?)\s*(?P<currency>[A-Z]{3})?")
_PAYEE = re.compile(r"\bto\s+(?P<to>[A-Za-z][\w-]*)")
_INVOICE = re.compile(r"\b(?P<invoice>INV-\d+)\b", re.IGNORECASE)


def parse_payment(task: str) -> dict[str, Any]:
    """Amount, currency, payee and invoice from a task like ``pay INV-7 250 EUR to ACME``."""
    invoice = _INVOICE.search(task)
    rest = _INVOICE.sub(" ", task)
    amount = _AMOUNT.search(rest)
    payee = _PAYEE.search(rest)
    return {
        "amount": float(amount["amount"]) if amount else 0.0,
        "currency": (amount["currency"] if amount and amount["currency"] else "EUR"),
        "to": payee["to"] if payee else "unknown",
        "invoice": invoice["invoice"].upper() if invoice else "none",
    }


@tool
def send_payment(amount: float, currency: str, to: str, invoice: str) -> str:
    """Send money to a payee. Irreversible: a human must approve every call.

    Args:
        amount: How much to pay.
        currency: ISO currency code, e.g. "EUR".
        to: The payee.
        invoice: The invoice this pays.
    """
    PAYMENTS.append({"amount": amount, "currency": currency, "to": to, "invoice": invoice})
    return f"Paid {amount:g} {currency} to {to} for {invoice}."


class PaymentGate(HookProvider):
    """Hold every call of a gated tool until a human decides; fail closed on anything odd.

    Why a hook and not code in the tool: the hook sees the model's exact tool input before
    anything runs, can refuse without the tool's cooperation, and one gate covers many tools.
    """

    def __init__(self, *, gated: frozenset[str] = GATED_TOOLS) -> None:
        self._gated = gated

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.gate)

    def gate(self, event: BeforeToolCallEvent) -> None:
        name = event.tool_use["name"]
        if name not in self._gated:
            return
        tool_input = dict(event.tool_use.get("input") or {})
        answer = read_answer(event.interrupt(INTERRUPT_NAME, reason={"tool": name, **tool_input}))
        if answer.decision == "reject":
            event.cancel_tool = f"Payment rejected by {answer.who}: {answer.reason}"


def _pay(messages: Messages) -> Step:
    return call("send_payment", **parse_payment(graph_task(messages)))


def _pay_outcome(messages: Messages) -> Step:
    result = latest_tool_result_text(messages)
    if result.startswith("Paid"):
        return say(f"Payment sent. {result}")
    return say(f"Payment not sent. {result}")


def _receipt(messages: Messages) -> Step:
    return say(f"Receipt: {upstream_output(messages, 'payer') or 'the payer reported nothing'}")


@graph_def("tool-gate", description="Pay an invoice; a BeforeToolCallEvent hook asks before send_payment runs")
def build() -> Graph:
    """payer (``send_payment`` gated by ``PaymentGate``) → receipt."""
    payer = Agent(
        name="payer",
        model=pick_model(offline=lambda: ScriptedModel([_pay, _pay_outcome], id_prefix="payer")),
        system_prompt=(
            "You pay invoices. Call send_payment exactly once with the amount, currency, payee and invoice "
            "from the task. Then say whether the payment was sent, quoting the tool result."
        ),
        tools=[send_payment],
        hooks=[PaymentGate()],
        callback_handler=None,
    )
    receipt = Agent(
        name="receipt",
        model=pick_model(offline=lambda: ScriptedModel([_receipt])),
        system_prompt="You write a one-line receipt of what the payer did.",
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(payer, "payer")
    builder.add_node(receipt, "receipt")
    builder.add_edge("payer", "receipt")
    builder.set_entry_point("payer")
    builder.set_graph_id("tool-gate")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    builder.set_node_timeout(300)
    return builder.build()
