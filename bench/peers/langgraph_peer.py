"""LangGraph's side: the same three nodes on ``langgraph-checkpoint-aws``'s ``DynamoDBSaver``.

Why it looks like this: it is the idiomatic LangGraph human-in-the-loop cycle. ``approval``
calls ``interrupt()``; a fresh process resumes the thread with ``Command(resume=...)``, the
interrupted node runs again from its start and ``interrupt()`` returns the answer.
Durability is LangGraph's default (``"async"``: every step's checkpoint is written, in the
background, and all are written before ``invoke`` returns). The saver's table (``PK``/``SK``)
is created by the benchmark: the library never creates it. With a bucket, the saver's own
S3 offload (``s3_offload_config``) is used; it moves items over 350 KB to S3.

Only importable with the ``peers`` extra installed (``bash bench/peers/run.sh``).
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

from bench.peers.graph import plan_text, record_report, state_bytes

TASK = "plan the release"


class CycleState(TypedDict, total=False):
    topic: str
    plan: str
    approved: bool
    report: str


def _plan(state: CycleState) -> dict[str, Any]:
    return {"plan": plan_text(state_bytes())}


def _approval(state: CycleState) -> dict[str, Any]:
    from langgraph.types import interrupt  # type: ignore[import-not-found,import-untyped,unused-ignore]

    answer = interrupt({"node": "approval", "plan_bytes": len(state.get("plan", ""))})
    return {"approved": isinstance(answer, dict) and answer.get("decision") == "approve"}


def _report(state: CycleState) -> dict[str, Any]:
    if not state.get("approved"):
        return {"report": "rejected"}
    line = f"report pid={os.getpid()}"
    record_report(line)
    return {"report": line}


def _graph(args: dict[str, Any]) -> Any:
    from langgraph.graph import END, START, StateGraph  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from langgraph_checkpoint_aws import DynamoDBSaver  # type: ignore[import-not-found,import-untyped,unused-ignore]

    endpoint = os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    offload = None
    if args.get("bucket"):
        offload = {"bucket_name": args["bucket"], "endpoint_url": os.environ["AWS_ENDPOINT_URL_S3"]}
    saver = DynamoDBSaver(
        table_name=args["table"],
        region_name=os.environ["AWS_REGION"],
        endpoint_url=endpoint,
        s3_offload_config=offload,
        enable_checkpoint_compression=bool(args.get("compress")),
    )
    builder = StateGraph(CycleState)
    builder.add_node("plan", _plan)
    builder.add_node("approval", _approval)
    builder.add_node("report", _report)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "approval")
    builder.add_edge("approval", "report")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=saver)


def _config(args: dict[str, Any]) -> dict[str, Any]:
    return {"configurable": {"thread_id": args["thread"]}}


async def start(args: dict[str, Any]) -> dict[str, Any]:
    out = _graph(args).invoke({"topic": TASK}, _config(args))
    interrupts = out.get("__interrupt__") or []
    return {"ok": len(interrupts) == 1, "status": "interrupted" if interrupts else "not interrupted"}


def _resume(args: dict[str, Any], graph: Any) -> dict[str, Any]:
    from langgraph.types import Command  # type: ignore[import-not-found,import-untyped,unused-ignore]

    answer = {"decision": "approve", "text": None, "user": "U0APPROVER"}
    out = graph.invoke(Command(resume=answer), _config(args))
    done = bool(out.get("report")) and not out.get("__interrupt__")
    return {"ok": done, "status": "completed" if done else f"not completed: {sorted(out)}"}


async def approve(args: dict[str, Any]) -> dict[str, Any]:
    return _resume(args, _graph(args))


async def resume(args: dict[str, Any], *, wait: Any) -> dict[str, Any]:
    graph = _graph(args)
    wait()
    return _resume(args, graph)


def create_table(*, client: Any, table: str) -> None:
    """The saver's table as its CloudFormation sample defines it (``PK``/``SK``, on demand)."""
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
    )
