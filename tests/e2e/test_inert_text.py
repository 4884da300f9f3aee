"""Text people send is inert, through the real server and both stores.

A run of ``inert-echo`` (``tests/support/graphs.py``) whose task, edited input, reply and
rejection all carry mentions of a victim (a user, a user group), broadcasts, a channel
and a link whose label is another URL, each echoed by the graph into its output. Every
message, update, ephemeral, modal and Home tab the bot sent is then searched for live
markup (``localslack.sent_mentions``): the only pings are the people the bot means to
name (the requester and the decider), the only links its own links to cards. Along the
way, an Edit that would not reach the tool exactly (900-deep JSON, a 2,900-digit or a
42-digit integer, ``1e-400``, a lone surrogate) and a Reply with a lone surrogate get an
inline error and record nothing; a 15-digit integer reaches the tool exactly; hidden
characters in the tool input show as markers on the card and round-trip in the modal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, RunStatus
from localslack import LocalSlack, LocalSlackUser, sent_mentions
from tests.e2e.conftest import (
    CHANNEL,
    Backend,
    StartBot,
    UserFor,
    all_text,
    cards,
    finished_message,
    run_of,
)

PINGS = "<@U0VICTIM> <!subteam^S0VICTIM|@here> <!here> <!channel> <!everyone> <#C0VICTIM>"
LINK = "<https://evil.example/steal|https://good.example/>"
HIDDEN = "pay\u202eACME\u200b"
TASK = f"task {PINGS} {LINK} {HIDDEN}"
EDITED = f"edit {PINGS} {LINK}"
REPLY = f"reply {PINGS} {LINK}"
REASON = f"reason {PINGS} {LINK}"
EXACT = 123456789012345
REQUESTER, DECIDER = "U0ALICE", "U0BOB"


def _card(slack: LocalSlack, index: int) -> dict[str, Any] | None:
    found = cards(slack)
    return found[index] if len(found) > index and found[index].get("blocks") else None


async def _open(slack: LocalSlack, user: LocalSlackUser, card: dict[str, Any], label: str) -> dict[str, Any]:
    await user.click(message=card, label=label, user_id=DECIDER, channel_id=CHANNEL)
    (view,) = await slack.wait_for(lambda: slack.open_views(DECIDER), timeout=10, what=f"the {label} modal")
    return view


async def _submit(user: LocalSlackUser, view: dict[str, Any], text: str) -> Any:
    response = await user.submit_view(view=view, values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: text}}, user_id=DECIDER)
    assert response.status == 200
    return response.body


def _error(body: Any) -> str:
    assert isinstance(body, dict) and body.get("response_action") == "errors", body
    return str(body["errors"][TEXT_BLOCK_ID])


def _prefilled(view: dict[str, Any]) -> str:
    (block,) = [b for b in view["blocks"] if b["type"] == "input"]
    return str(block["element"]["initial_value"])


async def test_nothing_people_send_pings_anyone(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    store = backend.open_store()
    started = await user.slash_command(text=f"run inert-echo {TASK}", user_id=REQUESTER, channel_id=CHANNEL)
    assert started.status == 200
    gate = await local_slack.wait_for(lambda: _card(local_slack, 0), timeout=30, what="the gate's card")
    edit = await _open(local_slack, user, gate, "Edit")
    assert await _submit(user, edit, json.dumps({"text": EDITED, "count": EXACT})) in ("", None, {})
    asked = await local_slack.wait_for(lambda: _card(local_slack, 1), timeout=30, what="the reply card")
    assert await _submit(user, await _open(local_slack, user, asked, "Reply"), REPLY) in ("", None, {})
    asked = await local_slack.wait_for(lambda: _card(local_slack, 2), timeout=30, what="the reject card")
    assert await _submit(user, await _open(local_slack, user, asked, "Reject"), REASON) in ("", None, {})
    done = await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final output")
    run_id = run_of(store, local_slack).run_id
    for command in (f"status {run_id}", f"audit {run_id}", "runs", "pending"):
        assert (await user.slash_command(text=command, user_id=REQUESTER, channel_id=CHANNEL)).status == 200
    await user.click(message=gate, label="Approve", user_id=DECIDER, channel_id=CHANNEL, allow_stale=True)
    for person in (REQUESTER, DECIDER):
        await user.open_home(user_id=person)
    homes = lambda: local_slack.home(REQUESTER) and local_slack.home(DECIDER)  # noqa: E731
    await local_slack.wait_for(homes, timeout=10, what="both Home tabs")
    await local_slack.wait_for(lambda: len(local_slack.ephemerals()) >= 5, timeout=20, what="the answers")

    sent = sent_mentions(local_slack)
    allowed = {f"@{REQUESTER}", f"@{DECIDER}"}  # whom the bot names: the requester, the decider
    assert allowed <= {s.target for s in sent}, "the people the bot means to name are named"
    live = [s for s in sent if s.target not in allowed and not s.target.startswith(local_slack.workspace_url)]
    assert live == [], live
    shown = "\n".join(all_text(m) for m in local_slack.messages(CHANNEL))
    for echoed in ("echo: task &lt;@U0VICTIM&gt;", "reply: reply &lt;@U0VICTIM&gt; &lt;!subteam", "reject: reason"):
        assert echoed in shown, f"the output echoes what people sent, as text: {echoed}"
    assert "reason &lt;@U0VICTIM&gt;" in all_text(done), "the final message quotes the rejection, as text"
    relayed = json.dumps({"count": EXACT, "text": EDITED}, sort_keys=True)
    assert markers_file.read_text().splitlines() == [f"relay {relayed}"], "the tool got the 15 digits as typed"

    assert "pay⟨U+202E⟩ACME⟨U+200B⟩" in all_text(gate), "hidden characters show as markers on the card"
    assert "\u202e" not in json.dumps(local_slack.calls, ensure_ascii=False), "and nowhere raw"
    prefilled = _prefilled(edit)
    assert "\\u202e" in prefilled and "\\u200b" in prefilled, "the Edit modal shows them as JSON escapes"
    assert json.loads(prefilled)["text"] == TASK, "which parse back into the input unchanged"
    assert "Traceback" not in bot.output()


async def test_input_that_would_not_reach_the_tool_as_typed_is_refused_inline(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    store = backend.open_store()
    started = await user.slash_command(text="run inert-echo billing", user_id=REQUESTER, channel_id=CHANNEL)
    assert started.status == 200
    gate = await local_slack.wait_for(lambda: _card(local_slack, 0), timeout=30, what="the gate's card")
    view = await _open(local_slack, user, gate, "Edit")
    refused = {
        '{"text": "x", "count": 1, "extra": ' + "[" * 900 + "]" * 900 + "}": "nested more than 32 levels",
        '{"text": "x", "count": ' + "9" * 2900 + "}": "The number at count (99999",
        '{"text": "x", "count": 1e-400}': "The number at count (1e-400) would reach the tool as 0.0",
        '{"text": "x", "count": ' + "1" * 42 + "}": "The number at count (1111",
        '{"text": "\\ud800", "count": 1}': "The text at text cannot be used: it holds a character that is not text",
    }
    answers = {typed: await _submit(user, view, typed) for typed in refused}
    wrong = {
        typed[:50]: str(answers[typed])[:200] for typed, want in refused.items() if want not in str(answers[typed])
    }
    assert wrong == {}, "each gets its inline error"
    waiting = run_of(store, local_slack)
    assert waiting.status is RunStatus.WAITING and all(a.status is AskStatus.PENDING for a in waiting.asks.values())
    assert await _submit(user, view, json.dumps({"text": "x", "count": EXACT})) in ("", None, {})

    asked = await local_slack.wait_for(lambda: _card(local_slack, 1), timeout=30, what="the reply card")
    view = await _open(local_slack, user, asked, "Reply")
    assert "not text (an unpaired surrogate" in _error(await _submit(user, view, "fine \ud800 by me"))
    pending = [a for a in run_of(store, local_slack).asks.values() if a.status is AskStatus.PENDING]
    assert len(pending) == 1 and pending[0].decision is None, "nothing recorded"
    assert local_slack.open_views(DECIDER), "the modal stays open for another try"
    log = bot.output()
    assert not [bad for bad in ("Traceback", "RecursionError", "UnicodeEncodeError", "Logging error") if bad in log]
