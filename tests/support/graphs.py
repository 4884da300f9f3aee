"""Graphs made for tests: observable side effects, failures, huge outputs, races.

Loaded by the engine tests directly and by the bot under test through
``GRAPH_MODULES=tests.support.graphs``. Side effects go to the file named by
``APPROVAL_BOT_TEST_MARKERS`` so a test can see them across processes.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages
from strands.types.tools import ToolContext
from strands.vended_interventions.hitl import HumanInTheLoop

from graph_defs import AskPolicy, graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say

DURING_PASS: list[Callable[[], None]] = []
"""Test hooks run inside a tool after its approval, i.e. while a resume holds the run."""


def markers() -> list[str]:
    path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def _mark_file(variable: str) -> None:
    path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
    if path:
        with open(path + "." + variable.lower(), "w", encoding="utf-8") as handle:
            handle.write("1")


def _mark(text: str) -> None:
    path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")


def _mark_delivery(answer: dict[str, Any]) -> None:
    """Each approval the tool got, by its ``approval_id`` (``<markers>.approval_ids``)."""
    path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
    if path:
        with open(path + ".approval_ids", "a", encoding="utf-8") as handle:
            handle.write(f"{answer.get('approval_id')}\n")


@tool(context=True)
def write_marker(text: str, tool_context: ToolContext) -> str:
    """Write a marker line, after a human approved it."""
    answer: dict[str, Any] = tool_context.interrupt(f"approve_write_{tool_context.agent.name}", reason={"text": text})
    if answer.get("decision") == "reject":
        return f"rejected by {answer.get('user')}: {answer.get('text') or 'no reason'}"
    _mark_delivery(answer)
    for hook in list(DURING_PASS):
        hook()
    slow = float(os.environ.get("APPROVAL_BOT_TEST_SLOW_SECONDS") or 0)
    if slow:
        _mark_file("APPROVAL_BOT_TEST_STARTED")
        time.sleep(slow)
    written = f"{text} | reply: {answer['text']}" if answer.get("decision") == "reply" else text
    if len(answer.get("approvers") or ()) > 1:
        written += " | approvers: " + ",".join(answer["approvers"])
    _mark(written)
    return f"wrote {written}"


def _writer(name: str) -> Agent:
    def report(messages: Messages) -> Step:
        return say(f"{name} result: {latest_tool_result_text(messages)}")

    def ask(messages: Messages) -> Step:
        return call("write_marker", text=f"{name}:{graph_task(messages)}")

    return Agent(
        name=name,
        model=ScriptedModel([ask, report], id_prefix=f"tu_{name}"),
        tools=[write_marker],
        callback_handler=None,
    )


def _bounded(builder: GraphBuilder) -> Graph:
    builder.set_max_node_executions(20)
    builder.set_execution_timeout(120)
    return builder.build()


@graph_def("guarded-write", description="one node; writes a marker after approval")
def guarded_write() -> Graph:
    builder = GraphBuilder()
    builder.add_node(_writer("writer"), "writer")
    return _bounded(builder)


# Policies (user and group ids the e2e tests give their people and groups).
POLICY_GRAPHS = {
    "guarded-approvers": {"approvers": ["U0ALICE", "S0OPS"]},
    "guarded-quorum": {"approvers": ["U0ALICE", "U0BOB", "U0CAROL"], "quorum": 2},
    "guarded-self": {"allow_self_approval": True},
    "guarded-starters": {"starters": ["U0ALICE", "S0OPS"]},
    "guarded-expiring": {
        "approvers": ["U0ALICE"],
        "expires_after": 30,
        "remind_after": [10],
        "escalate_to": ["S0LEADS"],
        "escalate_after": 20,
    },
    # For the e2e tests, which watch a real sweeper (seconds apart) do each of these once.
    "guarded-fast-expiring": {
        "approvers": ["U0ALICE"],
        "expires_after": 5,
        "remind_after": [1.5],
        "escalate_to": ["S0LEADS"],
        "escalate_after": 3,
    },
    "guarded-reminding": {"approvers": ["U0ALICE"], "expires_after": 600, "remind_after": [1]},
    # /graph stats (tests/e2e/test_stats.py): an ask nobody answers expires soon, no reminder.
    "guarded-soon-expiring": {"approvers": ["U0ALICE", "S0LEADS"], "expires_after": 2},
    # The two-person rule across teams: one approval from finance and one from legal (the
    # quorum, left out, is raised to two). U0ALICE is named too, and is in finance: her
    # approval must still count for finance (the ballot looks her up before it counts).
    "guarded-all-of": {
        "approvers": ["U0ALICE", "S0FIN", "S0LEGAL"],
        "asks": {"approve_write_writer": AskPolicy(all_of=["S0FIN", "S0LEGAL"])},
    },
}


def _register_policy_graphs() -> None:
    for name, policy in POLICY_GRAPHS.items():

        def build() -> Graph:
            return guarded_write()

        build.__qualname__ = f"policy_graph_{name.replace('-', '_')}"
        graph_def(name, description=f"guarded-write with {policy}", **policy)(build)  # type: ignore[arg-type]


@graph_def(
    "guarded-idempotent", description="guarded-write, its tool declared idempotent", idempotent=["approve_write_writer"]
)
def guarded_idempotent() -> Graph:
    return guarded_write()


@graph_def("two-asks", description="two parallel nodes that each ask, then a summary")
def two_asks() -> Graph:
    builder = GraphBuilder()
    builder.add_node(_writer("left"), "left")
    builder.add_node(_writer("right"), "right")
    summary = Agent(
        name="summary",
        model=ScriptedModel([lambda m: say("summary: both sides finished")]),
        callback_handler=None,
    )
    builder.add_node(summary, "summary")
    builder.add_edge("left", "summary")
    builder.add_edge("right", "summary")
    return _bounded(builder)


class _Exploding(ScriptedModel):
    async def stream(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise RuntimeError("the model exploded")
        yield {}


@graph_def("boom", description="a node that raises")
def boom() -> Graph:
    builder = GraphBuilder()
    builder.add_node(Agent(name="boom", model=_Exploding(), callback_handler=None), "boom")
    return _bounded(builder)


@graph_def("big-output", description="asks once, then answers with megabytes of text")
def big_output() -> Graph:
    builder = GraphBuilder()
    builder.add_node(_writer("writer"), "writer")
    talker = Agent(name="talker", model=ScriptedModel([say("x" * 2_000_000 + " END")]), callback_handler=None)
    builder.add_node(talker, "talker")
    builder.add_edge("writer", "talker")
    return _bounded(builder)


@tool
def drop_table(name: str) -> str:
    """Drop a table (the test's stand-in for something dangerous)."""
    _mark(f"dropped {name}")
    return f"dropped {name}"


@graph_def("hitl", description="Strands' HumanInTheLoop gating a dangerous tool")
def hitl() -> Graph:
    agent = Agent(
        name="dba",
        model=ScriptedModel([call("drop_table", name="users"), lambda m: say(f"dba: {latest_tool_result_text(m)}")]),
        tools=[drop_table],
        interventions=[HumanInTheLoop(enable_trust=True)],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "dba")
    return _bounded(builder)


# -- tool-gate-test: a BeforeToolCallEvent gate, for Edit before approve -------------------------

import json  # noqa: E402  (appended section: the imports above belong to other graphs)

from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry  # noqa: E402


@tool
def set_replicas(service: str, replicas: int) -> str:
    """Scale a service (the test's stand-in for a call worth editing before it runs).

    Args:
        service: The service to scale.
        replicas: How many replicas it should run.
    """
    _mark("set_replicas " + json.dumps({"service": service, "replicas": replicas}, sort_keys=True))
    return f"scaled {service} to {replicas}"


class _ReplicaGate(HookProvider):
    """Holds every ``set_replicas`` call for a human; the tool itself knows nothing of it."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.gate)

    def gate(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] != "set_replicas":
            return
        reason = {"tool": "set_replicas", **dict(event.tool_use.get("input") or {})}
        answer: dict[str, Any] = event.interrupt("approve_call", reason=reason)
        if answer.get("decision") == "reject":
            event.cancel_tool = f"rejected by {answer.get('user')}: {answer.get('text') or 'no reason'}"


@graph_def("tool-gate-test", description="a BeforeToolCallEvent gate holds set_replicas for approval")
def tool_gate_test() -> Graph:
    def scale(messages: Messages) -> Step:
        return call("set_replicas", service=graph_task(messages), replicas=3)

    agent = Agent(
        name="ops",
        model=ScriptedModel([scale, lambda m: say(f"ops: {latest_tool_result_text(m)}")], id_prefix="tu_ops"),
        tools=[set_replicas],
        hooks=[_ReplicaGate()],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "ops")
    return _bounded(builder)


@tool
def drop_named_table(name: str) -> str:
    """Drop a table named after the run's task, so each run's side effect can be counted."""
    _mark(f"dropped {name}")
    return f"dropped {name}"


@graph_def(
    "hitl-quorum",
    description="HumanInTheLoop under a quorum of two: a Reply of 'yes' must not approve alone",
    approvers=["U0ALICE", "U0BOB", "U0CAROL"],
    quorum=2,
)
def hitl_quorum() -> Graph:
    agent = Agent(
        name="dba",
        model=ScriptedModel(
            [
                lambda m: call("drop_named_table", name=graph_task(m)),
                lambda m: say(f"dba: {latest_tool_result_text(m)}"),
            ],
            id_prefix="tu_dba",
        ),
        tools=[drop_named_table],
        interventions=[HumanInTheLoop(enable_trust=True)],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "dba")
    return _bounded(builder)


class _Slow(ScriptedModel):
    """Takes ``APPROVAL_BOT_TEST_NODE_SECONDS`` (default 0.4 s) per turn without blocking the loop."""

    async def stream(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        await asyncio.sleep(float(os.environ.get("APPROVAL_BOT_TEST_NODE_SECONDS") or 0.4))
        async for event in super().stream(*args, **kwargs):
            yield event


def _step_node(name: str) -> Agent:
    return Agent(name=name, model=_Slow([lambda m: say(f"{name} done: {graph_task(m)}")]), callback_handler=None)


@graph_def("five-steps", description="five nodes in a row, each a little slow; the middle one asks")
def five_steps() -> Graph:
    gate = _writer("approve")
    gate.model = _Slow(list(gate.model._script), id_prefix="tu_approve")  # type: ignore[attr-defined]
    builder = GraphBuilder()
    builder.add_node(_step_node("plan"), "plan")
    builder.add_node(_step_node("fetch"), "fetch")
    builder.add_node(gate, "approve")
    builder.add_node(_step_node("build"), "build")
    builder.add_node(_step_node("report"), "report")
    for a, b in [("plan", "fetch"), ("fetch", "approve"), ("approve", "build"), ("build", "report")]:
        builder.add_edge(a, b)
    return _bounded(builder)


def _marking_node(name: str) -> Agent:
    """A node whose only effect is a marker line: proof that it ran."""

    def run(messages: Messages) -> Step:
        _mark(f"{name} ran")
        return say(f"{name} done")

    return Agent(name=name, model=ScriptedModel([run]), callback_handler=None)


@graph_def("write-then-next", description="a guarded write (slow with APPROVAL_BOT_TEST_SLOW_SECONDS), then a node")
def write_then_next() -> Graph:
    builder = GraphBuilder()
    builder.add_node(_writer("writer"), "writer")
    builder.add_node(_marking_node("next"), "next")
    builder.add_edge("writer", "next")
    return _bounded(builder)


_register_policy_graphs()


# -- inert-echo: people's words echoed everywhere, for "text people send is inert" ---------------


@tool(context=True)
def relay(text: str, count: int, tool_context: ToolContext) -> str:
    """Pass text on after a reply and a rejection (the test's stand-in for echoing people's words).

    Args:
        text: What to pass on.
        count: How many times.
    """
    reply: dict[str, Any] = tool_context.interrupt("relay_reply", reason={"text": text, "why": f"about {text}"})
    reject: dict[str, Any] = tool_context.interrupt("relay_reject", reason=f"{text} / {reply.get('text')}")
    _mark("relay " + json.dumps({"text": text, "count": count}, sort_keys=True))
    return f"relayed {text} x{count} | reply: {reply.get('text')} | reject: {reject.get('text')}"


class _RelayGate(HookProvider):
    """Holds every ``relay`` call for a human, so its input can be edited before it runs."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.gate)

    def gate(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] == "relay":
            event.interrupt("approve_relay", reason={"tool": "relay", **dict(event.tool_use.get("input") or {})})


@graph_def("inert-echo", description="echoes its task, an edited input, a reply and a rejection into its output")
def inert_echo() -> Graph:
    def relay_task(messages: Messages) -> Step:
        return call("relay", text=graph_task(messages), count=1)

    def echo(messages: Messages) -> Step:
        return say(f"echo: {graph_task(messages)} | {latest_tool_result_text(messages)}")

    agent = Agent(
        name="echo",
        model=ScriptedModel([relay_task, echo], id_prefix="tu_echo"),
        tools=[relay],
        hooks=[_RelayGate()],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "echo")
    return _bounded(builder)


# -- handoff: Strands' own vended handoff_to_user tool, a question and not an approval ----------

HANDOFF_QUESTION = "Which region should {task} go to? <!channel> *now* <@U0BOB>"


def _asker() -> Agent:
    """Asks its question with the real ``handoff_to_user`` tool, then says what it got back."""
    from strands.vended_tools.handoff_to_user import handoff_to_user  # lazy: most graphs never ask

    def ask(messages: Messages) -> Step:
        return call("handoff_to_user", message=HANDOFF_QUESTION.format(task=graph_task(messages)))

    def report(messages: Messages) -> Step:
        return say(f"asker got: {latest_tool_result_text(messages)}")

    return Agent(
        name="asker",
        model=ScriptedModel([ask, report], id_prefix="tu_asker"),
        tools=[handoff_to_user],
        callback_handler=None,
    )


@graph_def("handoff", description="the agent asks a question with Strands' handoff_to_user")
def handoff() -> Graph:
    builder = GraphBuilder()
    builder.add_node(_asker(), "asker")
    return _bounded(builder)


@graph_def(
    "handoff-quorum",
    description="handoff_to_user under a quorum of two: the first approver's answer is the answer",
    approvers=["U0ALICE", "U0BOB", "U0CAROL"],
    quorum=2,
)
def handoff_quorum() -> Graph:
    return handoff()


# -- payout-rules: rules by content on a gated tool (``AskPolicy(when=..., label=..., auto=...)``) ---

from graph_defs import AskPolicy  # noqa: E402


@tool
def send_payout(amount: int) -> str:
    """Pay out an amount (the test's stand-in for a payment; marks that it ran).

    Args:
        amount: How much to pay, in whole euros.
    """
    _mark(f"send_payout {amount}")
    return f"paid {amount}"


class _PayoutGate(HookProvider):
    """Holds every ``send_payout`` call; writes each answer it gets to ``<markers>.answers``."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.gate)

    def gate(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] != "send_payout":
            return
        answer: dict[str, Any] = event.interrupt("approve_payout", reason=dict(event.tool_use.get("input") or {}))
        path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
        if path:
            with open(path + ".answers", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(answer, sort_keys=True) + "\n")
        if answer.get("decision") == "reject":
            event.cancel_tool = f"rejected by {answer.get('policy') or answer.get('user')}"


PAYOUT_RULES = [
    AskPolicy(when=lambda d: d["amount"] > 1_000_000, label="over the limit", auto="reject"),
    AskPolicy(when=lambda d: d["amount"] >= 1000, label="1,000 or more: Alice", approvers=["U0ALICE"]),
    AskPolicy(when=lambda d: d["amount"] < 50, label="small", auto="approve"),
    AskPolicy(label="default: Bob", approvers=["U0BOB"]),
]


@graph_def("payout-rules", description="a gated send_payout under rules by amount", asks={"send_payout": PAYOUT_RULES})
def payout_rules() -> Graph:
    def pay(messages: Messages) -> Step:
        # "<amount> <n>": the model pads the call with an n-character memo (a call too big to show).
        words = graph_task(messages).split()
        memo = {"memo": "x" * int(words[1])} if len(words) > 1 else {}
        return call("send_payout", amount=int(words[0]), **memo)

    agent = Agent(
        name="payer",
        model=ScriptedModel([pay, lambda m: say(f"payer: {latest_tool_result_text(m)}")], id_prefix="tu_pay"),
        tools=[send_payout],
        hooks=[_PayoutGate()],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "payer")
    return _bounded(builder)


# -- payout-preview: a preview the approval binds to (``graph_def(previews=...)``) --------------


def payout_preview(details: dict[str, Any]) -> dict[str, str]:
    """What paying ``amount`` EUR will do, at the rate in ``<markers>.rate`` (a test moves it)."""
    path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
    rate = 1.0
    if path and os.path.exists(path + ".rate"):
        with open(path + ".rate", encoding="utf-8") as handle:
            rate = float(handle.read())
    return {"pays": f"{details['amount']} EUR", "the payee gets": f"{details['amount'] * rate:.2f} USD"}


@graph_def(
    "payout-preview",
    description="a gated send_payout whose card shows what will happen",
    approvers=["U0ALICE", "U0BOB"],
    previews={"send_payout": payout_preview},
)
def payout_preview_graph() -> Graph:
    return payout_rules()


@graph_def(
    "payout-preview-hitl",
    description="send_payout held by a gate whose card shows what will happen, and by HumanInTheLoop",
    approvers=["U0ALICE", "U0BOB"],
    previews={"approve_payout": payout_preview},  # the gate's card only
)
def payout_preview_hitl() -> Graph:
    agent = Agent(
        name="payer",
        model=ScriptedModel(
            [
                lambda m: call("send_payout", amount=int(graph_task(m).split()[0])),
                lambda m: say(f"payer: {latest_tool_result_text(m)}"),
            ],
            id_prefix="tu_pay",
        ),
        tools=[send_payout],
        hooks=[_PayoutGate()],
        interventions=[HumanInTheLoop()],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "payer")
    return _bounded(builder)


# -- hitl-preview: HumanInTheLoop (trust enabled) under a preview the approval binds to ----------


def table_preview(details: dict[str, Any]) -> str:
    """What dropping the table will do: its row count, from ``<markers>.rows`` (a test moves it)."""
    path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
    rows = "0"
    if path and os.path.exists(path + ".rows"):
        with open(path + ".rows", encoding="utf-8") as handle:
            rows = handle.read().strip()
    return f"drops table {details.get('name')} with {rows} rows"


@graph_def(
    "hitl-preview",
    description="HumanInTheLoop with trust, whose card shows what dropping the table will do",
    approvers=["U0ALICE", "U0BOB"],
    previews={"drop_named_table": table_preview},
)
def hitl_preview() -> Graph:
    return hitl_quorum()  # the same agent; the policy (and its preview) is this graph's


# -- hitl-rules: HumanInTheLoop (trust enabled) on send_payout under rules by amount ------------


@graph_def(
    "hitl-rules",
    description="HumanInTheLoop with trust on two payouts, a small one then a big one, under rules by amount",
    asks={"send_payout": PAYOUT_RULES},
)
def hitl_rules() -> Graph:
    agent = Agent(
        name="payer",
        model=ScriptedModel(
            [
                lambda m: call("send_payout", amount=100),
                lambda m: call("send_payout", amount=5000),
                lambda m: say(f"payer: {latest_tool_result_text(m)}"),
            ],
            id_prefix="tu_hpay",
        ),
        tools=[send_payout],
        interventions=[HumanInTheLoop(enable_trust=True)],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "payer")
    return _bounded(builder)
