"""``release-check``: collect the security and QA sign-offs for a release, in parallel.

What a team uses it for: ``/graph run release-check payments 2.4.0``. Two reviewers
work at the same time: the ``security`` agent reviews the release's security findings
and asks the security owner to sign off, the ``qa`` agent summarises the test results
and asks the QA owner. Both cards are posted at once and can be answered in any order;
``summary`` runs once both are answered and gives a GO / NO-GO verdict.

Graph: ``security`` and ``qa`` (both entry points, run in parallel) → ``summary``.
Interrupts (tool-level, so each has its own id even though they are raised in the same
batch): ``security_signoff`` with reason ``{"release", "check": "security", "findings"}``
and ``qa_signoff`` with reason ``{"release", "check": "qa", "tests"}``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages
from strands.types.tools import AgentTool, ToolContext

from graph_defs import Answer, read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import (
    ScriptedModel,
    Step,
    StepLike,
    call,
    graph_task,
    latest_tool_result_text,
    say,
    upstream_output,
)

SECURITY_INTERRUPT = "security_signoff"
QA_INTERRUPT = "qa_signoff"

_RELEASE = re.compile(r"([A-Za-z][\w-]*)?[\s@:]*v?(\d+(?:\.\d+)+[\w.+-]*)")


def parse_release(task: str) -> str:
    """The release named in the task (``payments 2.4.0``), or the task itself, shortened."""
    match = _RELEASE.search(task)
    if match:
        return " ".join(part for part in (match[1], match[2]) if part)
    return " ".join(task.split()[:6]) or "unnamed release"


def _signoff_result(check: str, answer: Answer) -> str:
    if answer.decision == "reject":
        return f"{check} sign-off REFUSED by {answer.who}: {answer.reason}"
    if answer.decision == "reply":
        return f"{check} sign-off given by {answer.who} with a note: {answer.reason}"
    return f"{check} sign-off given by {answer.who}"


@tool(context=True)
def request_security_signoff(release: str, findings: str, tool_context: ToolContext) -> str:
    """Ask the security owner to sign off a release, showing the open findings.

    Args:
        release: The release under review, e.g. "payments 2.4.0".
        findings: A one-paragraph summary of the security findings.
    """
    response = tool_context.interrupt(
        SECURITY_INTERRUPT, reason={"release": release, "check": "security", "findings": findings}
    )
    return _signoff_result("Security", read_answer(response))


@tool(context=True)
def request_qa_signoff(release: str, tests: str, tool_context: ToolContext) -> str:
    """Ask the QA owner to sign off a release, showing the test results.

    Args:
        release: The release under review, e.g. "payments 2.4.0".
        tests: A one-paragraph summary of the test results.
    """
    response = tool_context.interrupt(QA_INTERRUPT, reason={"release": release, "check": "qa", "tests": tests})
    return _signoff_result("QA", read_answer(response))


def _ask_security(messages: Messages) -> Step:
    release = parse_release(graph_task(messages))
    findings = f"Dependency scan for {release}: no critical CVEs, 2 low-severity advisories (accepted)."
    return call("request_security_signoff", release=release, findings=findings)


def _ask_qa(messages: Messages) -> Step:
    release = parse_release(graph_task(messages))
    tests = f"Regression suite for {release}: all 412 regression tests green; 3 flaky ones skipped and tracked."
    return call("request_qa_signoff", release=release, tests=tests)


def _echo_result(messages: Messages) -> Step:
    return say(latest_tool_result_text(messages) or "No sign-off was recorded.")


def _verdict(messages: Messages) -> Step:
    release = parse_release(graph_task(messages))
    security = upstream_output(messages, "security").strip().rstrip(".") or "Security: no answer"
    qa = upstream_output(messages, "qa").strip().rstrip(".") or "QA: no answer"
    verdict = "GO" if "sign-off given" in security and "sign-off given" in qa else "NO-GO"
    return say(f"Release {release}: {verdict}. {security}. {qa}.")


def _reviewer(*, name: str, prompt: str, tool_fn: AgentTool, script: Sequence[StepLike]) -> Agent:
    """A reviewer agent; its tool-use ids carry its name so the two reviewers' ids never collide."""
    return Agent(
        name=name,
        model=pick_model(offline=lambda: ScriptedModel(script, id_prefix=name)),
        system_prompt=prompt,
        tools=[tool_fn],
        callback_handler=None,
    )


@graph_def("release-check", description="Security and QA sign-offs for a release, in parallel, then GO/NO-GO")
def build() -> Graph:
    """security ∥ qa (interrupts ``security_signoff`` / ``qa_signoff``) → summary."""
    security = _reviewer(
        name="security",
        prompt=(
            "You are the security reviewer of a release. Summarise its security findings in one paragraph "
            "and call request_security_signoff once. Then repeat the sign-off result verbatim."
        ),
        tool_fn=request_security_signoff,
        script=[_ask_security, _echo_result],
    )
    qa = _reviewer(
        name="qa",
        prompt=(
            "You are the QA reviewer of a release. Summarise its test results in one paragraph and call "
            "request_qa_signoff once. Then repeat the sign-off result verbatim."
        ),
        tool_fn=request_qa_signoff,
        script=[_ask_qa, _echo_result],
    )
    summary = Agent(
        name="summary",
        model=pick_model(offline=lambda: ScriptedModel([_verdict])),
        system_prompt=(
            "You decide whether a release may ship. It is GO only if both the security and the QA "
            "sign-offs were given; otherwise NO-GO. Give the verdict first, then one line per sign-off."
        ),
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(security, "security")
    builder.add_node(qa, "qa")
    builder.add_node(summary, "summary")
    builder.add_edge("security", "summary")
    builder.add_edge("qa", "summary")
    builder.set_entry_point("security")
    builder.set_entry_point("qa")
    builder.set_graph_id("release-check")
    builder.set_max_node_executions(10)
    builder.set_execution_timeout(900)
    builder.set_node_timeout(300)
    return builder.build()
