"""Strands' side: the very graph ours runs, persisted by ``SnapshotSessionManager`` on
``strands-dynamodb-storage``'s ``DynamoDBStorage``.

Why it looks like this: it is how Strands itself persists a Graph across processes. The
session manager restores the graph's latest snapshot at the first invocation in a
process and writes it after every node and at the end of each invocation. A fresh
process resumes by invoking the rebuilt graph with ``interruptResponse`` blocks for the
interrupt the first process raised (its id is deterministic). The storage's table
(``pk``/``sk``) is created by the benchmark; with a bucket, the storage's own S3 offload
(``s3_bucket``, over 380,000 bytes) is used, and without one a larger value is refused.
The variant ``strands-z`` turns on the storage's own ``compression="gzip"``.

Only importable with the ``peers`` extra installed (``bash bench/peers/run.sh``).
"""

from __future__ import annotations

from typing import Any

import boto3

from bench.peers.graph import build_graph

TASK = "plan the release"


def _graph(args: dict[str, Any]) -> Any:
    from strands.session import SnapshotSessionManager
    from strands_dynamodb_storage import DynamoDBStorage  # type: ignore[import-not-found,import-untyped,unused-ignore]

    storage = DynamoDBStorage(
        args["table"],
        client=boto3.client("dynamodb"),
        s3_bucket=args.get("bucket") or None,
        s3_client=boto3.client("s3") if args.get("bucket") else None,
        compression="gzip" if args.get("compress") else "none",
    )
    manager = SnapshotSessionManager(args["thread"], storage=storage)
    return build_graph(session_manager=manager)


async def start(args: dict[str, Any]) -> dict[str, Any]:
    from strands.multiagent.base import Status

    result = await _graph(args).invoke_async(TASK)
    interrupts = list(result.interrupts or [])
    ok = result.status == Status.INTERRUPTED and len(interrupts) == 1
    return {"ok": ok, "status": str(result.status.value), "interrupt_id": interrupts[0].id if interrupts else None}


async def _resume(args: dict[str, Any], graph: Any) -> dict[str, Any]:
    from strands.multiagent.base import Status

    answer = {"decision": "approve", "text": None, "user": "U0APPROVER"}
    responses = [{"interruptResponse": {"interruptId": args["interrupt_id"], "response": answer}}]
    result = await graph.invoke_async(responses)
    ran = "report" in result.results
    return {"ok": result.status == Status.COMPLETED and ran, "status": f"{result.status.value}, report ran: {ran}"}


async def approve(args: dict[str, Any]) -> dict[str, Any]:
    return await _resume(args, _graph(args))


async def resume(args: dict[str, Any], *, wait: Any) -> dict[str, Any]:
    graph = _graph(args)
    wait()
    return await _resume(args, graph)


def create_table(*, client: Any, table: str) -> None:
    """The storage's table: ``pk``/``sk`` in lower case, on demand."""
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
    )
