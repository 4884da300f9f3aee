"""Hostile review of rules by content: an Edit judged by its own rule on every path.

``payout-rules`` (``tests.support.graphs``): from 50 to 999 Bob decides (and may Edit),
over 1,000,000 the rule rejects. An Edit that moves the call to another rule is not sent
(``engine.rule_choice.moved_by_edit``); these tests cover the paths around that check.
"""

from __future__ import annotations

import time
from dataclasses import replace

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.policy import AskPolicy, Policy
from engine.records import Ask, AskStatus, Closed, Decision, ToolCall, Verdict
from engine.rule_choice import moved_by_edit
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource, handed_to_a_dead_pass


def _engine(store: SqliteRunStore, publisher: RecordingPublisher) -> RunEngine:
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)


async def test_a_retry_after_a_takeover_does_not_send_an_edit_that_moved_the_call_to_another_rule(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    """Bob's Edit to 2,000,000 reached a pass that died before saving (its claim marked it
    handed): the takeover asks again on a "may have acted" card whose Retry sends the Edit
    as it was. A Retry by Bob must not pay 2,000,000: that amount is not Bob's rule's."""
    first = _engine(store, publisher)
    run = await first.start(graph="payout-rules", task="100", user="U0DAVE", channel="C1")
    (ask,) = run.pending_asks()
    assert ask.rules.label == "default: Bob" and ask.tool is not None
    edit = Decision(verdict=Verdict.EDIT, user="U0BOB", at=time.time(), edited_input={"amount": 2_000_000})
    assert (await first.decide(run_id=run.run_id, ask_key=ask.key, decision=edit)).accepted
    decided = store.load(run.run_id, snapshot=False)
    assert decided is not None
    handed_to_a_dead_pass(store, decided, ask.key)

    sweeper = _engine(store, publisher)
    (swept,) = await sweeper.sweep()
    (again,) = swept.pending_asks()
    assert again.retry_of is not None and again.tool is not None and again.tool.input == {"amount": 2_000_000}
    retry = Decision(verdict=Verdict.RETRY, user="U0BOB", at=time.time())
    result = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=retry, claim=True)
    assert result.accepted
    after = await sweeper.follow_up(result)

    assert test_graphs.markers() == [], "Bob's Retry did not pay an amount past his rule"
    assert after is not None
    retried = after.asks[again.key]
    assert retried.status is AskStatus.OBSOLETE and retried.closed is Closed.CHANGED
    (new,) = after.pending_asks()
    assert new.tool is not None and new.tool.input == {"amount": 100} and new.rules.label == "default: Bob"


def test_an_edit_whose_when_fails_on_the_edited_input_fails_closed() -> None:
    """A ``when`` that raises on the edited input (a string amount) chooses the strictest
    rule, not the one the card showed: the Edit is not sent."""
    policy = Policy.declare(
        asks={
            "send_payout": [
                AskPolicy(when=lambda d: d["amount"] >= 1000, label="big", quorum=2),
                AskPolicy(label="small", approvers=["U0BOB"]),
            ]
        }
    )
    now = time.time()
    rules = policy.rules_for(
        name="approve_payout", tool="send_payout", now=now, default_expires_after=60, details={"amount": 5}
    )
    base = Ask(
        key="k1",
        interrupt_id="v1:before_tool_call:tu1:x",
        name="approve_payout",
        reason={"amount": 5},
        node_id="payer",
        status=AskStatus.DECIDED,
        created_at=now,
        tool=ToolCall(name="send_payout", input={"amount": 5}),
        rules=rules,
    )

    def edited(to: object) -> Ask:
        decision = Decision(verdict=Verdict.EDIT, user="U0BOB", at=now, edited_input={"amount": to})
        return replace(base, decision=decision)

    assert moved_by_edit([edited(7)], policy, now=now, default_expires_after=60) == {}
    assert moved_by_edit([edited(5000)], policy, now=now, default_expires_after=60) == {"k1": "big"}
    assert moved_by_edit([edited("lots")], policy, now=now, default_expires_after=60) == {"k1": "big (fail-closed)"}


def test_a_failing_when_fails_closed_to_the_two_team_rule_not_to_one_named_approver() -> None:
    """The strictest rule of a list is the one that lets the least through: one approval
    from each of two teams is stricter than one named person's, though it names nobody."""
    from engine.rule_choice import choose

    def broken(details: object) -> bool:
        raise KeyError("amount")

    rules = [
        AskPolicy(when=broken, label="big: finance and legal", all_of=["S0FIN", "S0LEGAL"]),
        AskPolicy(when=lambda d: d["amount"] >= 1000, label="Alice", approvers=["U0ALICE"]),
        AskPolicy(label="Bob", approvers=["U0BOB"]),
    ]
    chosen, label = choose(rules, details={"amount": 5}, name="send_payout")
    assert chosen.all_of == ["S0FIN", "S0LEGAL"] and label == "big: finance and legal (fail-closed)"


def test_a_preview_holding_what_is_not_text_is_shown_and_digested() -> None:
    """A preview built from a model's words may hold an unpaired surrogate (and NaN, bytes):
    the ask's digest and its storage need UTF-8, so the preview replaces it, in text and tables."""
    from engine.previews import compute
    from engine.records import ask_digest

    table = compute(lambda d: {"payee": "Bob\ud800", "rate": float("nan"), b"k": b"v"}, {}, name="p")
    text = compute(lambda d: "pays \udfff", {}, name="p")
    assert table == {"payee": "Bob\ufffd", "rate": "NaN", "b'k'": "\"b'v'\""} and text == "pays \ufffd"
    assert ask_digest(name="p", reason={}, tool=None, preview=table) != ask_digest(
        name="p", reason={}, tool=None, preview=text
    )


def test_replies_that_read_as_yes_or_trust_are_refused_only_where_they_would_approve() -> None:
    """A question's answer "yes" or "t" is text for the model (allowed, under all_of too); a
    HumanInTheLoop reply "t" is a Trust (refused where Trust is not offered); a gate's "t" is text."""
    from engine.decision_rules import judge
    from engine.policy import Refusal
    from engine.sources import HANDOFF_INTERRUPT_NAME, HITL_INTERRUPT_NAME

    def refusal(name: str, text: str, *, verdicts: list[str], all_of: bool = False) -> object:
        rules: dict[str, object] = {"quorum": 1, "allow_self": False}
        if all_of:
            rules |= {"all_of": ["U0BOB"], "approvers": ["U0BOB"]}
        ask = {"name": name, "status": "pending", "verdicts": verdicts, "rules": rules}
        record = {"started_by": "U0DAVE", "channel": "C1", "asks": {"k": ask}}
        reply = Decision(verdict=Verdict.REPLY, user="U0BOB", at=time.time(), text=text)
        return judge(record, "k", reply, member_of=frozenset({"C1"}), now=time.time())

    assert refusal(HANDOFF_INTERRUPT_NAME, "yes", verdicts=["reply", "reject"], all_of=True) is None
    assert refusal(HANDOFF_INTERRUPT_NAME, "T", verdicts=["reply", "reject"]) is None
    assert refusal("approve_call", "t", verdicts=["approve", "reject", "reply", "edit"]) is None
    assert refusal(HITL_INTERRUPT_NAME, " t", verdicts=["approve", "reject", "reply"]) is Refusal.NEEDS_APPROVE
    assert refusal(HITL_INTERRUPT_NAME, "trust", verdicts=["approve", "reject", "reply", "trust"]) is None
    assert refusal(HITL_INTERRUPT_NAME, "yes", verdicts=["approve", "reject", "reply"], all_of=True) is not None


async def test_a_retry_of_a_padded_call_under_a_preview_is_sent_not_voided(
    store: SqliteRunStore, publisher: RecordingPublisher
) -> None:
    """A call too big to keep (tool ``None``) names its tool on the ask, and its preview is
    keyed by that name. The "may have acted" ask a takeover makes must keep the name: without
    it the preview's function is not found on Retry, the approval is voided as changed and a
    Retry can never send the call it shows."""
    first = _engine(store, publisher)
    run = await first.start(graph="payout-preview", task="1000 20000", user="U0DAVE", channel="C1")
    (ask,) = run.pending_asks()
    assert ask.tool is None and ask.gated_tool == "send_payout" and ask.preview is not None
    approve = Decision(verdict=Verdict.APPROVE, user="U0ALICE", at=time.time())
    assert (await first.decide(run_id=run.run_id, ask_key=ask.key, decision=approve)).accepted
    decided = store.load(run.run_id, snapshot=False)
    assert decided is not None
    handed_to_a_dead_pass(store, decided, ask.key)

    sweeper = _engine(store, publisher)
    (swept,) = await sweeper.sweep()
    (again,) = swept.pending_asks()
    assert again.retry_of is not None and again.gated_tool == "send_payout", "the tool is still named"
    retry = Decision(verdict=Verdict.RETRY, user="U0ALICE", at=time.time())
    result = await sweeper.decide(run_id=run.run_id, ask_key=again.key, decision=retry, claim=True)
    assert result.accepted
    after = await sweeper.follow_up(result)

    assert after is not None
    assert [e.kind for e in after.audit if e.kind == "preview_changed"] == [], "the Retry was not voided"
    assert test_graphs.markers() == ["send_payout 1000"]


def test_preview_rows_whose_keys_the_cut_makes_equal_are_all_shown_and_bound() -> None:
    """A table keyed by what the model wrote (a payee per row): two payees alike in their
    first 80 characters must stay two rows. One overwriting the other hid a payout from the
    card, and a change of the hidden amount no longer voided the approval."""
    from engine.previews import bounded, changed
    from engine.sources import details_of

    alike = "ACME Holdings " + "x" * 100
    amounts = {"A": 10, "B": 1_000_000}

    def payees(details: dict[str, int]) -> dict[str, str]:
        return {f"{alike} {name}": f"{amount} EUR" for name, amount in amounts.items()}

    shown = bounded(payees({}))
    assert isinstance(shown, dict) and len(shown) == 2 and sorted(shown.values()) == ["10 EUR", "1000000 EUR"]
    assert len(bounded({1: "a", "1": "b", "": "c", "(blank)": "d", "…": "e", **{f"k{i}": i for i in range(30)}})) == 21
    ask = Ask(
        key="k1",
        interrupt_id="i1",
        name="approve_pay",
        reason={"amount": 1},
        node_id="n",
        status=AskStatus.DECIDED,
        created_at=0.0,
        decision=Decision(verdict=Verdict.APPROVE, user="U1", at=0.0),
        tool=ToolCall(name="pay", input={"amount": 1}),
        preview=shown,
    )
    amounts["A"] = 20  # the row the card used to hide (the later one overwrote it)
    assert changed([ask], {"pay": payees}, details=details_of) == ["k1"]
