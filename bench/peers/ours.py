"""Our side of the peer benchmark: the phases a child process runs through ``RunEngine``.

Why these phases: they are what the bot's processes do in one approval cycle. ``start``
is ``/graph run`` (record, announce, run to the ask, post the card); ``approve`` is a
click handled by a fresh process (decide-and-claim in one conditional write, then resume
from the stored snapshot, post the final message); ``resume`` is a process picking up a
run whose decision was recorded elsewhere, the path two processes race on in the
exactly-once measurement. The engine is driven directly (no Slack HTTP): Slack API calls
are counted by ``RecordingPublisher``, one per call the engine makes to Slack.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

from bench.peers.graph import GRAPH
from bot.services import GraphCatalog
from engine import RunEngine
from engine.records import Ask, Decision, MessageRef, Run, RunStatus, Verdict
from persistence.dynamodb import DynamoRunStore

TASK = "plan the release"
USER = "U0STARTER"
APPROVER = "U0APPROVER"
CHANNEL = "C0PEERS"


class RecordingPublisher:
    """Answers like Slack would and counts each call: one call here is one Slack API call."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        self.calls["chat.postMessage (announce)"] += 1
        return MessageRef(channel=channel, ts="1.0")

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        self.calls["chat.postMessage (card)"] += 1
        return MessageRef(channel=CHANNEL, ts=f"2.{ask.key}")

    async def update_card(self, *, run: Run, ask: Ask) -> None:
        self.calls["chat.update (card)"] += 1

    async def post_final(self, *, run: Run) -> MessageRef:
        self.calls["chat.postMessage (final)"] += 1
        return MessageRef(channel=CHANNEL, ts="3.0")

    async def post_notice(self, *, run: Run, ask: Ask, index: int) -> MessageRef:
        self.calls["chat.postMessage (notice)"] += 1
        return MessageRef(channel=CHANNEL, ts=f"4.{index}")

    async def find_posted(self, *, run: Run, what: str) -> MessageRef | None:
        self.calls["conversations.replies (find posted)"] += 1
        return None

    async def retract(self, *, ref: MessageRef) -> None:
        self.calls["chat.delete"] += 1


def _engine(*, table: str, bucket: str | None) -> tuple[RunEngine, DynamoRunStore, RecordingPublisher]:
    store = DynamoRunStore(table, bucket=bucket)
    catalog = GraphCatalog(extra_modules=["bench.peers.graph"])
    catalog.load()
    publisher = RecordingPublisher()
    engine = RunEngine(store=store, graphs=catalog, publisher=publisher, owner=f"peers-{os.getpid()}")
    return engine, store, publisher


async def start(args: dict[str, Any]) -> dict[str, Any]:
    engine, _, publisher = _engine(table=args["table"], bucket=args.get("bucket"))
    run = await engine.start(graph=GRAPH, task=TASK, user=USER, channel=CHANNEL)
    pending = run.pending_asks()
    ok = run.status is RunStatus.WAITING and len(pending) == 1
    return {
        "ok": ok,
        "status": run.status.value,
        "error": run.error,
        "run_id": run.run_id,
        "ask_key": pending[0].key if pending else None,
        "slack_calls": dict(publisher.calls),
    }


def _decision() -> Decision:
    return Decision(verdict=Verdict.APPROVE, user=APPROVER, at=time.time())


async def approve(args: dict[str, Any]) -> dict[str, Any]:
    """A click in a fresh process: decide-and-claim, then resume (``follow_up``), as the bot does."""
    engine, _, publisher = _engine(table=args["table"], bucket=args.get("bucket"))
    # The click carries its card (Slack's message), as in the bot: the clicker is then
    # shown to be in the run's channel without a lookup, and the write is one.
    card = MessageRef(channel=CHANNEL, ts=f"2.{args['ask_key']}")
    result = await engine.decide(
        run_id=args["run_id"], ask_key=args["ask_key"], decision=_decision(), claim=True, card=card
    )
    run = await engine.follow_up(result)
    return {
        "ok": bool(result.accepted and run is not None and run.status is RunStatus.COMPLETED),
        "status": run.status.value if run else None,
        "error": run.error if run else "run not found",
        "slack_calls": dict(publisher.calls),
    }


async def decide(args: dict[str, Any]) -> dict[str, Any]:
    """Record the approval without claiming the run (set-up of the two-resumer race)."""
    _, store, _ = _engine(table=args["table"], bucket=args.get("bucket"))
    # The approver shown to be in the run's channel, as a click's card shows them.
    store.decide(args["run_id"], args["ask_key"], _decision(), now=time.time(), member_of=frozenset({CHANNEL}))
    return {"ok": True}


async def resume(args: dict[str, Any], *, wait: Any) -> dict[str, Any]:
    """Pick up the approved run, after ``wait()`` (the barrier the racing processes share)."""
    engine, _, publisher = _engine(table=args["table"], bucket=args.get("bucket"))
    wait()
    run = await engine.resume(args["run_id"])
    return {
        "ok": run is not None,
        "status": run.status.value if run else None,
        "error": run.error if run else None,
        "slack_calls": dict(publisher.calls),
    }
