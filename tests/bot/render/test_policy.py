"""What cards and thread notices say about an ask's terms: who may decide, how many
approvals it needs and has, when it expires, escalation, expiry and cancellation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.render import ask_card, ask_notice, decided_card, mention_id, mention_ids, obsolete_card, run_cancelled
from engine.policy import AskRules
from engine.records import Ask, AskStatus, Closed, Decision, MessageRef, Run, RunStatus, Verdict
from tests.bot.render import all_text, assert_within_limits

EXPIRES = 1_700_086_400.0
EXPIRY_DATE = "<!date^1700086400^{date_short_pretty} at {time}|2023-11-15 22:13 UTC>"


def make_run(**changes: Any) -> Run:
    base = Run(
        run_id="run_01HZX",
        graph="deploy",
        task="ship it",
        started_by="U0STARTER",
        status=RunStatus.WAITING,
        version=3,
        created_at=1_700_000_000.0,
        updated_at=1_700_000_000.0,
    )
    return base.evolve(**changes)


def make_ask(**changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": "a1",
        "interrupt_id": "v1:before_tools:xyz",
        "name": "approve_deploy",
        "reason": "Deploy v2 to prod?",
        "node_id": "deployer",
        "status": AskStatus.PENDING,
        "created_at": 1_700_000_000.0,
    }
    fields.update(changes)
    return Ask(**fields)


def vote(user: str, at: float) -> Decision:
    return Decision(verdict=Verdict.APPROVE, user=user, at=at)


def terms_line(card: Any) -> str:
    """The context line between the body and the buttons."""
    blocks = card.blocks
    index = next(i for i, b in enumerate(blocks) if b["type"] == "actions")
    block = blocks[index - 1]
    assert block["type"] == "context"
    return str(block["elements"][0]["text"])


def test_anyone_may_decide_a_card_without_approvers() -> None:
    card = ask_card(run=make_run(), ask=make_ask())
    assert_within_limits(card)
    assert terms_line(card) == "*Who may decide:* anyone in the channel"


def test_a_live_card_names_approvers_quorum_votes_and_expiry() -> None:
    rules = AskRules(approvers=("U0ALICE", "S0ONCALL", "W0BOB"), quorum=2, expires_at=EXPIRES)
    ask = make_ask(rules=rules, votes={"U0ALICE": vote("U0ALICE", 5.0)})
    card = ask_card(run=make_run(), ask=ask)
    assert_within_limits(card)
    assert terms_line(card) == (
        "*Who may decide:* <@U0ALICE>, <!subteam^S0ONCALL> or <@W0BOB>"
        f" · Approvals: 1 of 2 — <@U0ALICE> · expires {EXPIRY_DATE}"
    )
    labels = [e["text"]["text"] for b in card.blocks if b["type"] == "actions" for e in b["elements"]]
    assert labels == ["Approve", "Reject", "Reply"]


def test_approvals_are_listed_in_the_order_given() -> None:
    rules = AskRules(approvers=None, quorum=3)
    ask = make_ask(rules=rules, votes={"U0LATE": vote("U0LATE", 9.0), "U0EARLY": vote("U0EARLY", 1.0)})
    assert "Approvals: 2 of 3 — <@U0EARLY>, <@U0LATE>" in terms_line(ask_card(run=make_run(), ask=ask))
    none_yet = make_ask(rules=rules)
    assert "Approvals: 0 of 3" in terms_line(ask_card(run=make_run(), ask=none_yet))


def test_an_escalated_card_adds_the_escalation_group() -> None:
    rules = AskRules(approvers=("U0ALICE",), escalate_at=10.0, escalate_to=("S0LEADS", "U0CTO"))
    card = ask_card(run=make_run(), ask=make_ask(rules=rules, escalated=True))
    line = terms_line(card)
    assert line.startswith("*Who may decide:* <@U0ALICE>, <!subteam^S0LEADS> or <@U0CTO>")
    assert line.endswith("escalated to <!subteam^S0LEADS> and <@U0CTO>")
    not_yet = terms_line(ask_card(run=make_run(), ask=make_ask(rules=rules)))
    assert not_yet == "*Who may decide:* <@U0ALICE>", "the group is named once it may decide"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("U0ALICE", "<@U0ALICE>"),
        ("W0BOB", "<@W0BOB>"),
        ("S0ONCALL", "<!subteam^S0ONCALL>"),
        ("U1", "U1"),  # too short for a Slack id
        ("<!channel>", "&lt;!channel&gt;"),
        ("U0ALICE>, <!here", "U0ALICE&gt;, &lt;!here"),
        ("u0alice", "u0alice"),
        ("B0BOT", "B0BOT"),
        ("S0ONCALL|@here", "S0ONCALL|@here"),
        ("U0\u0410LICE", "U0\u0410LICE"),  # a Cyrillic capital A
    ],
)
def test_only_well_formed_ids_become_mentions(value: str, shown: str) -> None:
    assert mention_id(value) == shown


def test_long_lists_are_cut_and_counted() -> None:
    ids = [f"U0X{i:03d}" for i in range(25)]
    named = mention_ids(ids)
    assert named.count("<@") == 9 and named.endswith(" or 16 more")
    assert mention_ids(["U0A", "U0A"]) == "<@U0A>"
    assert mention_ids(["U0A", "S0B"], joiner="and") == "<@U0A> and <!subteam^S0B>"


def test_a_card_with_hostile_ids_in_its_record_stays_harmless() -> None:
    rules = AskRules(
        approvers=tuple(["<!everyone>", "U0OK", "<https://evil|x>"] * 30),
        quorum=10,
        expires_at=EXPIRES,
        escalate_to=("<!here>",) * 50,
    )
    votes = {f"<!channel>{i}": vote(f"<!channel>{i}", float(i)) for i in range(9)}
    card = ask_card(run=make_run(), ask=make_ask(rules=rules, votes=votes, escalated=True))
    assert_within_limits(card)
    assert "<@U0OK>" in terms_line(card)


def test_a_decided_approval_under_a_quorum_names_every_approver() -> None:
    rules = AskRules(approvers=("S0ONCALL",), quorum=2)
    final = Decision(verdict=Verdict.APPROVE, user="U0SECOND", at=1_700_000_123.0)
    ask = make_ask(rules=rules, votes={"U0FIRST": vote("U0FIRST", 1.0)}, decision=final, status=AskStatus.DECIDED)
    card = decided_card(run=make_run(), ask=ask)
    assert_within_limits(card)
    text = all_text(card)
    assert "✅ Approved by <@U0FIRST> and <@U0SECOND> · <!date^1700000123^" in text
    assert "· 2 of 2 approvals" in text
    assert "Who may decide" not in text, "a decided card shows the outcome, not the terms"
    # The final approver counted once even if the store also kept it among the votes.
    both = ask.__class__(**{**ask.__dict__, "votes": {"U0FIRST": vote("U0FIRST", 1.0), "U0SECOND": final}})
    assert "by <@U0FIRST> and <@U0SECOND> ·" in all_text(decided_card(run=make_run(), ask=both))


def test_a_rejection_after_approvals_says_whose_approvals_it_overruled() -> None:
    rules = AskRules(quorum=3)
    final = Decision(verdict=Verdict.REJECT, user="U0NO", at=0.0, text="not today")
    ask = make_ask(rules=rules, votes={"U0YES": vote("U0YES", 1.0)}, decision=final, status=AskStatus.DECIDED)
    text = all_text(decided_card(run=make_run(), ask=ask))
    assert "❌ Rejected by <@U0NO> ·" in text
    assert "after 1 of 3 approvals (<@U0YES>)" in text


def test_an_expired_card_names_nobody_and_gives_the_bots_reason() -> None:
    reason = "Nobody decided within 3 days; the ask expired and counts as a rejection."
    expired = Decision(verdict=Verdict.REJECT, user="", at=EXPIRES, text=reason, expired=True)
    card = decided_card(run=make_run(), ask=make_ask(decision=expired, status=AskStatus.DECIDED))
    assert_within_limits(card)
    text = all_text(card)
    assert f"⌛ Expired: nobody decided in time · {EXPIRY_DATE}" in text
    assert f"> {reason}" in text
    assert "<@>" not in text and "by " not in card.text
    assert "Expired" in card.text


def test_a_cancelled_card_says_who_cancelled() -> None:
    run = make_run(status=RunStatus.CANCELLED, cancelled_by="U0CANCEL")
    card = obsolete_card(run=run, ask=make_ask(status=AskStatus.OBSOLETE, closed=Closed.CANCELLED))
    assert_within_limits(card)
    assert "The run was cancelled by <@U0CANCEL>; this card can no longer be answered" in all_text(card)
    nobody = obsolete_card(run=make_run(), ask=make_ask(status=AskStatus.OBSOLETE, closed=Closed.CANCELLED))
    assert "The run was cancelled; this card" in all_text(nobody)


def test_the_final_message_of_a_cancelled_run_names_who_cancelled() -> None:
    message = run_cancelled(run=make_run(status=RunStatus.CANCELLED, cancelled_by="U0CANCEL"))
    assert_within_limits(message)
    assert ":no_entry_sign: *deploy* was cancelled by <@U0CANCEL>" in all_text(message)
    assert message.text.endswith("was cancelled by <@U0CANCEL>")
    hostile = run_cancelled(run=make_run(status=RunStatus.CANCELLED, cancelled_by="<!channel>"))
    assert_within_limits(hostile)


def test_a_reminder_mentions_who_may_decide_and_when_it_expires() -> None:
    rules = AskRules(approvers=("U0ALICE", "S0ONCALL"), expires_at=EXPIRES, remind_at=(10.0,))
    ask = make_ask(rules=rules, notices=("remind",), card=MessageRef(channel="C1", ts="1.0"))
    notice = ask_notice(run=make_run(), ask=ask, index=0)
    assert_within_limits(notice)
    assert notice.text == (
        ":bell: Reminder: <@U0ALICE> or <!subteam^S0ONCALL> — *Approve deploy* is waiting for a decision;"
        f" it expires {EXPIRY_DATE}. The card is above in this thread."
    )
    assert all_text(notice) == notice.text


def test_a_reminder_for_anyone_leaves_out_who_already_approved() -> None:
    anyone = make_ask(rules=AskRules(), notices=("skip", "remind"))
    assert ask_notice(run=make_run(), ask=anyone, index=1).text == (
        ":bell: Reminder: *Approve deploy* is waiting for a decision from anyone in the channel."
    )
    rules = AskRules(approvers=("U0ALICE", "U0BOB", "U0CAROL"), quorum=2, expires_at=EXPIRES)
    voted = make_ask(rules=rules, notices=("remind",), votes={"U0BOB": vote("U0BOB", 1.0)})
    text = ask_notice(run=make_run(), ask=voted, index=0).text
    assert text.startswith(":bell: Reminder: <@U0ALICE> or <@U0CAROL> — *Approve deploy* is waiting")
    assert "(1 of 2 approvals so far); it expires" in text


def test_a_reminder_does_not_ping_the_requester_the_policy_refuses_a_yes() -> None:
    rules = AskRules(approvers=("U0STARTER", "U0ALICE"), quorum=1, expires_at=EXPIRES)
    ask = make_ask(rules=rules, notices=("remind",))
    assert ask_notice(run=make_run(), ask=ask, index=0).text.startswith(":bell: Reminder: <@U0ALICE> — ")
    allowed = make_ask(rules=replace(rules, allow_self=True), notices=("remind",))
    assert ask_notice(run=make_run(), ask=allowed, index=0).text.startswith(
        ":bell: Reminder: <@U0STARTER> or <@U0ALICE> — "
    )


def test_an_escalation_mentions_the_escalation_group() -> None:
    rules = AskRules(
        approvers=("U0ALICE",),
        expires_at=EXPIRES,
        escalate_at=1_700_000_000.0 + 7200,
        escalate_to=("S0LEADS", "U0CTO"),
    )
    ask = make_ask(rules=rules, notices=("remind", "escalate"), escalated=True, card=MessageRef(channel="C", ts="1"))
    notice = ask_notice(run=make_run(), ask=ask, index=1)
    assert_within_limits(notice)
    assert notice.text == (
        ":rotating_light: Escalated: <!subteam^S0LEADS> and <@U0CTO> may now decide *Approve deploy*,"
        f" still undecided after 2 h; it expires {EXPIRY_DATE}. The card is above in this thread."
    )


def test_notices_escape_the_title_and_hostile_ids() -> None:
    rules = AskRules(approvers=("<!channel>",) * 50, escalate_at=5.0, escalate_to=("<!here>",) * 50)
    ask = make_ask(name="<!everyone> " * 100, rules=rules, notices=("remind", "escalate"))
    for index in (0, 1):
        notice = ask_notice(run=make_run(), ask=ask, index=index)
        assert_within_limits(notice)
        assert "<!channel>" not in notice.text and "<!here>" not in notice.text
