"""``cleanup``: find stale cloud resources and delete them only after a human confirms.

What a team uses it for: ``/graph run cleanup preview environments older than 14 days``.
The ``cleaner`` agent lists matching resources freely (read-only), then asks to delete
them. The deletion is gated by Strands' own ``HumanInTheLoop`` intervention rather than
by code in the tool: this is the pattern for teams that already guard tools with
``interventions=[HumanInTheLoop(...)]`` and want those approvals in Slack.

Graph: a single node ``cleaner``. Interrupt: ``strands:human-in-the-loop`` (raised by
``HumanInTheLoop`` before ``delete_resources`` runs; ``list_resources`` is allow-listed).
Its reason is HumanInTheLoop's prompt, a string such as
``Approve "delete_resources"?\\n  Input: {"resource_ids": [...]}``. It approves on
``"yes"`` (the bot's Approve) and denies on anything else: the tool then does not run and
the agent sees ``CONFIRMATION_FAILED: ...`` as the tool's (error) result. The offline
script then says in plain words that nothing was deleted and what was kept; the bot's
final message names who rejected the deletion and why (HumanInTheLoop does not tell the
agent).

The inventory and the deletion are simulated (``DELETED`` records what was deleted).
"""

from __future__ import annotations

import json
import re
from typing import Any

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages
from strands.vended_interventions.hitl import HumanInTheLoop

from graph_defs.models import pick_model
from graph_defs.registry import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, graph_task, latest_tool_result_text, say

INTERRUPT_NAME = "strands:human-in-the-loop"

_INVENTORY: tuple[dict[str, Any], ...] = (
    {"id": "preview-env-1842", "kind": "preview", "age_days": 41},
    {"id": "preview-env-1907", "kind": "preview", "age_days": 17},
    {"id": "preview-env-1990", "kind": "preview", "age_days": 2},
    {"id": "snapshot-db-2024-01", "kind": "snapshot", "age_days": 300},
    {"id": "snapshot-db-2025-06", "kind": "snapshot", "age_days": 12},
    {"id": "bucket-tmp-exports", "kind": "bucket", "age_days": 95},
)
"""A fixed, simulated inventory: the example must never touch a real account."""

DELETED: list[str] = []
"""Resource ids deleted in this process (simulated). Tests read it to prove a denial deleted nothing."""

_AGE = re.compile(r"(\d+)\s*days?", re.IGNORECASE)
_KINDS = {"preview": "preview", "environment": "preview", "snapshot": "snapshot", "bucket": "bucket"}


def parse_request(task: str) -> tuple[str, int]:
    """Resource kind (``any`` when not said) and minimum age in days (default 30) from the task."""
    words = re.findall(r"[a-z]+", task.lower())
    kind = next((_KINDS[w.rstrip("s")] for w in words if w.rstrip("s") in _KINDS), "any")
    age = _AGE.search(task)
    return kind, int(age[1]) if age else 30


@tool
def list_resources(kind: str = "any", older_than_days: int = 30) -> str:
    """List cloud resources of a kind that are older than a number of days. Read-only.

    Args:
        kind: "preview", "snapshot", "bucket" or "any".
        older_than_days: Only list resources at least this old.
    """
    found = [
        item for item in _INVENTORY if (kind == "any" or item["kind"] == kind) and item["age_days"] >= older_than_days
    ]
    return json.dumps({"resources": found})


@tool
def delete_resources(resource_ids: list[str]) -> str:
    """Delete cloud resources by id. Irreversible: a human must approve it.

    Args:
        resource_ids: The ids returned by list_resources.
    """
    known = {item["id"] for item in _INVENTORY}
    deleted = [rid for rid in resource_ids if rid in known and rid not in DELETED]
    DELETED.extend(deleted)
    unknown = [rid for rid in resource_ids if rid not in known]
    note = f" Unknown ids skipped: {', '.join(unknown)}." if unknown else ""
    return f"Deleted {len(deleted)} resource(s): {', '.join(deleted) or 'none'}.{note}"


def _list(messages: Messages) -> Step:
    kind, age = parse_request(graph_task(messages))
    return call("list_resources", kind=kind, older_than_days=age)


def _delete(messages: Messages) -> Step:
    try:
        resources = json.loads(latest_tool_result_text(messages))["resources"]
    except (ValueError, KeyError, TypeError):
        return say("Could not read the resource list; nothing was deleted.")
    if not resources:
        return say("No matching resources found; nothing to delete.")
    return call("delete_resources", resource_ids=[item["id"] for item in resources])


def _outcome(messages: Messages) -> Step:
    result = latest_tool_result_text(messages)
    if result.startswith("Deleted"):
        return say(f"Cleanup done. {result}")
    # Denied: HumanInTheLoop's result is its own protocol text, not something to show people.
    kept = _asked_to_delete(messages)
    listed = f" Kept {len(kept)} resource(s): {', '.join(kept)}." if kept else ""
    return say(f"Cleanup cancelled: deletion was not approved, nothing was deleted.{listed}")


def _asked_to_delete(messages: Messages) -> list[str]:
    """The ids the last ``delete_resources`` call asked for (what a denial kept)."""
    for message in reversed(messages):
        for block in message["content"]:
            use = block.get("toolUse")
            if use and use["name"] == "delete_resources" and isinstance(use["input"], dict):
                return [str(rid) for rid in use["input"].get("resource_ids") or []]
    return []


@graph_def("cleanup", description="List stale resources and delete them after a HumanInTheLoop approval")
def build() -> Graph:
    """A single ``cleaner`` agent; ``delete_resources`` is gated by ``HumanInTheLoop``."""
    cleaner = Agent(
        name="cleaner",
        model=pick_model(offline=lambda: ScriptedModel([_list, _delete, _outcome])),
        system_prompt=(
            "You clean up stale cloud resources. First call list_resources with the kind and age from the "
            "task. Then call delete_resources once with the ids found. Finally say what was deleted, or that "
            "nothing was deleted if the deletion was not approved."
        ),
        tools=[list_resources, delete_resources],
        interventions=[HumanInTheLoop(allowed_tools=["list_resources"])],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(cleaner, "cleaner")
    builder.set_entry_point("cleaner")
    builder.set_graph_id("cleanup")
    builder.set_max_node_executions(5)
    builder.set_execution_timeout(600)
    builder.set_node_timeout(300)
    return builder.build()
