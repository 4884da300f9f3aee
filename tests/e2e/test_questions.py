"""A question (Strands' vended ``handoff_to_user``) through the real server, on both stores.

The graphs ``handoff`` and ``handoff-quorum`` (``tests.support.graphs``) give an agent the
real vended tool; its scripted model calls it, then says what the tool returned. The card
asks the agent's message, inert, with **Answer** (the Reply modal) and **Decline** (the
Reject modal); the answer as typed is the tool's result, a Decline is
``engine.sources.DECLINED_TEXT`` plus the reason. Under a quorum the first allowed
person's answer is the answer, and the question is in their App Home inbox.
"""

from __future__ import annotations

import json
from typing import Any

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import RunStatus, Verdict
from engine.sources import DECLINED_TEXT
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

QUESTION = "Which region should checkout go to?"


async def _asked(slack: LocalSlack, user: LocalSlackUser, graph: str) -> dict[str, Any]:
    """``/graph run <graph> checkout`` by Dave; the question's card."""
    await user.slash_command(text=f"run {graph} checkout", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await slack.wait_for(lambda: cards(slack), timeout=30, what="the question's card")
    return card


async def _modal_says(slack: LocalSlack, user: LocalSlackUser, *, by: str, text: str) -> Any:
    (view,) = await slack.wait_for(lambda: slack.open_views(by), timeout=10, what=f"{by}'s modal")
    return (await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: text}}, user_id=by)).body


async def _done(slack: LocalSlack) -> str:
    return all_text(await slack.wait_for(lambda: finished_message(slack), timeout=30, what="the run's end"))


async def test_the_card_asks_the_question_and_the_answer_is_the_tools_result(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    user = user_for(await start_bot(backend=backend))
    card = await _asked(local_slack, user, "handoff")
    blocks = json.dumps(card["blocks"])
    assert live_buttons(card) == ["Answer", "Decline"]
    assert "Question from the agent" in blocks and QUESTION in blocks, blocks
    # The agent's words are inert: nothing pings anyone, nothing is formatted.
    assert "&lt;!channel&gt;" in blocks and "&lt;@U0BOB&gt;" in blocks and "<!channel>" not in blocks

    await user.click(message=card, label="Answer", user_id="U0ALICE", channel_id=CHANNEL)
    await _modal_says(local_slack, user, by="U0ALICE", text="eu-west-1, <!here>")
    assert "asker got: eu-west-1, &lt;!here&gt;" in await _done(local_slack)

    answered = all_text(local_slack.message(CHANNEL, card["ts"]) or {})
    assert "Answered by <@U0ALICE>" in answered and not live_buttons(local_slack.message(CHANNEL, card["ts"]) or {})
    run = run_of(backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert run.status is RunStatus.COMPLETED and ask.decision is not None
    assert (ask.decision.verdict, ask.decision.text) == (Verdict.REPLY, "eu-west-1, <!here>")


async def test_declining_tells_the_agent_so_and_the_run_is_not_a_rejection(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    user = user_for(await start_bot(backend=backend))
    card = await _asked(local_slack, user, "handoff")

    await user.click(message=card, label="Decline", user_id="U0ALICE", channel_id=CHANNEL)
    await _modal_says(local_slack, user, by="U0ALICE", text="not mine to say")
    done = await _done(local_slack)

    assert f"asker got: {DECLINED_TEXT} Their reason: not mine to say" in done, done
    assert str((finished_message(local_slack) or {})["text"]).startswith(":white_check_mark:"), "not read as rejected"
    assert "Declined by <@U0ALICE>" in all_text(local_slack.message(CHANNEL, card["ts"]) or {})
    assert run_of(backend.open_store(), local_slack).status is RunStatus.COMPLETED


def _home_buttons(slack: LocalSlack, person: str) -> list[str]:
    view = slack.home(person) or {}
    return [
        str(e["text"]["text"])
        for b in view.get("blocks") or []
        if b.get("type") == "actions"
        for e in b.get("elements") or []
    ]


async def test_under_a_quorum_the_first_approvers_answer_from_app_home_is_the_answer(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    user = user_for(await start_bot(backend=backend))
    card = await _asked(local_slack, user, "handoff-quorum")
    assert live_buttons(card) == ["Answer", "Decline"] and "Approvals:" not in json.dumps(card["blocks"])

    # Mallory is not one of the graph's approvers: her answer is refused.
    await user.click(message=card, label="Answer", user_id="U0MALLORY", channel_id=CHANNEL)
    refused = await _modal_says(local_slack, user, by="U0MALLORY", text="us-east-1")
    assert refused["response_action"] == "errors", refused

    await user.open_home(user_id="U0ALICE")
    await local_slack.wait_for(lambda: _home_buttons(local_slack, "U0ALICE"), timeout=30, what="Alice's inbox")
    assert _home_buttons(local_slack, "U0ALICE") == ["Answer", "Decline"]
    assert QUESTION in json.dumps(local_slack.home("U0ALICE"))
    await user.click_home(user_id="U0ALICE", label="Answer")
    # "yes" under a quorum would be refused as a reply standing in for approvals: a
    # question's answer is one person's, whatever it says.
    assert not await _modal_says(local_slack, user, by="U0ALICE", text="yes"), "accepted"
    assert "asker got: yes" in await _done(local_slack)

    (ask,) = run_of(backend.open_store(), local_slack).asks.values()
    assert ask.decision is not None and (ask.decision.user, ask.rules.quorum, ask.votes) == ("U0ALICE", 1, {})
