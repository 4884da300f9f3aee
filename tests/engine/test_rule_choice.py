"""Rules by content (``asks={name: [AskPolicy(when=..., label=..., auto=...)]}``): which rule
applies, failing closed, what is frozen into the ask, and automatic decisions through the
engine with the real SQLite store and the ``payout-rules`` test graph."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.crash import SimulatedCrash
from engine.policy import AskPolicy, AskRules, Policy, PolicyError
from engine.records import AskStatus, RunStatus, Verdict
from engine.rule_choice import FAIL_CLOSED, choose
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource

BIG = AskPolicy(when=lambda d: d["amount"] >= 1000, label="big", quorum=2, approvers=["U0FIN", "U0LEGAL"])
SMALL = AskPolicy(when=lambda d: d["amount"] < 50, label="small", auto="approve")
REST = AskPolicy(approvers=["U0FIN"])
RULES = [BIG, SMALL, REST]


def terms(rules: Any, details: Any) -> AskRules:
    policy = Policy.declare(asks={"pay": rules})
    return policy.rules_for(name="approve_pay", tool="pay", now=0.0, default_expires_after=60.0, details=details)


def test_the_first_rule_that_holds_applies_and_is_named() -> None:
    assert terms(RULES, {"amount": 5000}).label == "big"
    assert terms(RULES, {"amount": 5000}).quorum == 2
    small = terms(RULES, {"amount": 5})
    assert (small.label, small.auto) == ("small", "approve")
    rest = terms(RULES, {"amount": 500})
    assert rest.approvers == ("U0FIN",) and rest.label == "pay rule 3" and rest.auto is None


def test_when_no_rule_holds_the_graph_terms_apply() -> None:
    assert terms([SMALL], {"amount": 500}) == AskRules(expires_at=60.0)


def test_a_graph_without_rules_records_what_it_always_did() -> None:
    plain = Policy.declare(asks={"pay": AskPolicy(quorum=1)})
    rules = plain.rules_for(name="x", tool="pay", now=0.0, default_expires_after=60.0, details={"amount": 1})
    assert rules.label is None and rules.auto is None
    assert "label" not in rules.to_dict() and "auto" not in rules.to_dict()


def test_a_when_that_raises_fails_closed_to_the_strictest_rule_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.rule_choice"):
        chosen = terms(RULES, {"no amount": True})
    assert chosen.quorum == 2 and chosen.approvers == ("U0FIN", "U0LEGAL") and chosen.auto is None
    assert chosen.label == f"big ({FAIL_CLOSED})"
    (record,) = caplog.records
    assert "KeyError" in record.getMessage() and "strictest" in record.getMessage()


def test_failing_closed_prefers_an_automatic_rejection_and_never_approves() -> None:
    stop = AskPolicy(when=lambda d: d["amount"] > 10**6, label="stop", auto="reject")
    assert terms([stop, *RULES], {}).auto == "reject"
    only_auto = [AskPolicy(when=lambda d: d["x"], label="ok", auto="approve")]
    failed = terms(only_auto, {})
    assert failed.auto is None and failed.label == f"graph terms ({FAIL_CLOSED})", "a person decides"


def test_a_when_that_answers_something_else_than_a_bool_fails_closed() -> None:
    assert terms([AskPolicy(when=lambda d: "yes", label="vague", auto="approve")], {}).auto is None


def test_a_when_gets_a_copy_it_cannot_change() -> None:
    details = {"amount": 5, "to": ["a"]}

    def meddle(d: dict[str, Any]) -> bool:
        d["amount"] = 10**9
        d["to"].append("mallory")
        return False

    rule, _ = choose([AskPolicy(when=meddle, label="meddle"), REST], details=details, name="pay")
    assert details == {"amount": 5, "to": ["a"]} and rule is REST


@pytest.mark.parametrize(
    ("asks", "says"),
    [
        ({"pay": []}, "non-empty list"),
        ({"pay": [REST, SMALL]}, "could never apply"),
        ({"pay": [SMALL, "y"]}, "must be an AskPolicy"),
    ],
)
def test_bad_rule_lists_are_refused_at_definition(asks: Any, says: str) -> None:
    with pytest.raises(PolicyError, match=says):
        Policy.declare(asks=asks)


@pytest.mark.parametrize(
    ("keywords", "says"),
    [({"auto": "yes"}, "auto must be"), ({"label": ""}, "label must be"), ({"when": 3}, "when must be")],
)
def test_bad_rule_keywords_are_refused(keywords: dict[str, Any], says: str) -> None:
    with pytest.raises(PolicyError, match=says):
        AskPolicy(**keywords)


def test_the_rule_is_frozen_with_the_ask_record() -> None:
    rules = AskRules(quorum=2, label="big", auto=None)
    assert AskRules.from_dict(rules.to_dict()) == rules
    auto = AskRules(label="small", auto="approve")
    assert AskRules.from_dict(auto.to_dict()) == auto


# -- through the engine -----------------------------------------------------------------------------


class CountingStore(SqliteRunStore):
    """The SQLite store, naming each write it is asked for."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.writes: list[str] = []

    def create(self, run: Any) -> None:
        self.writes.append("create")
        super().create(run)

    def save(self, run: Any, **kwargs: Any) -> Any:
        self.writes.append("save")
        return super().save(run, **kwargs)

    def claim(self, run_id: str, **kwargs: Any) -> Any:
        self.writes.append("claim")
        return super().claim(run_id, **kwargs)

    def record_delivery(self, seen: Any, delivery: Any) -> Any:
        self.writes.append("record_delivery")
        return super().record_delivery(seen, delivery)


async def test_an_automatic_approval_costs_one_write_and_no_card(tmp_path: Any, publisher: RecordingPublisher) -> None:
    store = CountingStore(str(tmp_path / "counted.sqlite3"))
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    run = await engine.start(graph="payout-rules", task="5", user="U0REQ", channel="C1")
    assert run.status is RunStatus.COMPLETED
    assert test_graphs.markers() == ["send_payout 5"]
    # create, the save that records the rule's decision (the one extra write), the pass's
    # own save (which records the thread line too), the final message's record.
    assert store.writes == ["create", "save", "save", "record_delivery"]
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.CONSUMED and ask.card is not None
    assert ask.decision is not None and ask.decision.policy == "small" and ask.decision.verdict is Verdict.APPROVE
    # One message for the ask (its line, through post_card, rendered as a line by the bot), looked for never.
    assert [e[0] for e in publisher.events] == ["started", "card", "finished"]


async def test_an_automatic_approval_whose_pass_died_is_not_sent_again_silently(
    store: SqliteRunStore, publisher: RecordingPublisher, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engine.lifecycle as lifecycle

    passes = {"n": 0}
    real = lifecycle.crash_point

    def dies_after_the_second_pass(name: str) -> None:
        if name == "passed":
            passes["n"] += 1
            if passes["n"] == 2:  # the pass that got the rule's approval ran the tool
                raise SimulatedCrash(name)
        real(name)

    monkeypatch.setattr(lifecycle, "crash_point", dies_after_the_second_pass)
    first = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=30.0)
    with pytest.raises(SimulatedCrash):
        await first.start(graph="payout-rules", task="5", user="U0REQ", channel="C1")
    assert test_graphs.markers() == ["send_payout 5"]
    (run_id,) = {e[1] for e in publisher.events}

    later = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=30.0)
    later._clock = lambda: time.time() + 60  # type: ignore[method-assign]
    await later.sweep()
    run = store.load(run_id)
    assert run is not None and run.status is RunStatus.WAITING
    (again,) = run.pending_asks()
    assert again.retry_of is not None, "a person decides whether to pay again"
    assert test_graphs.markers() == ["send_payout 5"], "the payout ran once"


def test_what_graph_code_gets_from_a_rule() -> None:
    from engine.records import Ask, Decision
    from engine.sources import HITL_INTERRUPT_NAME, response_for

    decided = Decision(verdict=Verdict.APPROVE, user="", at=1.0, policy="small")
    ask = Ask(
        key="k1", interrupt_id="i", name="approve_pay", reason={}, node_id="n", status=AskStatus.DECIDED, created_at=0.0
    )
    assert response_for(ask, decided, run_id="r1") == {
        "decision": "approve",
        "text": None,
        "user": None,
        "policy": "small",
        "approval_id": "r1:k1",
    }
    hitl = Ask(
        key="k2",
        interrupt_id="i",
        name=HITL_INTERRUPT_NAME,
        reason="",
        node_id="n",
        status=AskStatus.DECIDED,
        created_at=0.0,
    )
    assert response_for(hitl, decided, run_id="r1") == "yes", "HumanInTheLoop's own yes"
    rejected = Decision(verdict=Verdict.REJECT, user="", at=1.0, policy="stop")
    assert response_for(hitl, rejected, run_id="r1") == "no"


def test_the_card_names_the_rule_and_an_automatic_decision_is_one_line() -> None:
    from bot.render import cards, messages
    from engine.records import Ask, Decision, Run

    run = Run(
        run_id="r1",
        graph="g",
        task="t",
        started_by="U0REQ",
        status=RunStatus.WAITING,
        version=1,
        created_at=0,
        updated_at=0,
    )
    ask = Ask(
        key="k1",
        interrupt_id="i",
        name="approve_pay",
        reason={"amount": 5000},
        node_id="n",
        status=AskStatus.PENDING,
        created_at=0.0,
        rules=AskRules(label="big"),
    )
    assert "*Rule:* big" in str(cards.ask_card(run=run, ask=ask).blocks)
    decided = Decision(verdict=Verdict.REJECT, user="", at=1.0, policy="over the limit")
    line = messages.auto_decided(
        run=run, ask=ask.__class__(**{**ask.__dict__, "decision": decided, "status": AskStatus.DECIDED})
    )
    assert "rejected by the rule _over the limit_" in line.text and len(line.blocks) == 1


def test_failing_closed_weighs_all_of_as_the_approvals_it_requires() -> None:
    from engine.rule_choice import strictest

    one = AskPolicy(when=lambda d: d["a"] > 1, label="one", approvers=["U0FIN"])
    teams = AskPolicy(when=lambda d: d["a"] > 2, label="teams", all_of=["S0FIN", "S0LEGAL", "U0CEO"])
    two = AskPolicy(when=lambda d: d["a"] > 3, label="two", quorum=2, approvers=["U0A", "U0B"])
    assert strictest([one, teams, two]) is teams, "three approvals from three teams beat two"
    assert terms([one, teams, two], {}).label == f"teams ({FAIL_CLOSED})"
