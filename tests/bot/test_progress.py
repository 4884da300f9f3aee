"""The live status message's own rules: pacing, and nothing sent after the pass closed it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from slack_sdk.models.metadata import Metadata

import bot.progress as live_module
from bot.progress import Pacer, SlackLiveProgress, StreamSupport
from engine.progress import NodeProgress, NodeState
from engine.records import MessageRef, Run, RunStatus


class StuckClient:
    """A Slack client whose posts hang (a long Retry-After), counting what was sent."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("chat.postMessage")
        await asyncio.sleep(3600)
        return {"channel": "C1", "ts": "1.0"}

    async def chat_update(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("chat.update")
        return {"ok": True}


def _run() -> Run:
    now = time.time()
    return Run(
        run_id="r" * 16,
        graph="g",
        task="t",
        started_by="U1",
        status=RunStatus.RUNNING,
        version=1,
        created_at=now,
        updated_at=now,
        thread=MessageRef(channel="C1", ts="0.5"),
    )


async def test_nothing_is_sent_after_close_even_when_slack_is_stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_module, "CLOSE_BUDGET", 0.1)
    client = StuckClient()

    async def team() -> str:
        return ""

    live = SlackLiveProgress(
        client=client,  # type: ignore[arg-type]
        run=_run(),
        support=StreamSupport(enabled=False),
        team_id=team,
        metadata=Metadata(event_type="x", event_payload={}),
        pacer=Pacer(),
    )
    live.show((NodeProgress(node_id="a", state=NodeState.RUNNING),))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    assert await live.close() is None  # the post never came back: no message to hand on
    assert time.monotonic() - started < 1.0
    live.show((NodeProgress(node_id="a", state=NodeState.DONE),))  # a late event after the pass
    await asyncio.sleep(0.1)
    assert client.calls == ["chat.postMessage"]


def test_the_pacer_spaces_edits_of_one_message() -> None:
    pacer = Pacer(interval=1.0)
    assert pacer.wait_for("1.0") == 0.0
    pacer.edited("1.0")
    assert 0.9 < pacer.wait_for("1.0") <= 1.0
    assert pacer.wait_for("2.0") == 0.0 and pacer.wait_for(None) == 0.0
