"""``deploy``: plan a service rollout, get a human's approval in Slack, deploy, report.

What a team uses it for: ``/graph run deploy billing 1.2.3 to staging``. A planner
writes a short rollout plan, the deployer asks for approval with a card showing the
service, version, environment and plan, and only an approval (or a reply with
instructions) lets the deployment happen; a rejection is reported back with its reason.
A reporter writes the summary that the bot posts when the run completes.

Graph: ``planner`` → ``deployer`` → ``reporter``. The deployer's ``deploy_service`` tool
raises the interrupt ``approve_deploy`` with reason
``{"service", "version", "environment", "plan"}``.

The deployment itself is simulated (recorded in ``DEPLOYMENTS``); replace
``_perform_deployment`` with your pipeline call. Everything before ``interrupt()`` in
the tool runs again on every resume, so it must stay free of side effects.
"""

from __future__ import annotations

import re
from typing import Any

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages
from strands.types.tools import ToolContext

from graph_defs import read_answer
from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import (
    ScriptedModel,
    Step,
    call,
    graph_task,
    latest_tool_result_text,
    say,
    upstream_output,
)

INTERRUPT_NAME = "approve_deploy"

DEPLOYMENTS: list[dict[str, Any]] = []
"""Deployments performed in this process (simulated). Tests read it to prove a rejection deployed nothing."""

_TARGET = re.compile(
    r"(?P<service>[A-Za-z][\w-]*)\s*(?:[@:=]\s*|\s+(?:version\s+|to\s+version\s+)?)(?P<version>v?\d+(?:\.\d+)+[\w.+-]*)"
)
_ENVIRONMENTS = {"prod": "production", "production": "production", "staging": "staging", "stage": "staging"}
_ENVIRONMENT = re.compile(r"\b(prod|production|staging|stage|dev|development|qa|test)\b", re.IGNORECASE)


def parse_target(task: str) -> tuple[str, str, str]:
    """Service, version and environment named in a task like ``deploy billing 1.2.3 to staging``.

    Falls back to ``("service", "latest", "production")`` pieces when the task does not say.
    """
    match = _TARGET.search(task)
    service, version = (match["service"].lower(), match["version"]) if match else ("service", "latest")
    if not match:
        words = [w for w in re.findall(r"[a-z][\w-]*", task.lower()) if w not in {"deploy", "please", "the"}]
        service = words[0] if words else service
    env_match = _ENVIRONMENT.search(task)
    environment = env_match[1].lower() if env_match else "production"
    return service, version, _ENVIRONMENTS.get(environment, environment)


def _perform_deployment(*, service: str, version: str, environment: str, instructions: str | None) -> str:
    """The (simulated, harmless) deployment: records it and describes what happened."""
    DEPLOYMENTS.append(
        {"service": service, "version": version, "environment": environment, "instructions": instructions}
    )
    return f"Deployed {service} {version} to {environment}."


@tool(context=True)
def deploy_service(service: str, version: str, tool_context: ToolContext, environment: str = "production") -> str:
    """Deploy a version of a service after a human approved it in Slack.

    Args:
        service: The service to deploy, e.g. "billing".
        version: The version to deploy, e.g. "1.2.3".
        environment: Target environment, "production" unless the task says otherwise.
    """
    plan = upstream_output(tool_context.agent.messages, "planner") or "no plan given"
    answer = read_answer(
        tool_context.interrupt(
            INTERRUPT_NAME,
            reason={"service": service, "version": version, "environment": environment, "plan": plan},
        )
    )
    if answer.decision == "reject":
        return f"Deployment rejected by {answer.who}: {answer.reason}"
    instructions = answer.text.strip() if answer.decision == "reply" and answer.text else None
    done = _perform_deployment(service=service, version=version, environment=environment, instructions=instructions)
    if instructions:
        return f"{done} Approved by {answer.who} with operator instructions: {instructions}"
    return f"{done} Approved by {answer.who}."


def _plan(messages: Messages) -> Step:
    service, version, environment = parse_target(graph_task(messages))
    return say(
        f"Plan: deploy {service} {version} to {environment}. "
        "1) confirm the build exists, 2) ask for approval, 3) roll out, 4) watch error rates for 10 minutes."
    )


def _deploy(messages: Messages) -> Step:
    service, version, environment = parse_target(graph_task(messages))
    return call("deploy_service", service=service, version=version, environment=environment)


def _deploy_outcome(messages: Messages) -> Step:
    result = latest_tool_result_text(messages)
    if result.startswith("Deployment rejected"):
        return say(f"Deployment cancelled. {result}")
    return say(f"Deployment complete. {result}")


def _report(messages: Messages) -> Step:
    service, version, environment = parse_target(graph_task(messages))
    outcome = upstream_output(messages, "deployer") or "the deployer reported nothing"
    return say(f"Deploy report for {service} {version} ({environment}): {outcome}")


@graph_def("deploy", description="Plan a service deployment, ask for approval in Slack, deploy, report")
def build() -> Graph:
    """planner → deployer (interrupt ``approve_deploy``) → reporter."""
    planner = Agent(
        name="planner",
        model=pick_model(offline=lambda: ScriptedModel([_plan])),
        system_prompt=(
            "You plan service deployments. From the task, name the service, version and environment "
            "and write a short numbered rollout plan. Do not deploy anything."
        ),
        callback_handler=None,
    )
    deployer = Agent(
        name="deployer",
        model=pick_model(offline=lambda: ScriptedModel([_deploy, _deploy_outcome])),
        system_prompt=(
            "You deploy services with the deploy_service tool, exactly once, using the service, version "
            "and environment of the original task. Then state plainly what happened; if the deployment "
            "was rejected, say it was cancelled and why."
        ),
        tools=[deploy_service],
        callback_handler=None,
    )
    reporter = Agent(
        name="reporter",
        model=pick_model(offline=lambda: ScriptedModel([_report])),
        system_prompt=(
            "You write a two-sentence summary of a deployment for the team channel: what was asked, "
            "what happened, and who decided."
        ),
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(planner, "planner")
    builder.add_node(deployer, "deployer")
    builder.add_node(reporter, "reporter")
    builder.add_edge("planner", "deployer")
    builder.add_edge("deployer", "reporter")
    builder.set_entry_point("planner")
    builder.set_graph_id("deploy")
    builder.set_max_node_executions(10)
    builder.set_execution_timeout(900)
    builder.set_node_timeout(300)
    return builder.build()
