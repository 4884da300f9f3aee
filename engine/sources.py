"""Where an interrupt came from, which buttons it gets, and what each decision sends back.

Graph code receives the same JSON object for every decision, whichever button was
clicked, so that a gate written once keeps working as buttons are added:
``{"decision": "approve" | "reject" | "reply", "text": str | None, "user": "U…",
"approval_id": str}``. ``approval_id`` is the same every time this ask's answer is
delivered (a node run again after a crash or a takeover, a Retry on a "may have acted"
card) and differs for every other ask: graph code passes it to the system it acts on as
an idempotency key, so that system can drop a second delivery the bot could not rule out.
Two sources get one more button: an Edit on a ``BeforeToolCallEvent`` gate sends
``"approve"`` plus ``"edited_input"`` (and the engine makes the tool run with it), a
Retry on a ``review_after`` ask sends ``"retry"``. Strands' own ``HumanInTheLoop``
intervention evaluates its response itself (``True``, ``"y"`` or ``"yes"`` approve,
anything else denies, ``"t"``/``"trust"`` trusts when ``enable_trust`` is on), so its
interrupts get the plain strings it understands.

Strands' vended ``handoff_to_user`` tool (``strands:handoff-to-user``) asks a question, not
for an approval: its reason is the agent's message, and what ``interrupt()`` returns is
the tool's result, which the model reads. So it gets Answer (``Verdict.REPLY``) and
Decline (``Verdict.REJECT``) and no Approve, its answer is the typed text as it is, a
Decline is ``DECLINED_TEXT`` (plus the reason, if one was given), and nobody answering in
time is ``UNANSWERED_TEXT``. A question is answered by one person: a quorum does not apply
(``question_terms``), so the first allowed person's answer is the answer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.policy import AskRules
from engine.records import Ask, Decision, Verdict

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph

    from engine.execution import Raised

HITL_INTERRUPT_NAME = "strands:human-in-the-loop"
# strands.vended_tools.HANDOFF_INTERRUPT_NAME: the same whatever the tool is named.
HANDOFF_INTERRUPT_NAME = "strands:handoff-to-user"
QUESTION_VERDICTS = (Verdict.REPLY, Verdict.REJECT)  # shown as Answer and Decline
DECLINED_TEXT = "The user declined to answer this question."
UNANSWERED_TEXT = "Nobody answered this question in time."
REVIEW_INTERRUPT_PREFIX = "review:"  # graph_defs.review_after names its asks review:<tool>[:<attempt>]
TOOL_GATE_ID_PREFIX = "v1:before_tool_call:"  # Strands' id for BeforeToolCallEvent interrupts
BASIC_VERDICTS = (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY)
# What HumanInTheLoop's default evaluation approves (strands.interventions.default_evaluate),
# and what it trusts when enable_trust is on (the ask then offers Trust).


def verdicts_for(*, graph: Graph, node_id: str, name: str, interrupt_id: str) -> tuple[Verdict, ...]:
    """The buttons an ask gets; decided when it is raised, while the graph is at hand."""
    if is_question(name):
        return QUESTION_VERDICTS
    if name == HITL_INTERRUPT_NAME:
        trusted = _trust_enabled(graph=graph, node_id=node_id)
        return (*BASIC_VERDICTS, Verdict.TRUST) if trusted else BASIC_VERDICTS
    if name.startswith(REVIEW_INTERRUPT_PREFIX):
        return (*BASIC_VERDICTS, Verdict.RETRY)
    if interrupt_id.startswith(TOOL_GATE_ID_PREFIX):
        return (*BASIC_VERDICTS, Verdict.EDIT)
    return BASIC_VERDICTS


def is_question(name: str) -> bool:
    """Whether an ask of this name is a question for a person (``handoff_to_user``)."""
    return name == HANDOFF_INTERRUPT_NAME


def question_terms(name: str, rules: AskRules) -> AskRules:
    """The terms an ask is raised with: a question's answer is one person's, so neither a
    quorum nor ``all_of`` applies to it (several people cannot co-write one answer; who may
    answer is still the policy's approvers and ``all_of`` entries, or the channel), and no
    rule answers it by itself (``auto``): the agent asked a person, so a person answers."""
    if not is_question(name):
        return rules
    people = rules.approvers
    if rules.all_of:  # those entries may answer (only they, when no approvers are named)
        people = (*(people or ()), *(i for i in rules.all_of if i not in (people or ())))
    return replace(rules, quorum=1, all_of=(), auto=None, approvers=people)


def gated_tool_use_id(interrupt_id: str) -> str | None:
    """The toolUseId a BeforeToolCallEvent interrupt is about (Strands puts it in the id)."""
    if not interrupt_id.startswith(TOOL_GATE_ID_PREFIX):
        return None
    rest = interrupt_id.removeprefix(TOOL_GATE_ID_PREFIX)
    return rest.rsplit(":", 1)[0] or None


IN_TOOL_ID_PREFIX = "v1:tool_call:"  # Strands' id for a tool_context.interrupt inside a tool


def call_of(interrupt_id: str) -> str | None:
    """The toolUseId of the call an interrupt holds: a BeforeToolCallEvent gate's, or a
    ``tool_context.interrupt`` inside the tool's (the call runs once all of them are answered)."""
    if interrupt_id.startswith(IN_TOOL_ID_PREFIX):
        return interrupt_id.removeprefix(IN_TOOL_ID_PREFIX).rsplit(":", 1)[0] or None
    return gated_tool_use_id(interrupt_id)


def _trust_enabled(*, graph: Graph, node_id: str) -> bool:
    from engine.prepare import agents_under
    from engine.strands_internals import hitl_handlers, hitl_trust_enabled

    node = graph.nodes.get(node_id)
    for agent in agents_under(getattr(node, "executor", None)):  # nested graphs and swarms too
        if any(hitl_trust_enabled(h) for h in hitl_handlers(agent)):
            return True
    return False


def approval_id(run_id: str, ask: Ask) -> str:
    """The idempotency key of ``ask``'s answer: the run and the ask that was first answered.

    A "may have acted" ask (``Ask.retry_of``) carries its original ask's key, so a Retry
    delivers the original approval under the original id.
    """
    return f"{run_id}:{ask.retry_of.key if ask.retry_of is not None else ask.key}"


SKIPPED_TEXT = "skipped: the step that got this approval stopped before it was saved, so it may already have run"


def details_of(raised: Raised | Ask) -> Any:
    """What a policy rule's ``when`` and a preview are given about an ask (as raised, or as
    recorded: the same fields): the tool's input for tool gates, ``HumanInTheLoop`` and
    reviews, the reason when it is a dict, else ``{"reason": <str>}``."""
    if raised.tool is not None:
        return dict(raised.tool.input)
    reason = raised.reason
    if raised.name.startswith(REVIEW_INTERRUPT_PREFIX) and isinstance(reason, dict):
        given = reason.get("input")
        if isinstance(given, dict):
            return given
    if isinstance(reason, dict):
        return reason
    return {"reason": "" if reason is None else str(reason)}


def response_for(ask: Ask, decision: Decision, *, run_id: str) -> Any:
    """The value ``interrupt(...)`` returns in graph code for this decision."""
    if ask.retry_of is not None:
        return _retry_response(ask, decision, run_id=run_id)
    if ask.name == HITL_INTERRUPT_NAME:
        return _hitl_response(ask, decision)
    if is_question(ask.name):
        return _question_response(decision)
    key = approval_id(run_id, ask)
    if decision.policy is not None:  # decided by a policy rule: nobody decided
        verdict = decision.verdict.value
        return {"decision": verdict, "text": None, "user": None, "policy": decision.policy, "approval_id": key}
    if decision.expired:  # nobody answered in time: a rejection by nobody
        expired: dict[str, Any] = {"decision": Verdict.REJECT.value, "text": decision.text, "user": None}
        return {**expired, "expired": True, "approval_id": key}
    if decision.verdict is Verdict.REPLY and ask.rules.quorum > 1:
        # One person's reply must not stand in for several approvals, whatever the graph
        # makes of a reply: under a quorum it sends the question back, as a rejection.
        return {
            "decision": Verdict.REJECT.value,
            "text": decision.text,
            "user": decision.user,
            "reply": True,
            "approval_id": key,
        }
    # An edit is an approval of the edited call: gates written for approve/reject keep working.
    verdict = Verdict.APPROVE if decision.verdict is Verdict.EDIT else decision.verdict
    response: dict[str, Any] = {"decision": verdict.value, "text": decision.text, "user": decision.user}
    response["approval_id"] = key
    if decision.edited_input is not None:
        response["edited_input"] = decision.edited_input
    if verdict is Verdict.APPROVE:
        # Everyone whose approval counted, in order (one name without a quorum).
        response["approvers"] = [*ask.voters(), decision.user]
    return response


def _retry_response(ask: Ask, decision: Decision, *, run_id: str) -> Any:
    """A "may have acted" ask: Retry sends the original answer again, as it was (the tool
    runs again, knowingly); Skip (or nobody answering in time) rejects the call, saying why."""
    assert ask.retry_of is not None
    if decision.verdict in (Verdict.RETRY, Verdict.APPROVE) and not decision.expired:
        # The original answer, as it was, except who approved sending it again: the people
        # of this card (one Retry, or the votes a quorum needed), not those of the first.
        again = ask.retry_of.response
        if isinstance(again, dict) and "approvers" in again:
            return {**again, "approvers": [*ask.voters(), decision.user]}
        return again
    if ask.name == HITL_INTERRUPT_NAME:
        return "no"
    text = SKIPPED_TEXT + (f" ({decision.text})" if decision.text else "")
    user = None if decision.expired else decision.user
    return {"decision": Verdict.REJECT.value, "text": text, "user": user, "approval_id": approval_id(run_id, ask)}


def denies(ask: Ask) -> bool:
    """Whether the answer on ``ask`` was a Reject.

    Only the Reject button counts. A Reply is handed to graph code (or to a
    HumanInTheLoop whose ``evaluate`` may be the graph author's own), which decides what
    it means; the bot does not guess, so a Reply never makes a run read as rejected. A
    declined question is handed to the agent the same way: it was asked, not refused.
    """
    if is_question(ask.name):
        return False
    return ask.decision is not None and ask.decision.verdict is Verdict.REJECT


def _hitl_response(ask: Ask, decision: Decision) -> str:
    if decision.verdict is Verdict.APPROVE:
        return "yes"
    if decision.verdict is Verdict.TRUST:
        return "trust"
    if decision.expired:
        return "no"
    if decision.verdict is Verdict.REPLY and ask.rules.quorum > 1:
        return "no"  # under a quorum a reply sends the question back (see response_for)
    if decision.verdict is Verdict.REPLY:
        # A typed answer goes through HumanInTheLoop's own evaluation ("yes" approves).
        return decision.text or ""
    return "no"


def _question_response(decision: Decision) -> str:
    """What ``handoff_to_user`` returns to the model: the answer as typed, or why there is none."""
    if decision.expired:
        return UNANSWERED_TEXT
    if decision.verdict is Verdict.REPLY:
        return decision.text or ""
    return DECLINED_TEXT + (f" Their reason: {decision.text}" if decision.text else "")
