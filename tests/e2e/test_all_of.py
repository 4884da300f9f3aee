"""The two-person rule across teams through the real server: ``AskPolicy(all_of=[...])``.

``guarded-all-of`` needs one approval from finance (S0FIN: Alice and Bob) and one from
legal (S0LEGAL: Carol). Two people of one team do not complete it, however many approvals
that makes; one from each does; the card and the notices say which team is still needed.
Parametrized over SQLite and DynamoDB; what an approval costs, on DynamoDB alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.records import AskStatus, RunStatus
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
    live_buttons,
    run_of,
)
from tests.support.aws import CountingMotoServer

LEGAL_MISSING = "Still needed: one from <!subteam^S0LEGAL>"


@pytest.fixture(autouse=True)
def usergroups(local_slack: LocalSlack) -> None:
    local_slack.set_usergroup("S0FIN", ["U0ALICE", "U0BOB"])
    local_slack.set_usergroup("S0LEGAL", ["U0CAROL"])


def _text(message: dict[str, Any]) -> str:
    return all_text(message) + "\n" + str(message.get("blocks") or "")


async def _card_saying(slack: LocalSlack, card: dict[str, Any], needle: str, *, what: str) -> dict[str, Any]:
    def saying() -> dict[str, Any] | None:
        current = slack.message(CHANNEL, str(card["ts"]))
        return current if current is not None and needle in _text(current) else None

    return await slack.wait_for(saying, timeout=30, what=what)


async def test_one_approval_from_each_team_not_two_from_one(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run guarded-all-of hello", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the card")
    assert "Still needed: one from <!subteam^S0FIN>, one from <!subteam^S0LEGAL>" in _text(card), _text(card)
    run_id = run_of(backend.open_store(), local_slack).run_id

    # Alice counts for finance; Bob, finance too, makes two approvals but legal is missing.
    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    (counted,) = await local_slack.wait_for(lambda: local_slack.ephemerals("U0ALICE"), timeout=30, what="counted")
    assert "counts" in counted["text"] and LEGAL_MISSING in counted["text"], counted["text"]
    shown = await _card_saying(local_slack, card, "Approvals: 1 of 2", what="the card to count Alice")
    assert LEGAL_MISSING in _text(shown) and "one from <!subteam^S0FIN>" not in _text(shown)
    assert "<!subteam^S0FIN>: <@U0ALICE>" in _text(shown), "the card says whom her approval counted for"

    await user.click(message=shown, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    (told,) = await local_slack.wait_for(lambda: local_slack.ephemerals("U0BOB"), timeout=30, what="Bob's notice")
    assert "counts: 2 of 2" in told["text"] and LEGAL_MISSING in told["text"], told["text"]
    shown = await _card_saying(local_slack, card, "Approvals: 2 of 2", what="the card to count Bob")
    assert LEGAL_MISSING in _text(shown) and "Approve" in live_buttons(shown), "two from finance decide nothing"
    run = backend.open_store().load(run_id, snapshot=False)
    assert run is not None and run.status is RunStatus.WAITING
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.PENDING and ask.filled == {"S0FIN": "U0ALICE"}, ask
    assert markers_file.read_text().splitlines() == [] if markers_file.exists() else True

    # Carol, from legal, completes it: the run goes on, and the record says whom she counted for.
    await user.click(message=shown, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final message")
    assert "approvers: U0ALICE,U0BOB,U0CAROL" in all_text(done)
    assert markers_file.read_text().splitlines() == ["writer:hello | approvers: U0ALICE,U0BOB,U0CAROL"]
    (ask,) = run_of(backend.open_store(), local_slack).asks.values()
    assert ask.decision is not None and ask.decision.counts_for == "S0LEGAL"


BOT_APP_ID = "approval-bot-all-of"


async def _first_approval_writes(
    *,
    graph: str,
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    moto_server: CountingMotoServer,
) -> tuple[int, Any]:
    """Alice approves ``graph``'s card once, through the bot; the UpdateItems the bot made from
    the click until the card shows her approval and that is recorded, and the write units."""
    bot = await start_bot(backend=backend, extra_env={"AWS_SDK_UA_APP_ID": BOT_APP_ID})
    user = user_for(bot)
    store = backend.open_store()  # the test's own requests are not tagged, so not counted
    await user.slash_command(text=f"run {graph} hello", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the card")
    await eventually(lambda: not (r := run_of(store, local_slack)).owes_slack and r, what="the card to be recorded")
    moto_server.reset_counts()

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await _card_saying(local_slack, card, "1 of 2", what="the card to count Alice")
    run = await eventually(lambda: not (r := run_of(store, local_slack)).owes_slack and r, what="the card recorded")
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.PENDING and list(ask.votes) == ["U0ALICE"], ask
    writes = moto_server.counts(app_id=BOT_APP_ID).get("dynamodb.UpdateItem", 0)
    units = moto_server.capacity(app_id=BOT_APP_ID)["write_units"]
    print(f"\n{graph}, Alice's approval through the bot on DynamoDB: {writes} UpdateItems, {units} write units")
    return writes, ask


async def test_an_all_of_approval_is_written_once_on_dynamodb(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    moto_server: CountingMotoServer,
) -> None:
    """The process that posted the card knows the ask is ``all_of``: it looks Alice up in the
    teams before it writes, and writes once, as the vote that fills finance. Before: a blind
    write refused (not looked up yet), a write as a decision refused (legal is missing), then
    the vote."""
    writes, ask = await _first_approval_writes(
        graph="guarded-all-of",
        start_bot=start_bot,
        backend=dynamodb_backend,
        local_slack=local_slack,
        user_for=user_for,
        moto_server=moto_server,
    )
    assert ask.filled == {"S0FIN": "U0ALICE"}
    assert writes == 2, f"the vote and the record of the card's update: {writes}"


async def test_a_quorum_vote_is_written_once_on_dynamodb(
    start_bot: StartBot,
    dynamodb_backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    moto_server: CountingMotoServer,
) -> None:
    """Under ``quorum=2`` the first approval is a vote: written as one at once, where it was
    written as a decision first (refused by its condition) and then as the vote."""
    writes, _ = await _first_approval_writes(
        graph="guarded-quorum",
        start_bot=start_bot,
        backend=dynamodb_backend,
        local_slack=local_slack,
        user_for=user_for,
        moto_server=moto_server,
    )
    assert writes == 2, f"the vote and the record of the card's update: {writes}"
