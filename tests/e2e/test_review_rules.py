"""Hostile review of rules by content, through the real server on both stores.

The graph is ``payout-rules`` (``tests.support.graphs``): over 1,000,000 is rejected by the
rule, 1,000 or more asks Alice, under 50 is approved by the rule, the rest asks Bob (whose
card offers Edit). The tool marks each payout it made in the markers file.
"""

from __future__ import annotations

import json
from pathlib import Path

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, Closed, RunStatus
from localslack import LocalSlack
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


def _markers(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_an_edit_that_moves_the_call_to_another_rule_is_not_sent(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    """Bob may approve payouts from 50 to 999 and may Edit them: an Edit to 2,000,000 must
    not pay 2,000,000 on Bob's word (that amount is the "over the limit" rule's, which
    rejects it); it is asked again, about the call the agent proposed. An Edit that stays
    under Bob's rule is sent."""
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run payout-rules 100", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="Bob's card")
    assert "Edit" in live_buttons(card)

    async def edit(card_: dict[str, object], amount: int) -> None:
        await user.click(message=card_, label="Edit", user_id="U0BOB", channel_id=CHANNEL)
        (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")
        values = {TEXT_BLOCK_ID: {TEXT_ACTION_ID: json.dumps({"amount": amount})}}
        response = await user.submit_view(view=view, values=values, user_id="U0BOB")
        assert response.status == 200

    await edit(card, 2_000_000)
    (again,) = await local_slack.wait_for(
        lambda: [c for c in cards(local_slack) if c["ts"] != card["ts"] and live_buttons(c)],
        timeout=30,
        what="a new card about the proposed call",
    )
    assert _markers(markers_file) == [], "an edit past Bob's rule paid nothing"
    old = await local_slack.wait_for(
        lambda: [m for m in cards(local_slack) if m["ts"] == card["ts"] and "not sent" in all_text(m)],
        timeout=10,
        what="the edited card saying why",
    )
    assert "falls under another rule" in all_text(old[0])
    run = run_of(backend.open_store(), local_slack)
    edited = next(a for a in run.asks.values() if a.card is not None and a.card.ts == card["ts"])
    assert edited.status is AskStatus.OBSOLETE and edited.closed is Closed.CHANGED and edited.decision is None
    assert [e.kind for e in run.audit if e.kind == "edit_moved_rule"] == ["edit_moved_rule"]
    new = next(a for a in run.asks.values() if a.status is AskStatus.PENDING)
    assert new.tool is not None and new.tool.input == {"amount": 100} and new.rules.label == "default: Bob"

    await edit(again, 200)  # within Bob's rule: sent as edited
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final message")
    assert _markers(markers_file) == ["send_payout 200"]


async def test_a_reply_reading_yes_or_trust_does_not_pass_a_preview(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    """HumanInTheLoop takes a typed "yes" for an approval and "trust" for a Trust. Under a
    preview the card offers no Trust and binds an approval to what it shows; a Reply is not
    checked against the preview, so a Reply that reads as a yes is refused (use Approve)."""
    rows = Path(str(markers_file) + ".rows")
    rows.write_text("10")
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run hitl-preview users", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the card")
    assert "with 10 rows" in all_text(card) and "Trust" not in live_buttons(card)
    rows.write_text("10000000")  # the table grew after the card was posted

    for said in ("trust", " Yes "):
        await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
        views = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")
        response = await user.submit_view(
            view=views[-1], values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: said}}, user_id="U0BOB"
        )
        assert "use Approve" in json.dumps(response.body), (said, response.body)
    run = run_of(backend.open_store(), local_slack)
    assert run.status is RunStatus.WAITING and [a.status for a in run.asks.values()] == [AskStatus.PENDING]
    assert _markers(markers_file) == [] and finished_message(local_slack) is None


async def test_trust_is_not_offered_where_rules_choose_by_content(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    """HumanInTheLoop's Trust lets every later call of the tool run unasked, whatever its
    content: Bob trusting a 100 payout (his rule) would pay 5,000 (Alice's rule) unseen.
    Where the rules choose by content, the card offers no Trust; the big payout asks Alice."""
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run hitl-rules go", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="Bob's card")
    assert "Rule:* default: Bob" in all_text(card)
    assert live_buttons(card) == ["Approve", "Reject", "Reply"], "no Trust: it would skip the rules of later calls"
    await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    views = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the reply modal")
    response = await user.submit_view(view=views[-1], values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: " T "}}, user_id="U0BOB")
    assert "use Approve" in json.dumps(response.body), "a reply HumanInTheLoop takes for a Trust is refused too"

    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (big,) = await local_slack.wait_for(
        lambda: [c for c in cards(local_slack) if c["ts"] != card["ts"]], timeout=30, what="Alice's card"
    )
    assert "Rule:* 1,000 or more: Alice" in all_text(big) and _markers(markers_file) == ["send_payout 100"]


async def test_a_call_too_big_to_show_is_still_judged_by_its_tools_rules(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    """A call too big to show on a card (a model padding its input) keeps its tool's rules:
    the payout of 5,000 asks Alice, never the graph's own terms (anyone in the channel)."""
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run payout-rules 5000 4000", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the payout's card")
    run = run_of(backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert ask.tool is None, "too big to show"
    assert ask.rules.approvers is not None and "U0ALICE" in ask.rules.approvers, ask.rules
    await user.click(message=card, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: local_slack.ephemerals("U0CAROL"), timeout=30, what="Carol's refusal")
    assert _markers(markers_file) == []


async def test_a_padded_call_under_a_preview_can_still_be_approved(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    """A call padded past every limit (its reason cut on the record) keeps its preview, and
    the approval binds to the same preview computed again: it is sent, not voided forever."""
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run payout-preview 1000 20000", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the payout's card")
    assert "What will happen" in all_text(card)
    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final message")
    run = run_of(sqlite_backend.open_store(), local_slack)
    assert [e.kind for e in run.audit if e.kind == "preview_changed"] == [], "the approval was not voided"
