"""``/graph runs`` and ``/graph status <run id>`` through the real server, on both stores.

Runs are started in two channels; the listing of one channel shows exactly its runs,
newest first (read through the store's channel index), and the status of a run follows
it from waiting, with its question and who may decide it, to completed after an approval.
The answers are ephemeral, read from the local Slack like every other notice.
"""

from __future__ import annotations

import re
from typing import Any

from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor, all_text, cards, finished_message

OTHER = "C0OTHER"
_RUN_ID = re.compile(r"`([a-z2-7]{16})`")


def _text(message: dict[str, Any]) -> str:
    return all_text(message) + "\n" + str(message.get("blocks") or "")


async def _start(slack: LocalSlack, user: LocalSlackUser, *, by: str, channel: str, task: str) -> str:
    """``/graph run guarded-write <task>`` in ``channel``; the run's id, once its card is up."""
    before = len(cards(slack, channel))
    response = await user.slash_command(text=f"run guarded-write {task}", user_id=by, channel_id=channel)
    assert response.status == 200
    await slack.wait_for(lambda: len(cards(slack, channel)) > before, timeout=30, what=f"the card of {task}")
    announced = [
        m
        for m in slack.messages(channel)
        if ((m.get("metadata") or {}).get("event_payload") or {}).get("what") == "announcement" and task in _text(m)
    ]
    (root,) = announced
    match = _RUN_ID.search(_text(root))
    assert match, root
    return match.group(1)


async def _answer(slack: LocalSlack, user: LocalSlackUser, text: str, *, by: str, what: str) -> dict[str, Any]:
    """The ephemeral answer ``by`` gets to ``/graph <text>`` in CHANNEL."""
    seen = len(slack.ephemerals(by))
    response = await user.slash_command(text=text, user_id=by, channel_id=CHANNEL)
    assert response.status == 200
    answers = await slack.wait_for(lambda: slack.ephemerals(by)[seen:], timeout=30, what=what)
    return answers[0]


async def test_runs_lists_this_channels_runs_and_status_follows_one(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)

    empty = await _answer(local_slack, user, "runs", by="U0MALLORY", what="the empty listing")
    assert empty["text"] == "No runs in this channel yet.", empty

    first = await _start(local_slack, user, by="U0ALICE", channel=CHANNEL, task="first")
    other = await _start(local_slack, user, by="U0DAVE", channel=OTHER, task="elsewhere")
    second = await _start(local_slack, user, by="U0CAROL", channel=CHANNEL, task="second")

    listing = _text(await _answer(local_slack, user, "runs", by="U0MALLORY", what="the channel's runs"))
    listed = list(dict.fromkeys(_RUN_ID.findall(listing)))
    assert listed == [second, first], listing  # exactly this channel's two, newest first
    assert other not in listing
    assert "<@U0ALICE>" in listing and "<@U0CAROL>" in listing and "<@U0DAVE>" not in listing
    assert listing.count("waiting for 1 decision") >= 2 and "guarded-write" in listing
    assert "<!date^" in listing

    waiting = _text(await _answer(local_slack, user, f"status {first}", by="U0BOB", what="the first run waiting"))
    assert f"*Run `{first}`* of *guarded-write*: waiting for 1 decision" in waiting, waiting
    assert "Started by <@U0ALICE>" in waiting
    assert "*Approve write writer*: anyone in the channel may decide" in waiting, waiting
    assert second not in waiting

    (card,) = [c for c in cards(local_slack) if "first" in _text(c)]
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the first run to finish")

    done = _text(await _answer(local_slack, user, f"status {first}", by="U0BOB", what="the first run completed"))
    assert f"*Run `{first}`* of *guarded-write*: completed" in done, done
    assert "Finished: writer result: wrote writer:first" in done, done
    assert "Waiting for" not in done

    again = _text(await _answer(local_slack, user, "runs", by="U0MALLORY", what="the listing after"))
    assert list(dict.fromkeys(_RUN_ID.findall(again))) == [second, first], again
    assert ":white_check_mark:" in again and "completed" in again
