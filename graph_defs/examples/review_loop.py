"""``review-loop``: draft, ask a human to review, redraft until the reviewer approves.

What a team uses it for: ``/graph run review-loop release notes for 2.0``. The ``draft``
agent writes, the ``review`` agent shows the draft on a card; Approve sends it on to
``publish``, Reject or Reply (with the changes wanted) sends it back to ``draft`` for
another round, which asks again with a new card. The loop is bounded by
``max_node_executions``.

Graph: ``draft`` (entry) → ``review`` → ``draft`` when changes were requested (a
conditional back edge), ``review`` → ``publish`` when approved. Interrupt:
``review_draft`` with reason ``{"draft": <text>, "round": n}``, raised by the review
tool. Every visit of ``review`` asks again; with ``reset_on_revisit`` on, the agent
starts each visit from a blank conversation, so Strands gives the new ask the SAME
interrupt id as the previous visit's (the id comes from the tool-use id): only the
engine's own ask keys tell the visits apart.

Two definitions differ only in ``reset_on_revisit``:

* ``review-loop``: on. Each visit sees only its fresh input (the usual choice: the
  reviewer judges the new draft, not the history).
* ``review-loop-keep``: off. A revisited agent keeps its conversation, so the drafter
  can see its earlier drafts (it numbers them). Strands 1.62's ``serialize_state`` keeps
  the conversations of interrupted nodes only, so a resume in another process brings
  back the interrupted reviewer's history but not the drafter's.
"""

from __future__ import annotations

from typing import Any

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder, GraphState
from strands.types.content import Messages
from strands.types.tools import ToolContext

from graph_defs import read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say, upstream_output

INTERRUPT_NAME = "review_draft"
APPROVED = "approved"
CHANGES = "changes requested"


def latest_input(messages: Messages) -> Messages:
    """The conversation from the latest node input on: what this visit was handed.

    A node kept across visits (``reset_on_revisit`` off) holds every visit's input; the
    scripts must answer the newest one, not the first.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] == "user" and any("text" in block for block in message["content"]):
            return messages[index:]
    return messages


def _review_round(messages: Messages) -> int:
    return 1 + sum(1 for m in messages if m["role"] == "user" for b in m["content"] if "toolResult" in b)


@tool(context=True)
def request_review(draft: str, tool_context: ToolContext) -> str:
    """Show a draft to a human reviewer and return the verdict.

    Args:
        draft: The draft text to review.
    """
    reason = {"draft": draft, "round": _review_round(tool_context.agent.messages)}
    answer = read_answer(tool_context.interrupt(INTERRUPT_NAME, reason=reason))
    if answer.decision == "approve":
        return f"{APPROVED} by {answer.who}"
    return f"{CHANGES} by {answer.who}: {answer.reason}"


def changes_requested(state: GraphState) -> bool:
    """The back edge review → draft: taken when the latest review asked for changes."""
    return _latest_review(state).startswith(f"review: {CHANGES}")


def approved(state: GraphState) -> bool:
    """The edge review → publish: taken when the latest review approved."""
    return _latest_review(state).startswith(f"review: {APPROVED}")


def _latest_review(state: GraphState) -> str:
    result = state.results.get("review")
    if result is None:
        return ""
    return "\n".join(str(r).strip() for r in result.get_agent_results())


def _draft(messages: Messages) -> Step:
    """Draft #n, where n counts this agent's own earlier drafts still in its conversation."""
    number = 1 + sum(1 for m in messages if m["role"] == "assistant")
    current = latest_input(messages)
    feedback = upstream_output(current, "review")
    task = graph_task(current)
    if feedback:
        return say(f"Draft #{number} of {task}, revised after: {feedback}")
    return say(f"Draft #{number} of {task}")


def _review(messages: Messages) -> Step:
    if messages and messages[-1]["role"] == "user" and any("toolResult" in b for b in messages[-1]["content"]):
        return say(f"review: {latest_tool_result_text(messages)}")
    return call("request_review", draft=upstream_output(latest_input(messages), "draft"))


def _publish(messages: Messages) -> Step:
    return say(f"Published after {upstream_output(latest_input(messages), 'review') or 'no review'}")


def _build(*, graph_id: str, reset_on_revisit: bool) -> Graph:
    def agent(name: str, policy: Any, **kwargs: Any) -> Agent:
        return Agent(
            name=name,
            model=pick_model(offline=lambda: ScriptedModel(policy=policy, id_prefix=name)),
            callback_handler=None,
            **kwargs,
        )

    builder = GraphBuilder()
    builder.add_node(
        agent("draft", _draft, system_prompt="Write the draft the task asks for; apply the reviewer's changes."),
        "draft",
    )
    builder.add_node(
        agent(
            "review",
            _review,
            system_prompt=(
                "Call request_review once with the draft you were given, verbatim. Then answer "
                "'review: ' followed by the tool's result, verbatim."
            ),
            tools=[request_review],
        ),
        "review",
    )
    builder.add_node(agent("publish", _publish, system_prompt="Confirm the approved draft is published."), "publish")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "draft", condition=changes_requested)
    builder.add_edge("review", "publish", condition=approved)
    builder.set_entry_point("draft")
    builder.reset_on_revisit(reset_on_revisit)
    builder.set_graph_id(graph_id)
    builder.set_max_node_executions(12)
    builder.set_execution_timeout(900)
    builder.set_node_timeout(300)
    return builder.build()


@graph_def("review-loop", description="Draft, human review, redraft until approved (fresh agents each round)")
def build() -> Graph:
    """draft ⇄ review (asks ``review_draft``) → publish, with ``reset_on_revisit`` on."""
    return _build(graph_id="review-loop", reset_on_revisit=True)


@graph_def("review-loop-keep", description="Draft, human review, redraft until approved (agents keep history)")
def build_keep() -> Graph:
    """The same loop with ``reset_on_revisit`` off: revisited agents keep their conversation."""
    return _build(graph_id="review-loop-keep", reset_on_revisit=False)
