"""Live progress and App Home through the real server, the local Slack and both stores.

* A run of five nodes (``five-steps``: plan → fetch → approve (asks) → build → report)
  has one status message in its thread: streamed while its first pass runs, edited in
  place afterwards, never edited twice within a second, and in the end showing every
  node done. Each node that leads on posts its output in the thread.
* ``LIVE_PROGRESS=update`` (a workspace without the streaming surface behaves the same
  once Slack refuses the stream) keeps the message a Block Kit message edited in place.
* App Home: an approver who opened Home sees the ask appear there, decides it with the
  Home button (a click whose container is a view, with no message and no response_url),
  and the card in the channel shows the decision; someone the policy does not name never
  sees it. ``/graph pending`` lists the same asks with links.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from engine.ports import PROGRESS
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor, all_text, cards, finished_message

NODES = ("plan", "fetch", "approve", "build", "report")
EDITS = ("chat.startStream", "chat.appendStream", "chat.stopStream", "chat.update")


def status_messages(slack: LocalSlack) -> list[dict[str, Any]]:
    return [
        m
        for m in slack.messages(CHANNEL)
        if ((m.get("metadata") or {}).get("event_payload") or {}).get("what") == PROGRESS or m.get("stream")
    ]


def _text(message: dict[str, Any]) -> str:
    return all_text(message) + "\n" + json.dumps(message.get("blocks") or [])


def _every_node_done(slack: LocalSlack) -> dict[str, Any] | None:
    for message in status_messages(slack):
        text = _text(message)
        if "Completed" in text and all(f"*{n}* · done" in text for n in NODES):
            return message
    return None


async def _start_and_wait_for_card(slack: LocalSlack, user: LocalSlackUser, graph: str, *, by: str) -> dict[str, Any]:
    response = await user.slash_command(text=f"run {graph} billing", user_id=by, channel_id=CHANNEL)
    assert response.status == 200
    (card,) = await slack.wait_for(lambda: cards(slack) or None, timeout=30, what="the card")
    return card


async def test_five_nodes_one_status_message_updated_in_place_within_the_rate_limit(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start_and_wait_for_card(local_slack, user, "five-steps", by="U0ALICE")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=60, what="the run's end")
    done = await local_slack.wait_for(lambda: _every_node_done(local_slack), timeout=30, what="every node done")

    (status,) = status_messages(local_slack)  # one status message for the whole run
    calls = [c for c in local_slack.message_calls(CHANNEL, status["ts"]) if c.method in EDITS and c.ok]
    methods = [c.method for c in calls]
    assert methods[0] == "chat.startStream", methods  # streamed in its first pass
    assert "chat.stopStream" in methods and methods.count("chat.update") >= 2, methods  # then edited in place
    assert len(calls) >= 4, methods  # several updates, not one message at the end
    # Live edits at most one a second; the edit that shows the saved state may follow the
    # last live one at once, but never two quick edits in a row (closing the stream changes
    # nothing shown, so it is not counted).
    edits = [c for c in calls if c.method != "chat.stopStream"]
    gaps = [b.at - a.at for a, b in pairwise(edits)]
    assert not any(a < 0.9 and b < 0.9 for a, b in pairwise(gaps)), gaps
    assert len([g for g in gaps if g < 0.9]) <= 2, gaps  # one per pass: the start, the resume
    assert done["ts"] == status["ts"]

    thread = local_slack.thread(CHANNEL, str(status.get("thread_ts")))
    outputs = [m for m in thread if "finished" in str(m.get("text", "")) and m is not status]
    finished = {n for n in NODES if any(str(m.get("text", "")).startswith(f"{n} finished") for m in outputs)}
    assert finished == {"plan", "fetch", "approve", "build"}, [m.get("text") for m in outputs]
    assert local_slack.rejected == []


async def test_edited_in_place_where_streaming_is_off(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend, extra_env={"LIVE_PROGRESS": "update"})
    user = user_for(bot)
    card = await _start_and_wait_for_card(local_slack, user, "five-steps", by="U0ALICE")
    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: _every_node_done(local_slack), timeout=60, what="every node done")
    (status,) = status_messages(local_slack)
    methods = [c.method for c in local_slack.message_calls(CHANNEL, status["ts"]) if c.ok]
    assert methods[0] == "chat.postMessage" and not any("Stream" in m for m in methods), methods
    assert methods.count("chat.update") >= 2, methods


def _home_asks(slack: LocalSlack, user: str) -> list[str]:
    """Run ids of the asks on ``user``'s Home tab (from the buttons' values)."""
    view = slack.home(user) or {}
    values = {
        json.loads(e["value"])["r"]
        for b in view.get("blocks") or []
        if b.get("type") == "actions"
        for e in b.get("elements") or []
        if e.get("value")
    }
    return sorted(values)


async def test_an_approver_decides_from_app_home_and_the_card_follows(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])  # the graph's approvers: Alice and the ops group
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    for person in ("U0ALICE", "U0MALLORY"):
        await user.open_home(user_id=person)
        await local_slack.wait_for(lambda p=person: local_slack.home(p), timeout=30, what=f"{person}'s Home")
    assert "Nothing waits for you" in json.dumps(local_slack.home("U0ALICE"))

    await _start_and_wait_for_card(local_slack, user, "guarded-approvers", by="U0BOB")
    # Alice opened Home before: the new ask is pushed to it. Mallory is not an approver.
    await local_slack.wait_for(lambda: _home_asks(local_slack, "U0ALICE") or None, timeout=30, what="Alice's inbox")
    await user.open_home(user_id="U0MALLORY")
    await local_slack.wait_for(
        lambda: "Nothing waits for you" in json.dumps(local_slack.home("U0MALLORY")), timeout=30, what="Mallory's Home"
    )
    assert _home_asks(local_slack, "U0MALLORY") == []

    pending = await _pending(local_slack, user, "U0ALICE")
    assert "Approve write writer" in _text(pending) and "archives/" + CHANNEL in _text(pending), _text(pending)
    assert "Nothing waits for you" in _text(await _pending(local_slack, user, "U0MALLORY"))

    response = await user.click_home(user_id="U0ALICE", label="Approve")
    assert response.status == 200
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the run's end")
    (card,) = cards(local_slack)
    assert "Approved by <@U0ALICE>" in _text(card) or "approved by <@U0ALICE>" in _text(card).lower(), _text(card)
    await local_slack.wait_for(lambda: not _home_asks(local_slack, "U0ALICE"), timeout=30, what="Alice's empty inbox")
    assert "Your runs" in json.dumps(local_slack.home("U0ALICE"))


async def test_an_ask_the_viewer_may_not_approve_is_not_in_their_inbox(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    """Bob started the run: the policy forbids him to approve it, so it is not in his inbox;
    a Home tab published before that (a stale one) still cannot approve it."""
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    await _start_and_wait_for_card(local_slack, user, "guarded-approvers", by="U0ALICE")
    await user.open_home(user_id="U0ALICE")
    home = await local_slack.wait_for(lambda: local_slack.home("U0ALICE"), timeout=30, what="Alice's Home")
    assert _home_asks(local_slack, "U0ALICE") == [], home  # she started it: not hers to approve


async def _pending(slack: LocalSlack, user: LocalSlackUser, by: str) -> dict[str, Any]:
    seen = len(slack.ephemerals(by))
    response = await user.slash_command(text="pending", user_id=by, channel_id=CHANNEL)
    assert response.status == 200
    answers = await slack.wait_for(lambda: slack.ephemerals(by)[seen:], timeout=30, what=f"{by}'s pending")
    return answers[0]
