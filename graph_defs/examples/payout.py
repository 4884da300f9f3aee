"""``payout``: money leaves under rules by amount, never on its requester's word alone.

What a team uses it for: ``/graph run payout 1200 EUR to acme``. A planner writes down
what will be paid, then the ``payer`` agent calls ``send_payout``, which a hook holds
until the ask is approved. The graph declares its approval policy with its definition,
as rules by content on ``send_payout`` (the first whose ``when`` holds applies, chosen
once when the ask is raised and frozen with it; the card names it):

- ``small`` (under 50): approved by the rule at once, with no card: the thread gets one
  line naming the rule, the audit trail an ``auto_decided`` entry. Nobody's word is
  needed for petty cash, and nobody's word is taken for more;
- ``large`` (1,000 or more): the two-person rule across teams, ``all_of`` finance and
  legal: one approval from a member of each (the demo's user groups ``S0FINANCE``, alice
  and bob, and ``S0LEGAL``, dana). Two people from finance never complete it; the card
  says which team is still missing;
- anything else (the rule without ``when``): both alice and bob (``quorum=2`` of the
  graph's ``approvers``, one approval each; the card says how many it has).

``allow_self_approval`` is left off: whoever started the run may reject it (stopping one's
own payout is never dangerous) but not approve it, even as an approver. ``expires_after``:
an ask nobody finishes deciding within a day counts as a rejection. Anyone else's click is
refused with a notice, seen only by them, naming who may decide; nothing is recorded. A
``when`` that raises fails closed: the strictest rule applies (``large``), never ``small``.

Every card also shows "What will happen" (``previews``): a table of what approving pays,
to whom, from which account and what the payee gets. The approval binds to it: right
before ``send_payout`` runs the preview is computed again, and had it changed the
approval would not be used and a new card would ask again. This preview reads nothing
that moves (no clock, no balance), so it never voids a card; under a preview a card
offers no Edit and no Trust.

Graph: ``planner`` → ``payer``. Interrupt: ``approve_payout`` with reason
``{"tool", "amount", "currency", "to"}``, raised by ``PayoutGate`` before
``send_payout`` runs. Only an approval (by the rule, or by the people the rule names)
lets the call run. A Reject, a Reply or an expired ask cancels it
(``event.cancel_tool``): the tool does not run and the agent reports why. A Reply does
not approve here, because a quorum is counted in approvals and a Reply is one person's
word.

Paying twice is what a payout must never do, and no bot can promise that alone: the
process running ``send_payout`` may die after the money left and before that was saved.
So the gate hands the answer's ``approval_id`` to the payment as its idempotency key
(the same id on every delivery of this approval, a Retry included; a rule's approval has
one too), and the payment system drops a second payment with a key it has seen. (After
such a crash the bot asks "may have acted: Retry or Skip?" rather than paying again on
its own.)

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

from graph_defs import AskPolicy, read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say

INTERRUPT_NAME = "approve_payout"
GATED_TOOLS = frozenset({"send_payout"})
APPROVERS = ("U0ALICE", "U0BOB")
"""Who may approve a payout between the two thresholds: alice and bob of the offline demo."""
QUORUM = 2
FINANCE, LEGAL = "S0FINANCE", "S0LEGAL"
"""The user groups a large payout needs one approval from each (the demo's local Slack has them)."""
SMALL_BELOW = 50
LARGE_FROM = 1000
FROM_ACCOUNT = "operating account"
TRANSFER_FEE = {"EUR": 0.0}
"""What the sending bank charges per payout, by currency (taken from the amount); 2.5 otherwise."""

RULES = [
    AskPolicy(when=lambda d: float(d["amount"]) < SMALL_BELOW, label="small", auto="approve"),
    AskPolicy(
        when=lambda d: float(d["amount"]) >= LARGE_FROM,
        label="large: finance and legal",
        approvers=[FINANCE, LEGAL],
        all_of=[FINANCE, LEGAL],
    ),
    AskPolicy(label="two approvers"),  # the graph's terms: alice and bob, both
]
"""``send_payout``'s rules by amount, first match applies (see the module's docstring)."""

PAYOUTS: list[dict[str, Any]] = []
"""Payouts sent in this process (simulated). Tests read it to prove nothing left unapproved."""
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
    """Pay money out to a payee. Irreversible: every call is held until its rule approves it.

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


def preview(details: dict[str, Any]) -> dict[str, str]:
    """What approving ``send_payout`` will do, shown on its card under "What will happen".

    Deterministic: computed from the call alone, so it is the same when the bot computes it
    again right before the payment runs, and the approval stands.
    """
    amount, currency = float(details.get("amount") or 0), str(details.get("currency") or "EUR")
    fee = TRANSFER_FEE.get(currency, 2.5)
    return {
        "pays": f"{amount:g} {currency}",
        "to": str(details.get("to") or "unknown"),
        "from account": f"{FROM_ACCOUNT} ({currency})",
        "payee gets": f"{max(amount - fee, 0):g} {currency} " + (f"({fee:g} {currency} fee)" if fee else "(no fee)"),
    }


def _plan(messages: Messages) -> Step:
    payout = parse_payout(graph_task(messages))
    amount = payout["amount"]
    if amount < SMALL_BELOW:
        needs = "small: the rule approves it, no card"
    elif amount >= LARGE_FROM:
        needs = "large: one approval from finance and one from legal"
    else:
        needs = f"{QUORUM} approvals from finance"
    return say(f"Plan: pay {amount:g} {payout['currency']} to {payout['to']} ({needs}).")


def _pay(messages: Messages) -> Step:
    return call("send_payout", **parse_payout(graph_task(messages)))


def _pay_outcome(messages: Messages) -> Step:
    result = latest_tool_result_text(messages)
    if result.startswith("Paid"):
        return say(f"Payout sent. {result}")
    return say(f"Payout not sent. {result}")


@graph_def(
    "payout",
    description="Pay money out: small sums by the rule, others by two people (finance and legal from 1,000)",
    approvers=list(APPROVERS),
    quorum=QUORUM,
    expires_after=24 * 3600,
    asks={"send_payout": RULES},
    previews={"send_payout": preview},
)
def build() -> Graph:
    """planner → payer (``send_payout`` gated by ``PayoutGate``, under the rules by amount)."""
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
