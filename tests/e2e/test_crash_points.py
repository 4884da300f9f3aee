"""A bot killed at each step of "durable before visible" leaves a run that is finished right.

``APPROVAL_BOT_CRASH_AT`` makes the real bot SIGKILL itself at a named step of its first
pass: ``saved`` (state saved, the card not posted), ``posted`` (the card is in Slack, its
reference not recorded) or ``recorded`` (the reference recorded). A new bot then sweeps
(every 0.2 s, with a 1 s delivery grace) and a person approves. Whatever the step, the
ask gets exactly one card (never a second one for what was already posted), the click
decides at once, the approved tool runs exactly once, and the pass that raised the ask
is never run again (the run is not touched between the crash and the click except to
record its card; a large conversation comes back as it was saved).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from engine.records import AskStatus, Run, RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    BotProcess,
    StartBot,
    all_text,
    cards,
    eventually,
    finished_message,
    live_buttons,
    run_of,
)

GRAPH_MODULES = "tests.support.graphs,tests.support.source_graphs"
FAST_SWEEP = ["--sweep-seconds", "1"]
LIVE = ["Approve", "Reject", "Reply"]


@dataclass(frozen=True)
class State:
    graph: str
    node: str
    marker: str  # what the approved tool writes


STATES = {
    "small": State(graph="guarded-write", node="writer", marker="writer:crash"),
    "large": State(graph="big-context", node="reader", marker="big"),  # ~1.6 MB of conversation
}


def posts_of(slack: LocalSlack, what: str) -> list[dict[str, Any]]:
    """Every chat.postMessage the bot made for ``what`` (an ask key, "final", "announcement"),
    by the metadata that names it: a message posted twice shows here even if one was deleted."""
    return [
        params
        for method, params in slack.calls
        if method == "chat.postMessage"
        and ((params.get("metadata") or {}).get("event_payload") or {}).get("what") == what
    ]


def cards_for(slack: LocalSlack, key: str) -> list[dict[str, Any]]:
    """The messages in the channel that are the card of ask ``key`` (header block ``card:<key>``)."""
    return [m for m in cards(slack) if any(b.get("block_id") == f"card:{key}" for b in m.get("blocks") or [])]


def blob_digest(snapshot: bytes | None) -> str:
    """sha256 of the megabyte tool result inside a saved big-context state (its longest string)."""
    assert snapshot is not None

    def strings(value: Any) -> Any:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)

    longest = max(strings(json.loads(snapshot)), key=len)
    assert len(longest) > 1_000_000, "the saved state holds the big tool result"
    return hashlib.sha256(longest.encode()).hexdigest()


async def crashed_at(
    point: str,
    state: State,
    *,
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: Any,
    grace: str,
    lease: str = "120",
) -> Run:
    """Start a bot that kills itself at ``point`` of the run's first pass; the run as stored then.

    ``grace`` matters here, not only in the bot that takes over: the writer of a record
    sets when a sweeper may deliver what it owes (``Run.sweep_at``, in the sweep index).
    """
    bot = await start_bot(
        backend=backend,
        extra_env={
            "GRAPH_MODULES": GRAPH_MODULES,
            "DELIVERY_GRACE_SECONDS": grace,
            "LEASE_SECONDS": lease,
            "APPROVAL_BOT_CRASH_AT": point,
        },
    )
    # The first pass runs next to the command's ack: the bot may die before the ack is out.
    with contextlib.suppress(aiohttp.ClientConnectionError):
        await user_for(bot).slash_command(text=f"run {state.graph} crash", user_id="U0ALICE", channel_id=CHANNEL)
    await died(bot)
    run = run_of(backend.open_store(), local_slack)  # with its state
    assert run.status is RunStatus.WAITING and run.lease_owner is None, "the pass was saved before the crash"
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.PENDING
    assert (ask.card is not None) == (point == "recorded"), f"crashed at {point}: card recorded = {ask.card}"
    assert len(posts_of(local_slack, ask.key)) == (0 if point == "saved" else 1)
    return run


async def died(bot: BotProcess, timeout: float = 60.0) -> None:
    await eventually(lambda: bot.process.poll() is not None, timeout=timeout, what="the bot to kill itself")
    assert bot.process.returncode == -signal.SIGKILL, f"exit {bot.process.returncode}:\n{bot.output()[-3000:]}"


async def approved_to_the_end(
    bot: BotProcess,
    crashed: Run,
    state: State,
    *,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: Any,
    markers_file: Path,
) -> None:
    """Click Approve on the ask's one live card; it decides at once and the run ends, once."""
    (ask,) = crashed.asks.values()
    (card,) = cards_for(local_slack, ask.key)
    assert live_buttons(card) == LIVE
    store = backend.open_store()

    await user_for(bot).click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    decided = await eventually(
        lambda: (run := store.load(crashed.run_id, snapshot=False)) and run.asks[ask.key].decision and run,
        timeout=5,
        what="the click to be decided at once",
    )
    assert decided.asks[ask.key].decision.user == "U0BOB"
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=60, what="the result")

    assert local_slack.ephemerals("U0BOB") == [], "the clicker was told nothing: no 'try again', no refusal"
    assert [r for r in local_slack.responses if r["user"] == "U0BOB"] == []
    assert markers_file.read_text().splitlines() == [state.marker], "the approved tool ran exactly once"
    final = await eventually(
        lambda: (run := store.load(crashed.run_id, snapshot=False)) and not run.owes_slack and run,
        timeout=10,
        what="the result's delivery to be recorded",
    )
    assert final.status is RunStatus.COMPLETED
    assert list(final.asks) == [ask.key], "no pass raised the ask again under another key"
    assert final.trail == (state.node,), "the node ran once, resumed from its saved state"
    assert final.sweep_at is None, "Slack shows everything; nothing is left to sweep"
    assert final.asks[ask.key].card is not None and final.asks[ask.key].card.ts == card["ts"]
    (shown,) = cards_for(local_slack, ask.key)
    assert live_buttons(shown) == [], "the card now shows the decision"
    assert len(posts_of(local_slack, ask.key)) == 1, "the card was posted once, ever"
    assert len(posts_of(local_slack, "final")) == 1 and len(posts_of(local_slack, "announcement")) == 1
    if state.graph == "big-context":
        digest = blob_digest(crashed.snapshot)
        assert f"blob sha256 {digest}" in all_text(done), "the conversation saved before the crash was resumed"


@pytest.mark.parametrize("state", ["small", "large"])
@pytest.mark.parametrize("point", ["saved", "posted", "recorded"])
async def test_a_crash_leaves_one_card_that_a_click_decides_at_once(
    point: str,
    state: str,
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: Any,
    markers_file: Path,
) -> None:
    shape = STATES[state]
    crashed = await crashed_at(
        point, shape, start_bot=start_bot, backend=backend, local_slack=local_slack, user_for=user_for, grace="1"
    )
    (ask,) = crashed.asks.values()

    bot = await start_bot(
        backend=backend, extra_env={"GRAPH_MODULES": GRAPH_MODULES, "DELIVERY_GRACE_SECONDS": "1"}, args=FAST_SWEEP
    )
    store = backend.open_store()
    delivered = await eventually(
        lambda: (run := store.load(crashed.run_id, snapshot=False)) and not run.owes_slack and run,
        timeout=30,
        what="the sweeper to deliver the card",
    )
    (card,) = await local_slack.wait_for(
        lambda: cards_for(local_slack, ask.key) or None, timeout=10, what="the card in Slack"
    )
    assert delivered.asks[ask.key].card is not None and delivered.asks[ask.key].card.ts == card["ts"]
    assert len(posts_of(local_slack, ask.key)) == 1, "a card the crashed bot posted was found, not posted again"
    assert len(cards(local_slack)) == 1 and live_buttons(card) == LIVE
    # Only the card was recorded since the crash (one write, none if it already was): no
    # claim, no pass, no save. A pass would also have moved updated_at.
    writes = 0 if point == "recorded" else 1
    assert delivered.version == crashed.version + writes, "nothing but the card's reference was written"
    assert delivered.updated_at == crashed.updated_at, "no pass ran again"
    assert delivered.status is RunStatus.WAITING and delivered.lease_owner is None
    assert list(delivered.asks) == [ask.key]
    assert not markers_file.exists(), "the tool has not run: it waits for the approval"

    await approved_to_the_end(
        bot,
        crashed,
        shape,
        backend=backend,
        local_slack=local_slack,
        user_for=user_for,
        markers_file=markers_file,
    )


@pytest.mark.parametrize("state", ["small", "large"])
async def test_a_card_posted_but_not_recorded_decides_at_once_before_any_sweep(
    state: str,
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: Any,
    markers_file: Path,
) -> None:
    """Crash at ``posted`` with the default 60 s grace: nobody has recorded the card when a
    person clicks it. The click records where it came from and decides and resumes at once."""
    shape = STATES[state]
    crashed = await crashed_at(
        "posted", shape, start_bot=start_bot, backend=backend, local_slack=local_slack, user_for=user_for, grace="60"
    )
    bot = await start_bot(backend=backend, extra_env={"GRAPH_MODULES": GRAPH_MODULES, "DELIVERY_GRACE_SECONDS": "60"})
    stored = backend.open_store().load(crashed.run_id, snapshot=False)
    assert stored is not None and next(iter(stored.asks.values())).card is None, "not recorded before the click"

    await approved_to_the_end(
        bot,
        crashed,
        shape,
        backend=backend,
        local_slack=local_slack,
        user_for=user_for,
        markers_file=markers_file,
    )


async def test_a_crash_after_the_save_is_delivered_at_the_passs_lease_end(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    """With a lease that ends within two graces of the pause, what the save owes Slack is the
    pass's until the lease's end: the sweep key the start set stays (no index write), and a
    sweeper still posts the card once the holder is gone, then, not before."""
    crashed = await crashed_at(
        "saved",
        STATES["small"],
        start_bot=start_bot,
        backend=backend,
        local_slack=local_slack,
        user_for=user_for,
        grace="5",
        lease="10",
    )
    # The bot's grace is 5 s (this process has its own): the lease ends within two graces of the save.
    assert crashed.held_until is not None and 5 <= crashed.held_until - crashed.updated_at <= 10
    (ask,) = crashed.asks.values()
    bot = await start_bot(
        backend=backend,
        extra_env={"GRAPH_MODULES": GRAPH_MODULES, "DELIVERY_GRACE_SECONDS": "5", "LEASE_SECONDS": "10"},
        args=FAST_SWEEP,
    )
    store = backend.open_store()
    delivered = await eventually(
        lambda: (run := store.load(crashed.run_id, snapshot=False)) and not run.owes_slack and run,
        timeout=30,
        what="the sweeper to deliver the card",
    )
    assert time.time() >= crashed.held_until, "not before the pass's lease ended"
    assert len(posts_of(local_slack, ask.key)) == 1 and delivered.asks[ask.key].card is not None
    assert bot.process.poll() is None
