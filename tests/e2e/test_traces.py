"""Traces through the real server (docs/traces.md): ``approval-bot serve`` with Strands'
telemetry set up from a graph module, one approval cycle over signed HTTP, and the spans it
exported: the two passes, Strands' spans under them, and the ask's span between them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.tracing import ask_span_id
from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor, cards, finished_message, run_of


async def test_an_approval_is_traced_from_the_pass_that_asked_to_the_pass_that_went_on(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, tmp_path: Path
) -> None:
    exported = tmp_path / "spans.jsonl"
    env = {"GRAPH_MODULES": "tests.support.graphs,tests.support.traced", "APPROVAL_BOT_TEST_SPANS": str(exported)}
    user = user_for(await start_bot(backend=backend, extra_env=env))
    await user.slash_command(text="run guarded-write hello", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the card")
    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final message")
    run = run_of(backend.open_store(), local_slack)
    (key,) = run.asks

    spans: list[dict[str, Any]] = [json.loads(line) for line in exported.read_text().splitlines()]
    passes = sorted((s for s in spans if s["name"] == "approval-bot pass"), key=lambda s: s["start_time"])
    (ask,) = [s for s in spans if s["name"] == "approval-bot ask"]
    raising, resuming = passes
    assert all(p["attributes"]["approval_bot.run_id"] == run.run_id for p in passes)
    assert ask["parent_id"] == raising["context"]["span_id"], "under the pass that raised it"
    assert ask["context"]["trace_id"] == raising["context"]["trace_id"]
    assert ask["context"]["span_id"] == f"0x{ask_span_id(run.run_id, key):016x}"
    assert [link["context"]["span_id"] for link in resuming["links"]] == [ask["context"]["span_id"]]
    assert [link["context"]["span_id"] for link in ask["links"]] == [resuming["context"]["span_id"]]
    said = {k: ask["attributes"][f"approval_bot.ask.{k}"] for k in ("name", "decider", "outcome")}
    assert said == {"name": "approve_write_writer", "decider": "U0ALICE", "outcome": "approved"}
    graphs = [s for s in spans if s["name"] == "invoke_graph"]
    assert sorted(g["parent_id"] for g in graphs) == sorted(p["context"]["span_id"] for p in passes)
