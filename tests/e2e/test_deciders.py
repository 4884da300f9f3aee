"""Who may decide, checked at the click, through the real server on both stores.

* An ask that names no approvers is open to anyone in the run's channel: someone who is
  not in it (a stale App Home button, a public channel's preview) is refused at the click,
  with nothing recorded and the tool not run.
* A group member removed from the group while Slack's group API fails loses the right to
  decide once the directory's TTL has passed: a failed lookup counts as not a member.
* Under a quorum, a Reply that reads "yes" is not an approval, whatever raised the ask: it
  is refused with a pointer to Approve and the ask stays pending.

The bot's directory TTL is shortened to one second (``DIRECTORY_TTL_SECONDS``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, Run, RunStatus
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor, cards, eventually, finished_message, run_of

TTL = {"DIRECTORY_TTL_SECONDS": "1"}
NOT_IN_CHANNEL = "Only people in this run's channel may decide this"


@pytest.fixture(autouse=True)
def usergroups(local_slack: LocalSlack) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    local_slack.set_usergroup("S0LEADS", ["U0LEAD"])


async def _card(slack: LocalSlack, user: LocalSlackUser, graph: str, *, by: str, nth: int = 1) -> dict[str, Any]:
    """``/graph run <graph>`` by ``by``; the ``nth`` card in the channel (this run's)."""
    response = await user.slash_command(text=f"run {graph} hello", user_id=by, channel_id=CHANNEL)
    assert response.status == 200
    found = await slack.wait_for(lambda: cards(slack)[nth - 1 :], timeout=30, what=f"card {nth} of {graph}")
    return found[0]


def _load(backend: Backend, run_id: str) -> Run:
    run = backend.open_store().load(run_id, snapshot=False)
    assert run is not None
    return run


def _markers(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _pending_untouched(run: Run) -> None:
    assert run.status is RunStatus.WAITING, run.status
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.PENDING and ask.decision is None and not ask.votes


async def test_someone_not_in_the_runs_channel_cannot_decide_from_the_card_or_app_home(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    everyone = ["U0DAVE", "U0ALICE", "U0MALLORY", local_slack.bot_user_id]
    local_slack.set_members(CHANNEL, everyone)
    bot = await start_bot(backend=backend, extra_env=TTL)
    user = user_for(bot)
    card = await _card(local_slack, user, "guarded-write", by="U0DAVE")  # no approvers: anyone in the channel
    run_id = run_of(backend.open_store(), local_slack).run_id
    await eventually(lambda: not _load(backend, run_id).owes_slack, what="the run to wait with nothing owed")

    # Mallory, in the channel, sees the ask on her Home tab; then she leaves the channel.
    await user.open_home(user_id="U0MALLORY")
    await local_slack.wait_for(
        lambda: run_id in json.dumps(local_slack.home("U0MALLORY")), timeout=30, what="the ask on Mallory's Home"
    )
    local_slack.set_members(CHANNEL, [u for u in everyone if u != "U0MALLORY"])
    await asyncio.sleep(1.1)  # the directory's TTL: what it knew of her channels is past it

    response = await user.click_home(user_id="U0MALLORY", label="Approve")  # a stale Home button
    assert response.status == 200
    await local_slack.wait_for(
        lambda: NOT_IN_CHANNEL in json.dumps(local_slack.home("U0MALLORY")), timeout=30, what="the Home refusal"
    )
    await user.click(message=card, label="Approve", user_id="U0MALLORY", channel_id=CHANNEL)  # a channel preview
    (notice,) = await local_slack.wait_for(
        lambda: local_slack.ephemerals("U0MALLORY"), timeout=30, what="Mallory's refusal"
    )
    assert NOT_IN_CHANNEL in notice["text"] and "nothing was recorded" in notice["text"], notice["text"]
    run = _load(backend, run_id)
    _pending_untouched(run)
    assert [e.by for e in run.audit if e.kind == "refused"] == ["U0MALLORY"], "refusals noted once"
    assert _markers(markers_file) == [] and finished_message(local_slack) is None, "the tool did not run"

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)  # in the channel
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the run's end")
    assert _markers(markers_file) == ["writer:hello"]
    (ask,) = _load(backend, run_id).asks.values()
    assert ask.decision is not None and ask.decision.user == "U0ALICE"


async def test_a_member_removed_from_a_group_while_slack_fails_is_refused_after_the_ttl(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend, extra_env=TTL)
    user = user_for(bot)
    first = await _card(local_slack, user, "guarded-approvers", by="U0DAVE")
    await user.click(message=first, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)  # through S0OPS
    await eventually(lambda: _markers(markers_file) == ["writer:hello"], what="the first run's tool")

    local_slack.set_usergroup("S0OPS", ["U0ERIN"])  # Carol leaves the group...
    fault = local_slack.inject_failures(method="usergroups.users.list", status=500, times=None)  # ...Slack fails
    await asyncio.sleep(1.1)  # past the directory's TTL
    second = await _card(local_slack, user, "guarded-approvers", by="U0DAVE", nth=2)
    await user.click(message=second, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)
    (notice,) = await local_slack.wait_for(
        lambda: local_slack.ephemerals("U0CAROL"), timeout=30, what="Carol's refusal"
    )
    assert "Only " in notice["text"] and "may decide this; nothing was recorded." in notice["text"], notice["text"]
    assert fault.served >= 1, "the group was asked for, and Slack failed"
    runs = [r for r in backend.open_store().recent(channel=CHANNEL) if r.status is RunStatus.WAITING]
    assert len(runs) == 1
    _pending_untouched(_load(backend, runs[0].run_id))
    assert _markers(markers_file) == ["writer:hello"], "the second run's tool did not run"


async def test_a_reply_reading_yes_under_a_quorum_is_refused_with_a_pointer_to_approve(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _card(local_slack, user, "guarded-quorum", by="U0DAVE")  # a tool gate, not HumanInTheLoop
    run_id = run_of(backend.open_store(), local_slack).run_id
    await user.click(message=card, label="Reply", user_id="U0ALICE", channel_id=CHANNEL)
    views = await local_slack.wait_for(lambda: local_slack.open_views("U0ALICE"), timeout=10, what="the reply modal")
    response = await user.submit_view(
        view=views[-1], values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: " Yes "}}, user_id="U0ALICE"
    )
    shown = json.dumps(response.body)
    assert "use Approve" in shown and "needs 2 approvals" in shown, shown
    run = _load(backend, run_id)
    _pending_untouched(run)
    assert _markers(markers_file) == [] and finished_message(local_slack) is None
