"""The decision rules, declared once, judged alike by Python and by DynamoDB, on many cases.

``engine.decision_rules`` declares every rule a decision must pass as a condition on the
record. SQLite judges it in Python; DynamoDB renders the same nodes as its condition
expression. Generated records and decisions (approvers, groups, channel, self-approval,
quorum and votes, ``all_of`` entries filled or missing and whether the person was looked
up in them, expiry, offered verdicts, a Reply reading yes, decided asks) check:

* each rule, rendered and evaluated by DynamoDB (moto) on the stored item, holds exactly
  when Python's evaluation on the record says it does;
* ``RunStore.decide`` on every store answers as the rules judged in Python say: the same
  refusal, the same "not pending"/"not offered", or the same record.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.conditions import evaluate
from engine.decision_rules import ALL_OF_LOOKED_UP, record_of, rules_for
from engine.policy import AskRules
from engine.records import AskStatus, Decision, Run, Verdict
from engine.sources import HITL_INTERRUPT_NAME
from engine.store import StoreError
from engine.store_rules import decided
from persistence import dynamo_items as items
from tests.persistence.conftest import Backend, make_run

NOW = time.time()
USERS = ["U0A", "U0B", "U0S", "U0X"]  # U0S starts every run
_ids = itertools.count()


@st.composite
def cases(draw: st.DrawFn) -> tuple[Run, Decision, frozenset[str]]:
    approvers = draw(st.none() | st.lists(st.sampled_from(["U0A", "U0B", "S0G"]), min_size=1, max_size=3, unique=True))
    # The two-person rule: one approval from each entry (a user, or a group), in this order.
    all_of = draw(st.lists(st.sampled_from(["S0F", "S0G", "U0A"]), max_size=3, unique=True))
    quorum = draw(st.integers(max(1, len(all_of)), 3))
    escalated = draw(st.booleans())
    rules = AskRules(
        approvers=tuple(approvers) if approvers is not None else None,
        quorum=quorum,
        allow_self=draw(st.booleans()),
        expires_at=draw(st.sampled_from([None, NOW - 10, NOW + 100])),
        escalate_at=NOW + 50 if escalated else None,
        escalate_to=("S0E",) if escalated else (),
        all_of=tuple(all_of),
    )
    voters = draw(st.lists(st.sampled_from(["U0A", "U0B"]), max_size=2, unique=True)) if quorum > 1 else []
    # Each earlier vote filled an entry nobody else filled, or none.
    slots: dict[str, str | None] = {}
    for voter in voters:
        free = [i for i in all_of if i not in slots.values()]
        slots[voter] = draw(st.sampled_from([None, *free]))
    vote = Decision(verdict=Verdict.APPROVE, user="U0Z", at=NOW - 5)
    base = make_run(f"r-agree-{next(_ids)}", started_by="U0S", channel=draw(st.sampled_from(["C1", "C2", None])))
    status = draw(st.sampled_from([AskStatus.PENDING] * 4 + [AskStatus.DECIDED, AskStatus.OBSOLETE]))
    verdicts = draw(
        st.sampled_from(
            [
                (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY),
                (Verdict.APPROVE, Verdict.REJECT),
                (Verdict.APPROVE, Verdict.REJECT, Verdict.EDIT, Verdict.TRUST),
            ]
        )
    )
    ask = replace(
        base.asks["a1"],
        rules=rules,
        status=status,
        decision=replace(vote, user="U0B", verdict=Verdict.REJECT) if status is AskStatus.DECIDED else None,
        votes={u: replace(vote, user=u, counts_for=slots[u]) for u in voters},
        escalated=draw(st.booleans()) and escalated,
        verdicts=verdicts,
        name=draw(st.sampled_from([HITL_INTERRUPT_NAME, "approve_write_writer"])),
        preview=draw(st.sampled_from([None, None, "pays 5 EUR", {"pays": "5 EUR"}])),  # a yes-reply needs Approve
    )
    run = base.evolve(asks={"a1": ask})
    decision = Decision(
        verdict=draw(st.sampled_from([Verdict.APPROVE, Verdict.APPROVE, *Verdict])),
        user=draw(st.sampled_from(USERS)),
        at=NOW,
        text=draw(st.sampled_from([None, "yes", " Y ", "no", "trust"])),
        expired=draw(st.sampled_from([False, False, False, True])),
        counts_for=draw(st.sampled_from([None, "S0F", "S0G", "U0A"])),  # recounted by the store
    )
    facts = ["S0G", "S0E", "S0F", "C1", "C2", ALL_OF_LOOKED_UP]
    member_of = frozenset(draw(st.lists(st.sampled_from(facts), max_size=4, unique=True)))
    if all_of and draw(st.booleans()):  # mostly as the ballot writes again: looked up in every group
        member_of |= {ALL_OF_LOOKED_UP}
    return run, decision, member_of


def _expected(run: Run, decision: Decision, member_of: frozenset[str]) -> Any:
    try:
        ask = decided(run, run.run_id, "a1", decision, now=NOW, member_of=member_of).asks["a1"]
        return ask, ask.to_dict()  # the dict holds what Decision equality leaves out (counts_for)
    except StoreError as error:
        return (type(error), getattr(error, "refusal", None))


EXAMPLES = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@EXAMPLES
@given(case=cases())
def test_every_store_decides_as_the_declared_rules_judge(backend: Backend, case: Any) -> None:
    if backend.bucket:
        pytest.skip("where the state lives does not change a decision's rules")
    run, decision, member_of = case
    store = backend.store()
    store.create(run)
    expected = _expected(run, decision, member_of)
    try:
        ask = store.decide(run.run_id, "a1", decision, now=NOW, member_of=member_of).asks["a1"]
        got: Any = (ask, ask.to_dict())
    except StoreError as error:
        got = (type(error), getattr(error, "refusal", None))
    assert got == expected, (run.asks["a1"], decision, member_of)


@EXAMPLES
@given(case=cases())
def test_dynamodb_evaluates_each_rendered_rule_as_python_does(dynamodb_only: Backend, case: Any) -> None:
    run, decision, member_of = case
    client = dynamodb_only.store()._ddb  # type: ignore[attr-defined]
    client.put_item(TableName=dynamodb_only.table, Item=items.run_item(run, expires_at=None))
    record = record_of(run, "a1")
    # The drawn decision's rules, and those of an Approve and a Reply reading yes by the same
    # person: every rule of the declaration is met on each record (each checked once).
    probes = [decision, replace(decision, verdict=Verdict.APPROVE), replace(decision, verdict=Verdict.REPLY, text="y")]
    probes += [replace(decision, verdict=Verdict.APPROVE, counts_for=i) for i in run.asks["a1"].rules.all_of]
    rules = {r.holds: r for d in probes for r in rules_for("a1", d, member_of=member_of, now=NOW)}
    for rule in rules.values():
        names: dict[str, str] = {"#probe": "probe"}
        values: dict[str, Any] = {":probe": {"N": "1"}}
        condition = items.render(rule.holds, names, values)
        try:
            client.update_item(
                TableName=dynamodb_only.table,
                Key=items.key(run.run_id),
                UpdateExpression="SET #probe = :probe",
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
            holds = True
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ConditionalCheckFailedException", error
            holds = False
        assert holds == evaluate(rule.holds, record), (rule, condition, run.asks["a1"], decision, member_of)


@pytest.fixture
def dynamodb_only(request: pytest.FixtureRequest, dynamodb_table: str) -> Backend:
    from persistence.dynamodb import DynamoRunStore

    return Backend("dynamodb", lambda: DynamoRunStore(dynamodb_table), dynamodb_table)
