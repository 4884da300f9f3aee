"""Hostile review of previews, through the real server on both stores: an approval binds to
its preview until the call it approves runs.

The graph is ``payout-preview-hitl`` (``tests.support.graphs``): ``send_payout`` held by a
gate whose card shows what the payee gets at the rate in ``<markers>.rate``, and by
HumanInTheLoop (no preview). The gate's approval is handed to the graph first and held
there while HumanInTheLoop waits; the payout runs when the second approval is sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.records import AskStatus
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


def _live(slack: LocalSlack) -> list[dict[str, Any]]:
    return [m for m in cards(slack) if live_buttons(m)]


async def test_a_held_approval_whose_preview_changed_is_asked_again_before_the_call_runs(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    rate = Path(str(markers_file) + ".rate")
    rate.write_text("1.10")
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run payout-preview-hitl 1000", user_id="U0DAVE", channel_id=CHANNEL)
    both = await local_slack.wait_for(
        lambda: (c := _live(local_slack)) and len(c) == 2 and c, timeout=30, what="two cards"
    )
    (gate,) = [m for m in both if "What will happen" in all_text(m)]
    (hitl,) = [m for m in both if m["ts"] != gate["ts"]]
    assert "1100.00 USD" in all_text(gate)

    await user.click(message=gate, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    store = backend.open_store()

    def held() -> bool:
        run = run_of(store, local_slack)
        return any(a.status is AskStatus.CONSUMED for a in run.asks.values()) and not run.status.leased

    await eventually(held, what="the gate's approval handed to the graph, the run waiting again")
    rate.write_text("1.30")  # the world moved before the payout ran
    await user.click(message=hitl, label="Approve", user_id="U0BOB", channel_id=CHANNEL)

    def asked_again() -> list[dict[str, Any]]:
        return [m for m in _live(local_slack) if m["ts"] not in (gate["ts"], hitl["ts"])]

    def settled() -> list[dict[str, Any]] | dict[str, Any] | None:
        return asked_again() or finished_message(local_slack)

    await local_slack.wait_for(settled, timeout=30, what="the gate asking again (or the run finishing)")
    assert not markers_file.exists() or "send_payout" not in markers_file.read_text(), "nothing was paid"
    (again,) = asked_again()
    assert "1300.00 USD" in all_text(again) and "1100.00" not in all_text(again)
