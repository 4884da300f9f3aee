"""``incident``: triage an incident from production logs that a person checks first.

What a team uses it for: ``/graph run incident billing errors since the deploy, last 60
minutes``. An investigator queries the service's logs, which are read-only but
sensitive: they can hold customer data, tokens, or simply be the wrong slice. The
``query_logs`` tool is wrapped with ``review_after``, so before anything the query
returned reaches the model (and from there a summary posted in the channel), the on-call
person sees the result on a card and decides:

* **Approve**: the investigator gets the logs and writes its findings.
* **Reject** (with a reason, e.g. "contains card numbers"): the logs never enter the
  conversation; the investigator reports that they were withheld and why.
* **Reply** (e.g. "ignore the 502s, that was the LB drain"): the logs go through with the
  reviewer's note, which the findings quote.
* **Retry**: the query runs again (logs still being ingested, say) and a new card asks
  about the new result. The old result never reaches the model.

The query is never run again when the run resumes, in whatever process: the result the
reviewer saw is the result the agent gets.

Graph: ``investigator`` (``query_logs`` under review, ask ``review:query_logs:<attempt>``)
→ ``reporter``. The log store is simulated (``QUERIES`` records every real query, the
lines are made up from the service name); replace ``_fetch_logs`` with your log store's
client. It keeps 24 hours: asking for more raises, which the card shows as an error.
"""

from __future__ import annotations

import re
from typing import Any

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages

from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.review import review_after
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say, upstream_output

RETENTION_MINUTES = 24 * 60

QUERIES: list[dict[str, Any]] = []
"""Log queries really run in this process (simulated). Tests read it to prove a resume never re-queries."""

_WINDOW = re.compile(r"last\s+(\d+)\s*(m|min|minutes?|h|hours?)\b", re.IGNORECASE)
_SKIP = {"incident", "triage", "investigate", "the", "please", "on", "for", "in"}


class LogRetentionError(ValueError):
    """The log store does not keep logs that old."""


def parse_incident(task: str) -> tuple[str, int]:
    """The service and the window in minutes named in a task like ``billing errors, last 2h``."""
    words = [w for w in re.findall(r"[a-z][\w-]*", task.lower()) if w not in _SKIP]
    service = words[0] if words else "service"
    match = _WINDOW.search(task)
    minutes = 30
    if match:
        minutes = int(match[1]) * (60 if match[2].lower().startswith("h") else 1)
    return service, minutes


def _fetch_logs(*, service: str, minutes: int) -> str:
    """The (simulated) log store: a few error lines; each query is numbered so a retry shows."""
    if minutes > RETENTION_MINUTES:
        raise LogRetentionError(f"logs are kept for {RETENTION_MINUTES} minutes, asked for {minutes}")
    QUERIES.append({"service": service, "minutes": minutes})
    n = len(QUERIES)
    return "\n".join(
        [
            f"query #{n}: {service}, last {minutes} minutes, level>=error",
            f"ERROR {service}-api  upstream timeout calling {service}-db (p99 4.2s)",
            f"ERROR {service}-api  502 from load balancer, 37 requests",
            f"WARN  {service}-worker retry queue depth 1204",
        ]
    )


@tool
def query_logs(service: str, minutes: int = 30) -> str:
    """Read the recent error logs of a service (read-only; a person checks the result first).

    Args:
        service: The service whose logs to read, e.g. "billing".
        minutes: How far back to read, in minutes (the store keeps 24 hours).
    """
    return _fetch_logs(service=service, minutes=minutes)


def _query(messages: Messages) -> Step:
    service, minutes = parse_incident(graph_task(messages))
    return call("query_logs", service=service, minutes=minutes)


def _findings(messages: Messages) -> Step:
    logs = latest_tool_result_text(messages)
    if logs.startswith("Rejected by"):
        return say(f"Logs withheld by the reviewer, so no findings from them. {logs.splitlines()[0]}")
    if logs.startswith("Error"):
        return say(f"The log query failed: {logs.splitlines()[0]}")
    errors = [line for line in logs.splitlines() if line.startswith("ERROR")]
    notes = [line for line in logs.splitlines() if line.startswith("Reviewer ")]
    text = f"Findings: {len(errors)} error patterns. " + " ".join(e.split("  ", 1)[-1] for e in errors)
    return say(" ".join([text, *notes]))


def _report(messages: Messages) -> Step:
    service, _ = parse_incident(graph_task(messages))
    findings = upstream_output(messages, "investigator") or "the investigator reported nothing"
    return say(f"Incident report for {service}: {findings}")


@graph_def("incident", description="Triage an incident from production logs a person checks first (review_after)")
def build() -> Graph:
    """investigator (``query_logs`` reviewed after it ran) → reporter."""
    investigator = Agent(
        name="investigator",
        model=pick_model(offline=lambda: ScriptedModel([_query, _findings])),
        system_prompt=(
            "You triage incidents. Call query_logs once for the service and time window in the task, "
            "then list the error patterns you see. If the result says the logs were rejected, do not "
            "guess: say they were withheld and why. Quote any reviewer's note."
        ),
        tools=[review_after(query_logs)],
        callback_handler=None,
    )
    reporter = Agent(
        name="reporter",
        model=pick_model(offline=lambda: ScriptedModel([_report])),
        system_prompt="You write a three-line incident report from the investigator's findings.",
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(investigator, "investigator")
    builder.add_node(reporter, "reporter")
    builder.add_edge("investigator", "reporter")
    builder.set_entry_point("investigator")
    builder.set_graph_id("incident")
    builder.set_max_node_executions(10)
    builder.set_execution_timeout(600)
    return builder.build()
