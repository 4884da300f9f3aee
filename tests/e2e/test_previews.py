"""Previews the approval binds to, through the real server on both stores.

The graph is ``payout-preview`` (``tests.support.graphs``): a gated ``send_payout(amount)``
whose preview says what the payee gets at the exchange rate in ``<markers>.rate``. The card
shows that preview; when the rate moves between the ask and the approval, the approval is
not used: the old card is void and a new card shows the new preview.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, Closed
from localslack import LocalSlack
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    StartBot,
    UserFor,
    all_text,
    cards,
    eventually,
    finished_message,
    run_of,
)


def _answers(markers: Path) -> list[dict[str, Any]]:
    path = Path(str(markers) + ".answers")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _ran(markers: Path) -> list[str]:
    return markers.read_text().splitlines() if markers.exists() else []


def _live(slack: LocalSlack) -> list[dict[str, Any]]:
    return [m for m in cards(slack) if any(b.get("type") == "actions" for b in m.get("blocks") or [])]


async def test_an_approval_binds_to_the_preview_its_card_showed(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    rate = Path(str(markers_file) + ".rate")
    rate.write_text("1.10")
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run payout-preview 1000", user_id="U0DAVE", channel_id=CHANNEL)
    (first,) = await local_slack.wait_for(lambda: _live(local_slack), timeout=30, what="the payout's card")
    assert "What will happen" in all_text(first) and "1100.00 USD" in all_text(first)
    assert [b["type"] for b in first["blocks"]].count("table") == 1, "a dict preview is a table"
    labels = [e["text"]["text"] for b in first["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert "Edit" not in labels, "an edited call's preview was never shown: no Edit under a preview"

    # A reply reading yes is not bound to what will happen: refused, nothing recorded.
    await user.click(message=first, label="Reply", user_id="U0ALICE", channel_id=CHANNEL)
    views = await local_slack.wait_for(lambda: local_slack.open_views("U0ALICE"), timeout=10, what="the reply modal")
    response = await user.submit_view(
        view=views[-1], values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "yes"}}, user_id="U0ALICE"
    )
    assert "use Approve" in json.dumps(response.body), response.body
    (pending,) = run_of(backend.open_store(), local_slack).asks.values()
    assert pending.status is AskStatus.PENDING and pending.decision is None

    rate.write_text("1.30")  # the world moved after the card was posted
    await user.click(message=first, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)

    def second_card() -> list[dict[str, Any]]:
        return [m for m in _live(local_slack) if m["ts"] != first["ts"]]

    (second,) = await local_slack.wait_for(second_card, timeout=30, what="a new card with the new preview")
    assert "1300.00 USD" in all_text(second) and "1100.00" not in all_text(second)
    assert _ran(markers_file) == [] and _answers(markers_file) == [], "the void approval never reached the tool"

    def void_card() -> dict[str, Any] | None:
        old = next(m for m in cards(local_slack) if m["ts"] == first["ts"])
        return old if "changed before the step ran" in all_text(old) else None

    old = await eventually(void_card, what="the old card to say it is void")
    assert not any(b["type"] == "actions" for b in old["blocks"]) and "1100.00 USD" in all_text(old)
    run = run_of(backend.open_store(), local_slack)
    void = [a for a in run.asks.values() if a.status is AskStatus.OBSOLETE]
    assert [(a.closed, a.decision) for a in void] == [(Closed.CHANGED, None)], "closed as changed, answer discarded"
    assert [e.kind for e in run.audit].count("preview_changed") == 1

    await user.click(message=second, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final message")
    assert _ran(markers_file) == ["send_payout 1000"], "paid once, after the approval of what it does now"
    (answer,) = _answers(markers_file)
    assert answer["user"] == "U0BOB" and answer["decision"] == "approve"


async def test_a_workspace_without_tables_gets_the_preview_as_fields(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    local_slack.lacking_blocks.add("table")
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run payout-preview 20", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: _live(local_slack), timeout=30, what="the payout's card")
    assert not any(b["type"] == "table" for b in card["blocks"])
    assert "What will happen" in all_text(card) and "20.00 USD" in all_text(card), all_text(card)
    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final message")
    await eventually(lambda: "Approved" in all_text(cards(local_slack)[0]) or None, what="the decided card")
    assert not any(b["type"] == "table" for b in cards(local_slack)[0]["blocks"]), "its update is plain too"
    assert _ran(markers_file) == ["send_payout 20"]
    refused = [r["errors"] for r in local_slack.rejected]
    assert refused == [["unsupported block type: 'table' [json-pointer:/blocks/4/type]"]], "refused once, then plain"
    local_slack.rejected.clear()  # the one refusal this test is about
