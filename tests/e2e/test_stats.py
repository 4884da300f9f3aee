"""``/graph stats [graph]`` through the real server, on both stores.

One bot, eight runs in the channel: a ``guarded-soon-expiring`` ask nobody answers (it
expires after 2 s, while the rest goes on), and seven ``payout-rules`` payouts
(``tests.support.graphs``): 5 is approved by the rule ``small``, five of 100 are approved
by Bob (rule ``default: Bob``), 5000 is rejected by Alice (rule ``1,000 or more: Alice``).
Then the counts per graph, ask and rule, the "approved unchanged every time" candidate,
who sees which graph (guarded-soon-expiring names its approvers; payout-rules leaves the
asks no rule covers to the channel), and the did-you-mean line for a misspelt graph.
"""

from __future__ import annotations

from typing import Any

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor, all_text, cards, eventually

FAST_SWEEP = ["--sweep-seconds", "1"]


async def _stats(slack: LocalSlack, user: LocalSlackUser, text: str, *, by: str) -> str:
    """The ephemeral answer ``by`` gets to ``/graph <text>`` in the channel."""
    seen = len(slack.ephemerals(by))
    response = await user.slash_command(text=text, user_id=by, channel_id=CHANNEL)
    assert response.status == 200
    answers = await slack.wait_for(lambda: slack.ephemerals(by)[seen:], timeout=30, what=f"/graph {text}")
    return all_text(answers[0])


async def test_stats_count_asks_per_graph_and_rule_for_those_who_may_oversee_them(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    local_slack.set_usergroup("S0LEADS", ["U0LEAD"])
    bot = await start_bot(backend=backend, args=FAST_SWEEP)
    user = user_for(bot)
    tasks = ["run guarded-soon-expiring soon", "run payout-rules 5", "run payout-rules 5000"]
    tasks += [f"run payout-rules {100 + n}" for n in range(5)]
    for task in tasks:
        assert (await user.slash_command(text=task, user_id="U0DAVE", channel_id=CHANNEL)).status == 200

    def payout_cards() -> list[dict[str, Any]] | None:
        found = [c for c in cards(local_slack) if "Rule:*" in all_text(c)]
        return found if len(found) == 6 else None

    for card in await eventually(payout_cards, what="the six payout cards"):
        if "default: Bob" in all_text(card):
            await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
        else:
            await user.click(message=card, label="Reject", user_id="U0ALICE", channel_id=CHANNEL)
            views = await local_slack.wait_for(lambda: local_slack.open_views("U0ALICE"), what="the reject modal")
            reason = {TEXT_BLOCK_ID: {TEXT_ACTION_ID: "too much"}}
            await user.submit_view(view=views[-1], values=reason, user_id="U0ALICE")
    store = backend.open_store()

    def all_ended() -> bool:
        runs = store.recent(channel=CHANNEL, limit=20)
        return len(runs) == len(tasks) and all(r.status.terminal for r in runs)

    await eventually(all_ended, timeout=40, what="every run to end (the expiry included)")

    alice = await _stats(local_slack, user, "stats", by="U0ALICE")
    assert "Approvals in this channel over the last 30 days" in alice, alice
    assert "*guarded-soon-expiring* · 1 run · 1 ask: 1 expired" in alice, alice
    assert "*payout-rules* · 7 runs · 7 asks: 5 approved as shown, 1 rejected, 1 auto-approved by the rule" in alice
    assert "`approve_payout` under rule _default: Bob_: 5 asks: 5 approved as shown · decided by people in " in alice
    assert "`approve_payout` under rule _small_: 1 ask: 1 auto-approved by the rule" in alice
    assert "`approve_payout` under rule _1,000 or more: Alice_: 1 ask: 1 rejected · decided by people in " in alice
    assert "*Approved unchanged every time*" in alice
    assert "• *payout-rules*, `approve_payout` under rule _default: Bob_: 5 of 5 approved as shown" in alice
    assert alice.count("5 of 5 approved as shown") == 1, "only Bob's row: the others were rejected or automatic"

    local_slack.set_members(CHANNEL, ["U0ALICE", "U0BOB", "U0DAVE", "U0MALLORY"])
    mallory = await _stats(local_slack, user, "stats", by="U0MALLORY")
    assert "*payout-rules* · 7 runs" in mallory, "a member of the channel oversees a graph without approvers"
    assert "guarded-soon-expiring" not in mallory, "its policy names approvers; she is not one of them"
    lead = await _stats(local_slack, user, "stats guarded-soon-expiring", by="U0LEAD")
    assert "*guarded-soon-expiring* · 1 run · 1 ask: 1 expired" in lead and "payout-rules" not in lead, lead
    only = await _stats(local_slack, user, "stats guarded-soon-expiring", by="U0MALLORY")
    assert only.startswith("Nothing to show: no graph run in *guarded-soon-expiring* in this channel"), only
    outsider = await _stats(local_slack, user, "stats", by="U0EVE")
    assert outsider.startswith("Nothing to show"), "not in the channel, named nowhere: nothing"
    typo = await _stats(local_slack, user, "stats payout-rule", by="U0MALLORY")
    assert "There is no graph called `payout-rule`. Did you mean `/graph stats payout-rules`?" in typo, typo
