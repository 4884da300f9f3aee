"""Outcomes read as what they are, through the real bot over HTTP and the local Slack.

A rejected HumanInTheLoop deletion is announced as a rejection, naming who and why; a
node gate's "no" leaves no error in the bot's log; a graph that names the approver in
its output, next to a broadcast from a reply, pings nobody (both show as text); a review card
is titled as the question it puts and shows the log it asks about line by line.
"""

from __future__ import annotations

import re
from typing import Any

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import RunStatus
from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, all_text, cards, finished_message, live_buttons, run_of


def header_of(card: dict[str, Any]) -> str:
    return next(str(b["text"]["text"]) for b in card["blocks"] if b["type"] == "header")


async def _reject(user: Any, slack: LocalSlack, card: dict[str, Any], *, by: str, reason: str) -> None:
    await user.click(message=card, label="Reject", user_id=by, channel_id=CHANNEL)
    (view,) = await slack.wait_for(lambda: slack.open_views(by), timeout=10, what="the reject modal")
    await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: reason}}, user_id=by)


async def test_a_rejected_cleanup_reads_as_a_rejection_naming_who_and_why(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run cleanup remove the old staging databases", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the deletion card")
    assert header_of(card) == "Tool approval: delete_resources"
    assert "Input:" not in all_text(card), "the card shows the call, not Strands' prompt"

    await _reject(user, local_slack, card, by="U0BOB", reason="not before the audit")
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")

    text = all_text(done)
    assert str(done["text"]).startswith(
        ":no_entry: *cleanup* finished after a rejection by <@U0BOB>: not before the audit"
    )
    assert done["blocks"][0]["text"]["text"] == (
        ":no_entry: *cleanup* finished after <@U0BOB> rejected *Tool approval: delete_resources*"
        "\n> not before the audit"
    )
    assert "nothing was deleted" in text
    assert "white_check_mark" not in text and "CONFIRMATION_FAILED" not in text
    assert run_of(sqlite_backend.open_store(), local_slack).status is RunStatus.COMPLETED


async def test_a_node_gate_rejection_leaves_one_info_line_and_no_error_in_the_log(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run node-gate we ship on friday", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the sign-off card")

    await _reject(user, local_slack, card, by="U0BOB", reason="legal has not read it")
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")

    assert str(done["text"]).startswith(":no_entry: *node-gate* stopped: rejected, node not run")
    assert "<@U0BOB> rejected *Approve publish*" in all_text(done)
    log = bot.output()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]
    lines = [line for line in log.splitlines() if "its gate said no" in line]
    assert len(lines) == 1 and " INFO engine.execution: " in lines[0], lines
    assert "node publish not run, its gate said no: sign-off refused by U0BOB: legal has not read it" in lines[0]


async def test_a_mention_and_a_broadcast_in_graph_output_stay_inert(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run deploy api 2.1.0 to staging", user_id="U0ALICE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the approval card")
    assert header_of(card) == "Approve deploy"

    await user.click(message=card, label="Reply", user_id="U0BOB", channel_id=CHANNEL)
    (view,) = await local_slack.wait_for(lambda: local_slack.open_views("U0BOB"), timeout=10, what="the modal")
    await user.submit_view(
        view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: "tell <!channel> first"}}, user_id="U0BOB"
    )
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the end")

    output = "\n".join(b["text"]["text"] for b in done["blocks"][1:] if b["type"] == "section")
    assert "Approved by U0BOB with operator instructions: tell &lt;!channel&gt; first" in output
    assert str(done["text"]).startswith(":white_check_mark: *deploy* finished")
    assert "<!channel>" not in str(done) and "<@U0BOB>" not in output


async def test_a_review_card_is_titled_for_people_and_shows_the_log_line_by_line(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: Any
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await user.slash_command(text="run incident checkout errors since 10:00", user_id="U0ALICE", channel_id=CHANNEL)
    (first,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the review card")

    assert header_of(first) == "Review what query_logs returned"
    assert live_buttons(first) == ["Approve", "Reject", "Reply", "Retry"]
    result = next(t for t in (b.get("text", {}).get("text", "") for b in first["blocks"]) if t.startswith("*result*"))
    assert re.match(
        r"\*result\*\n```\nquery #\d+: checkout, last 30 minutes, level&gt;=error\nERROR checkout-api", result
    )
    assert "\\n" not in all_text(first), "no literal backslash-n: real line breaks"

    await user.click(message=first, label="Retry", user_id="U0BOB", channel_id=CHANNEL)
    second = await local_slack.wait_for(
        lambda: next((c for c in cards(local_slack) if c["ts"] != first["ts"]), None), timeout=30, what="attempt 2"
    )
    assert header_of(second) == "Review what query_logs returned, attempt 2"
