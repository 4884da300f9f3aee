"""Edit before approve, through real HTTP: a ``BeforeToolCallEvent`` gate's card → Edit →
the pre-filled modal → inline errors for bad input → the tool runs with the edited input.

Runs on the embedded store; the graph is ``tool-gate-test`` in ``tests/support/graphs.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, RunStatus, Verdict
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    StartBot,
    UserFor,
    all_text,
    cards,
    finished_message,
    live_buttons,
    run_of,
)

PROPOSED = {"service": "billing", "replicas": 3}
EDITED = {"service": "billing-canary", "replicas": 5}


async def _card(slack: LocalSlack, user: LocalSlackUser) -> dict[str, Any]:
    response = await user.slash_command(text="run tool-gate-test billing", user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200
    (card,) = await slack.wait_for(lambda: cards(slack), timeout=30, what="the gate's card")
    return card


def _typed(view: dict[str, Any]) -> str:
    (block,) = [b for b in view["blocks"] if b["type"] == "input"]
    assert block["block_id"] == TEXT_BLOCK_ID
    return str(block["element"].get("initial_value", ""))


async def _open_edit(slack: LocalSlack, user: LocalSlackUser, card: dict[str, Any]) -> dict[str, Any]:
    await user.click(message=card, label="Edit", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await slack.wait_for(lambda: slack.open_views("U0BOB"), timeout=10, what="the edit modal")
    return view


async def _submit(user: LocalSlackUser, view: dict[str, Any], text: str) -> Any:
    response = await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: text}}, user_id="U0BOB")
    assert response.status == 200
    return response.body


async def test_edit_checks_input_inline_then_approves_with_a_diff_on_the_card(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    card = await _card(local_slack, user)
    assert live_buttons(card) == ["Approve", "Reject", "Reply", "Edit"]
    shown = all_text(card)
    assert "`set_replicas`" in shown and "*replicas*\n3" in shown, shown

    view = await _open_edit(local_slack, user, card)
    assert view["callback_id"] == "ask:edit"
    assert json.loads(_typed(view)) == PROPOSED, "pre-filled with the input the agent proposed"
    assert set(json.loads(view["private_metadata"])) == {"r", "a", "c", "t"}, "ids only"

    body = await _submit(user, view, '{"service": "billing", replicas: 5}')
    assert body["response_action"] == "errors" and "not valid JSON" in body["errors"][TEXT_BLOCK_ID]
    body = await _submit(user, view, "[1, 2]")
    assert "must be a JSON object" in body["errors"][TEXT_BLOCK_ID]
    body = await _submit(user, view, '{"service": "billing", "replicas": "five"}')
    assert "schema" in body["errors"][TEXT_BLOCK_ID] and "replicas" in body["errors"][TEXT_BLOCK_ID]
    assert local_slack.open_views("U0BOB"), "a refused edit keeps the modal open"
    assert run_of(sqlite_backend.open_store(), local_slack).status is RunStatus.WAITING, "nothing decided yet"

    assert await _submit(user, view, json.dumps(EDITED)) in ("", None, {})
    assert not local_slack.open_views("U0BOB")
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final output")
    assert done["thread_ts"] == card["thread_ts"]

    decided = local_slack.message(CHANNEL, card["ts"])
    assert decided is not None and live_buttons(decided) == []
    text = all_text(decided)
    assert "Approved with edits by <@U0BOB>" in text
    assert 'changed `service`: `"billing"` → `"billing-canary"`' in text, text
    assert "changed `replicas`: `3` → `5`" in text, text
    run = run_of(sqlite_backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.CONSUMED
    assert ask.decision is not None and ask.decision.verdict is Verdict.EDIT
    assert ask.decision.edited_input == EDITED


async def test_the_tool_runs_with_the_edited_input(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    view = await _open_edit(local_slack, user, await _card(local_slack, user))
    await _submit(user, view, json.dumps(EDITED))
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final output")

    assert markers_file.read_text().splitlines() == ["set_replicas " + json.dumps(EDITED, sort_keys=True)]
    assert "ops: scaled billing-canary to 5" in all_text(done)


async def test_edit_on_a_decided_card_says_who_decided(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    card = await _card(local_slack, user)
    await user.click(message=card, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final output")

    await user.click(message=card, label="Edit", user_id="U0BOB", channel_id=CHANNEL, allow_stale=True)
    (notice,) = await local_slack.wait_for(lambda: local_slack.ephemerals("U0BOB"), timeout=10, what="a notice")
    assert "Already approved by <@U0CAROL>" in notice["text"]
    assert local_slack.open_views("U0BOB") == [], "no modal for a decided ask"
    assert markers_file.read_text().splitlines() == ["set_replicas " + json.dumps(PROPOSED, sort_keys=True)]
