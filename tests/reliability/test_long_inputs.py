"""Long and deep inputs get a clear answer from the real bot process, in time, and change nothing.

Slack caps what a person can type (a modal's input at 3,000 characters, a command at a few
thousand), but a signed request can be forged by anyone who holds the signing secret and a
bug elsewhere can send anything: the bot must not trust those caps. Each input below goes
to ``approval-bot serve`` as Slack would send it (signed), against one run waiting on a
card that offers Reply and Edit:

* ``/graph run`` with 100 KB of task text: a one-line problem (then the usage) in the ack;
* an Edit submission of 5 MB of JSON: refused with a 413 before it is read (bodies are capped at 1 MB);
  one just under the edge's 1 MB cap: an error under the input, in the modal;
* JSON nested 10,000 levels: in an Edit (too long: an error in the modal), within the
  3,000 characters (1,400 levels: "not valid JSON", in the modal), and as a whole payload
  (a clean 400, ``malformed body``);
* a Reply of 100 KB: an error under the input, in the modal.

Every answer is below 500 and comes within Slack's 3 s; the bot logs no ERROR and no
traceback; the run still waits, at the same version, and no message was posted or updated.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable
from typing import Any

from bot.edge import MAX_BODY_BYTES
from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID, TEXT_MAX_LENGTH
from engine.records import Run, RunStatus
from localslack import LocalSlack, LocalSlackUser
from localslack.transport import BotResponse
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor, cards, eventually, run_of

SLACK_ACK_SECONDS = 3.0  # Slack's own bound: the only absolute time a test may assert
_LOUD = re.compile(r" (ERROR|CRITICAL) |Traceback")


async def _timed(call: Awaitable[BotResponse]) -> tuple[BotResponse, float]:
    started = time.monotonic()
    response = await call
    return response, time.monotonic() - started


def _one_line(text: str) -> str:
    assert text and "\n" not in text.strip() and len(text) < 400, f"not one clear line: {text[:500]!r}"
    return text


async def _forged_submission(user: LocalSlackUser, *, view: dict[str, Any], text: str) -> BotResponse:
    """The modal submitted with ``text`` in its input, as a signed request (Slack itself caps the
    input at 3,000 characters, so ``submit_view`` would refuse to type it)."""
    submitted = {
        **view,
        "state": {"values": {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": text}}}},
    }
    payload: dict[str, Any] = {
        "type": "view_submission",
        "team": {"id": user.team_id, "domain": "local"},
        "user": {"id": "U0BOB", "username": "bob", "name": "bob", "team_id": user.team_id},
        "api_app_id": user.api_app_id,
        "token": "local-verification-token",
        "trigger_id": user.slack.new_trigger_id(user_id="U0BOB"),
        "view": submitted,
        "response_urls": [],
        "enterprise": None,
        "is_enterprise_install": False,
    }
    return await user.transport.deliver(kind="interactive", payload=payload)


def _ack_text(response: BotResponse) -> str:
    """What the person sees from a command's ack: its text, whether sent as JSON or plain."""
    return str(response.body.get("text")) if isinstance(response.body, dict) else response.text


def _modal_error(response: BotResponse) -> str:
    body = response.body
    assert response.status == 200 and isinstance(body, dict), (response.status, response.text[:300])
    assert body.get("response_action") == "errors", body
    return _one_line(str(body["errors"][TEXT_BLOCK_ID]))


async def _open_modal(slack: LocalSlack, user: LocalSlackUser, card: dict[str, Any], label: str) -> dict[str, Any]:
    before = {v["id"] for v in slack.open_views("U0BOB")}
    clicked = await user.click(message=card, label=label, user_id="U0BOB", channel_id=CHANNEL)
    assert clicked.status == 200
    views = await slack.wait_for(
        lambda: [v for v in slack.open_views("U0BOB") if v["id"] not in before], timeout=10, what=f"the {label} modal"
    )
    return dict(views[-1])


async def test_long_and_deep_inputs_get_a_clear_answer_in_time(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)
    assert (await user.slash_command(text="run tool-gate-test billing", user_id="U0ALICE", channel_id=CHANNEL)).status
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the card")
    store = sqlite_backend.open_store()
    run_id = run_of(store, local_slack).run_id

    def settled() -> Run | None:
        run = store.load(run_id)
        return run if run is not None and run.status is RunStatus.WAITING and not run.owes_slack else None

    before: Run = await eventually(settled, timeout=30, what="the run waiting on its card")
    edit = await _open_modal(local_slack, user, card, "Edit")
    reply = await _open_modal(local_slack, user, card, "Reply")
    calls_before, log_from = len(local_slack.calls), len(bot.output())
    answers: dict[str, tuple[int, float, str]] = {}

    response, took = await _timed(
        user.slash_command(text="run tool-gate-test " + "x" * 100_000, user_id="U0ALICE", channel_id=CHANNEL)
    )
    assert response.status == 200
    said = _ack_text(response)
    assert len(said) < 2_000, "the answer does not echo the task back"
    answers["/graph run, 100 KB task"] = (response.status, took, _one_line(said.splitlines()[0]))  # then the usage
    assert "too long" in answers["/graph run, 100 KB task"][2]

    huge = json.dumps({"service": "billing", "replicas": 3, "note": "y" * 5_000_000})
    response, took = await _timed(_forged_submission(user, view=edit, text=huge))
    assert response.status == 413, (response.status, response.text[:300])
    answers["Edit, 5 MB JSON"] = (response.status, took, _one_line(response.text))

    near_cap = json.dumps({"service": "billing", "replicas": 3, "note": "y" * (MAX_BODY_BYTES // 2)})
    response, took = await _timed(_forged_submission(user, view=edit, text=near_cap))
    answers["Edit, 500 KB JSON"] = (response.status, took, _modal_error(response))
    assert f"at most {TEXT_MAX_LENGTH}" in answers["Edit, 500 KB JSON"][2]

    response, took = await _timed(_forged_submission(user, view=edit, text="[" * 10_000 + "]" * 10_000))
    answers["Edit, JSON 10,000 levels deep"] = (response.status, took, _modal_error(response))

    deep_but_short = "[" * 1_400 + "]" * 1_400
    assert len(deep_but_short) < TEXT_MAX_LENGTH
    response, took = await _timed(_forged_submission(user, view=edit, text=deep_but_short))
    answers["Edit, JSON 1,400 levels deep (2,800 characters)"] = (response.status, took, _modal_error(response))
    assert "not valid JSON" in answers["Edit, JSON 1,400 levels deep (2,800 characters)"][2]

    for name, body in (
        ("payload=, JSON 10,000 levels deep", b"payload=" + b"%5B" * 10_000 + b"%5D" * 10_000),
        ("event JSON, 10,000 levels deep", b'{"type":"event_callback","event":' + b"[" * 10_000 + b"]" * 10_000 + b"}"),
    ):
        kind = "application/json" if body.startswith(b"{") else "application/x-www-form-urlencoded"
        response, took = await _timed(user.send_raw(body=body, headers={"Content-Type": kind}))
        assert response.status == 400, (name, response.status, response.text[:300])
        answers[name] = (response.status, took, _one_line(response.text))

    response, took = await _timed(_forged_submission(user, view=reply, text="z" * 100_000))
    answers["Reply, 100 KB"] = (response.status, took, _modal_error(response))
    assert "too long" in answers["Reply, 100 KB"][2]

    print("\nlong inputs:\n" + "\n".join(f"  {k}: {s} in {t:.2f}s: {a}" for k, (s, t, a) in answers.items()))
    late = {name: took for name, (_, took, _) in answers.items() if took > SLACK_ACK_SECONDS}
    assert late == {}, f"acks over Slack's 3 s: {late}"
    log = bot.output()[log_from:]
    assert [line for line in log.splitlines() if _LOUD.search(line)] == [], log[-4000:]
    after = store.load(run_id)
    assert after == before, "the run was not touched by any of it"
    made = [method for method, _ in local_slack.calls[calls_before:]]
    assert not {"chat.postMessage", "chat.update", "chat.delete"} & set(made), made
