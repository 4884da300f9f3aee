"""Rules by content and automatic decisions through the real server, on both stores.

The graph is ``payout-rules`` (``tests.support.graphs``): a ``send_payout(amount)`` call held
by a BeforeToolCallEvent gate, under ``asks={"send_payout": PAYOUT_RULES}``: over 1,000,000
is rejected by the rule, 1,000 or more asks Alice, under 50 is approved by the rule, the
rest asks Bob. The task is the amount. The gate writes every answer it gets to
``<markers>.answers``; the tool marks each payout it made in the markers file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.records import AskStatus, RunStatus, Verdict
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
    run_of,
)


def _answers(markers: Path) -> list[dict[str, Any]]:
    path = Path(str(markers) + ".answers")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _markers(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _lines(slack: LocalSlack) -> list[str]:
    return [all_text(m) for m in slack.messages(CHANNEL) if "by the rule" in all_text(m)]


async def test_a_rule_by_amount_chooses_who_may_decide(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await user.slash_command(text="run payout-rules 5000", user_id="U0DAVE", channel_id=CHANNEL)
    (card,) = await local_slack.wait_for(lambda: cards(local_slack), timeout=30, what="the payout's card")
    text = all_text(card)
    assert "Rule:* 1,000 or more: Alice" in text, "the card names the rule that applies"
    assert "<@U0ALICE>" in text and "<@U0BOB>" not in text, text
    run = run_of(backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert ask.rules.approvers == ("U0ALICE",) and ask.rules.label == "1,000 or more: Alice", "terms frozen"

    await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: local_slack.ephemerals("U0BOB"), timeout=30, what="Bob's refusal")
    assert _markers(markers_file) == [], "Bob may approve small payouts only"

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the final message")
    assert _markers(markers_file) == ["send_payout 5000"]
    (answer,) = _answers(markers_file)
    assert answer["user"] == "U0ALICE" and "policy" not in answer


async def test_rules_decide_by_themselves_with_no_card_and_the_audit_shows_it(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    store = backend.open_store()

    # Under 50: approved by the rule; the tool runs, nobody is asked.
    await user.slash_command(text="run payout-rules 5", user_id="U0DAVE", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the small payout's end")
    assert cards(local_slack) == [], "an automatic decision posts no card"
    assert _markers(markers_file) == ["send_payout 5"]
    (approved,) = _answers(markers_file)
    assert approved["decision"] == "approve" and approved["user"] is None and approved["text"] is None
    assert approved["policy"] == "small" and approved["approval_id"], approved
    run = run_of(store, local_slack)
    assert run.status is RunStatus.COMPLETED
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.CONSUMED and ask.decision is not None
    assert ask.decision.user == "" and ask.decision.policy == "small" and ask.decision.verdict is Verdict.APPROVE
    assert ask.card is not None, "its thread line is recorded"
    assert [e.text for e in run.audit if e.kind == "auto_decided"] == ["small: approved by the rule, no card"]
    await eventually(lambda: len(_lines(local_slack)) == 1, what="the rule's line in the thread")
    (line,) = _lines(local_slack)
    assert "approved by the rule _small_" in line, line

    # Over the limit: rejected by the rule; the tool does not run.
    await user.slash_command(text="run payout-rules 2000000", user_id="U0DAVE", channel_id=CHANNEL)

    def rejected_answer() -> dict[str, Any] | None:
        answers = _answers(markers_file)
        return answers[1] if len(answers) > 1 else None

    rejected = await eventually(rejected_answer, what="the rule's rejection")
    assert rejected["decision"] == "reject" and rejected["user"] is None and rejected["policy"] == "over the limit"
    await eventually(lambda: len(_lines(local_slack)) == 2, what="the rejection's line in the thread")
    assert "rejected by the rule _over the limit_" in _lines(local_slack)[1]

    def ended() -> Any:
        runs = [store.load(r, snapshot=False) for r in _run_ids(local_slack)]
        return all(r is not None and r.status.terminal for r in runs) and len(runs) == 2

    await eventually(ended, what="both runs to end")
    assert cards(local_slack) == [], "still no card"
    assert _markers(markers_file) == ["send_payout 5"], "the rejected payout never ran"
    last = store.load(_run_ids(local_slack)[1], snapshot=False)
    assert last is not None
    assert [e.text for e in last.audit if e.kind == "auto_decided"] == ["over the limit: rejected by the rule, no card"]


def _run_ids(slack: LocalSlack) -> list[str]:
    import re

    found = []
    for message in slack.messages(CHANNEL):
        if "started" in str(message.get("text", "")):
            match = re.search(r"run `([a-z0-9]+)`", all_text(message) + str(message.get("blocks")))
            if match:
                found.append(match.group(1))
    return found
