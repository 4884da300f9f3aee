"""The decision rules as declared (``engine.decision_rules``), the condition language they are
written in, the Ballot's channel facts, and how the engine classifies a click's outcome."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from engine import Outcome, RunEngine
from engine.conditions import And, Contains, Empty, Eq, Exists, Gt, In, Le, Missing, Not, Or, Path, evaluate
from engine.decision_rules import Gate, judge, record_of
from engine.policy import AskRules, Refusal
from engine.ports import DecideResult
from engine.records import Ask, AskStatus, Closed, Decision, Run, RunStatus, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import FakeDirectory, RecordingPublisher, RegistrySource
from tests.persistence.conftest import make_run

NOW = time.time()


def _vote(user: str, verdict: Verdict = Verdict.APPROVE, text: str | None = None) -> Decision:
    return Decision(verdict=verdict, user=user, at=NOW, text=text)


def _run(rules: AskRules, **changes: object) -> Run:
    run = make_run("r", channel="C1")
    return run.evolve(asks={"a1": replace(run.asks["a1"], rules=rules, **changes)})  # type: ignore[arg-type]


def _judge(run: Run, decision: Decision, member_of: frozenset[str] = frozenset()) -> Refusal | Gate | None:
    return judge(record_of(run, "a1"), "a1", decision, member_of=member_of, now=NOW)


# -- the condition language --------------------------------------------------------------


def test_conditions_read_absent_paths_and_types_as_dynamodb_does() -> None:
    doc = {"a": {"n": 2, "s": "abc", "l": ["x"], "t": True, "e": [], "none": None}}
    a = Path("a")
    assert evaluate(Exists(a / "n"), doc) and evaluate(Missing(a / "zz"), doc) and evaluate(Missing(a / "none"), doc)
    assert not evaluate(Eq(a / "zz", "x"), doc) and evaluate(Not(Eq(a / "zz", "x")), doc)
    assert evaluate(Gt(a / "n", 1), doc) and not evaluate(Gt(a / "s", 1), doc) and evaluate(Le(a / "n", 2), doc)
    assert not evaluate(Eq(a / "n", True), doc) and evaluate(Eq(a / "t", True), doc), "a bool is not a number"
    assert evaluate(Contains(a / "l", "x"), doc) and evaluate(Contains(a / "s", "bc"), doc)
    assert not evaluate(Contains(a / "n", "2"), doc)
    assert evaluate(In(a / "s", ("q", "abc")), doc) and not evaluate(In(a / "zz", ("abc",)), doc)
    assert evaluate(Empty(a / "e"), doc) and not evaluate(Empty(a / "zz"), doc)
    assert evaluate(And(Exists(a / "n"), Or(Missing(a / "n"), Eq(a / "s", "abc"))), doc)


# -- the rules -------------------------------------------------------------------------------


def test_an_ask_open_to_anyone_needs_the_decider_shown_in_the_runs_channel() -> None:
    run = _run(AskRules())
    assert _judge(run, _vote("U0X")) is Refusal.NOT_IN_CHANNEL
    assert _judge(run, _vote("U0X"), frozenset({"C2"})) is Refusal.NOT_IN_CHANNEL, "another channel"
    assert _judge(run, _vote("U0X"), frozenset({"C1"})) is None
    assert _judge(run, _vote("U0", Verdict.REJECT, "stop")) is None, "the starter may always reject"
    named = _run(AskRules(approvers=("U0X",)))
    assert _judge(named, _vote("U0X")) is None, "named approvers need no channel"


def test_a_reply_reading_yes_under_a_quorum_is_refused_for_every_source() -> None:
    for name in ("approve_write_writer", "strands:human-in-the-loop", "review:query_logs:1"):
        quorum = _run(AskRules(quorum=2), name=name)
        for text in ("yes", " Y ", "t", "TRUST"):
            assert _judge(quorum, _vote("U0A", Verdict.REPLY, text), frozenset({"C1"})) is Refusal.NEEDS_APPROVE
        assert _judge(quorum, _vote("U0A", Verdict.REPLY, "why?"), frozenset({"C1"})) is None
        assert _judge(_run(AskRules(), name=name), _vote("U0A", Verdict.REPLY, "yes"), frozenset({"C1"})) is None


def test_the_first_failing_rule_names_the_answer() -> None:
    rules = AskRules(approvers=("U0A",), quorum=2, expires_at=NOW - 1)
    run = _run(rules)
    assert _judge(run, _vote("U0X")) is Refusal.EXPIRED
    assert _judge(_run(replace(rules, expires_at=None)), _vote("U0")) is Refusal.SELF_APPROVAL
    assert _judge(_run(replace(rules, expires_at=None)), _vote("U0X")) is Refusal.NOT_APPROVER
    voted = _run(replace(rules, expires_at=None), votes={"U0A": _vote("U0A")})
    assert _judge(voted, _vote("U0A")) is Refusal.ALREADY_APPROVED
    assert _judge(_run(rules, status=AskStatus.DECIDED), _vote("U0X")) is Gate.NOT_PENDING
    offered = _run(replace(rules, expires_at=None), verdicts=(Verdict.APPROVE,))
    assert _judge(offered, _vote("U0A", Verdict.TRUST)) is Gate.NOT_OFFERED
    expiry = replace(_vote("bot", Verdict.REJECT), expired=True)
    assert _judge(run, expiry) is None, "the bot's own expiry is never refused"


# -- the Ballot: channel membership as a fact ------------------------------------------------


@pytest.fixture
def channels() -> FakeDirectory:
    return FakeDirectory(channels={"C1": {"U0IN", "U0REQ"}})


async def test_a_click_on_a_card_is_checked_against_its_channel_before_the_one_write(
    store: SqliteRunStore, publisher: RecordingPublisher, channels: FakeDirectory
) -> None:
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, directory=channels)
    run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
    ask = run.pending_asks()[0]
    assert ask.card is not None
    outsider = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=_vote("U0OUT"), card=ask.card)
    assert outsider.refusal is Refusal.NOT_IN_CHANNEL and outsider.outcome is Outcome.REFUSED
    stored = store.load(run.run_id)
    assert stored is not None and stored.asks[ask.key].status is AskStatus.PENDING
    before = stored.version
    inside = await engine.decide(run_id=run.run_id, ask_key=ask.key, decision=_vote("U0IN"), card=ask.card)
    assert inside.accepted and inside.outcome is Outcome.DECIDED
    assert inside.run is not None and inside.run.version == before + 1, "one write"
    assert channels.channel_lookups == [("U0OUT", "C1"), ("U0IN", "C1")]


async def test_without_a_card_the_refusal_looks_up_the_runs_channel_and_a_failed_lookup_refuses(
    store: SqliteRunStore, publisher: RecordingPublisher, channels: FakeDirectory
) -> None:
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, directory=channels)
    run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
    key = run.pending_asks()[0].key

    async def broken(user: str, channel: str) -> bool:
        raise TimeoutError

    failing = FakeDirectory()
    failing.in_channel = broken  # type: ignore[method-assign]
    blind = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, directory=failing)
    assert (await blind.decide(run_id=run.run_id, ask_key=key, decision=_vote("U0IN"))).refusal is (
        Refusal.NOT_IN_CHANNEL
    ), "a failed lookup counts as not in the channel"
    home = await engine.decide(run_id=run.run_id, ask_key=key, decision=_vote("U0IN"))  # an App Home click
    assert home.accepted and channels.channel_lookups == [("U0IN", "C1")]


async def test_a_lookup_that_hangs_counts_as_not_shown_within_the_timeout(
    store: SqliteRunStore, publisher: RecordingPublisher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A modal is decided inside Slack's 3-second ack: a Slack lookup stuck in a 429's
    Retry-After must not hold it, so past the timeout the fact is not shown (fail closed)."""
    monkeypatch.setattr("engine.ballot.LOOKUP_TIMEOUT_SECONDS", 0.2)
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    run = await engine.start(graph="guarded-write", task="t", user="U0REQ", channel="C1")
    ask = run.pending_asks()[0]

    async def stuck(user: str, channel: str) -> bool:
        await asyncio.sleep(30)
        return True

    hanging = FakeDirectory()
    hanging.in_channel = stuck  # type: ignore[method-assign]
    slow = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, directory=hanging)
    started = time.monotonic()
    result = await slow.decide(run_id=run.run_id, ask_key=ask.key, decision=_vote("U0IN"), card=ask.card)
    assert result.refusal is Refusal.NOT_IN_CHANNEL
    assert time.monotonic() - started < 2.0, "two lookups at most, each cut at the timeout"


# -- the outcome of a click ------------------------------------------------------------------


def _ask(**changes: object) -> Ask:
    return replace(make_run("r").asks["a1"], **changes)  # type: ignore[arg-type]


def test_every_outcome_is_classified_by_the_engine() -> None:
    run = make_run("r")
    taken = _ask(status=AskStatus.DECIDED, decision=_vote("U0B"))
    cases = [
        (DecideResult(accepted=True, run=run, ask=_ask(status=AskStatus.DECIDED, decision=_vote("U0A"))), "decided"),
        (DecideResult(accepted=True, run=run, ask=_ask(votes={"U0A": _vote("U0A")})), "counted"),
        (DecideResult(accepted=False, run=run, ask=_ask(), refusal=Refusal.NOT_APPROVER), "refused"),
        (DecideResult(accepted=False, run=run, ask=taken), "taken"),
        (DecideResult(accepted=False, run=run, ask=_ask(decision=replace(_vote("b"), expired=True))), "expired"),
        (DecideResult(accepted=False, run=run, ask=_ask(closed=Closed.CHANGED)), "changed"),
        (
            DecideResult(
                accepted=False,
                run=run.evolve(status=RunStatus.CANCELLED, cancelled_by="U0C"),
                ask=_ask(status=AskStatus.OBSOLETE),
            ),
            "cancelled",
        ),
        (DecideResult(accepted=False, run=run, ask=_ask(status=AskStatus.OBSOLETE)), "moved_on"),
        (DecideResult(accepted=False, run=run, ask=_ask()), "not_offered"),
        (DecideResult(accepted=False, run=None, ask=None), "unknown"),
        (DecideResult(accepted=False, run=None, ask=None, unrecorded=True), "unrecorded"),
    ]
    assert [(r.outcome.value) for r, _ in cases] == [want for _, want in cases]
    assert cases[3][0].decided_by == "U0B" and cases[6][0].decided_by == "U0C"
