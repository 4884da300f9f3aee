"""Work records on the wire, and what ``perform`` tells people: cancel, audit, refused starts, votes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

import bot.perform
from bot.listeners.outcomes import loser_text
from bot.perform import perform
from bot.work import (
    RUN_ID,
    CancelRun,
    Decide,
    ListRuns,
    ShowAudit,
    ShowStats,
    ShowStatus,
    StartRun,
    Work,
    from_wire,
    run_id_for,
    to_wire,
)
from engine import DecideResult
from engine.audit import AuditEvent
from engine.ids import new_run_id
from engine.oversight import Cancelled, CancelOutcome
from engine.policy import AskRules, Refusal
from engine.ports import StartRefused
from engine.records import Ask, AskStatus, Decision, MessageRef, Run, RunStatus, Verdict
from tests.bot.render import assert_harmless

RUN = "abcdefghijklmnop"
URL = "https://hooks.example/response"
NOW = 1_800_000_000.0


# --- the wire -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "work",
    [
        CancelRun(run_id=RUN, user="U0ALICE", response_url=URL),
        ShowAudit(run_id=RUN, user="U0ALICE", response_url=""),
    ],
    ids=lambda w: type(w).__name__,
)
def test_new_work_round_trips_through_json(work: Work) -> None:
    wire = json.loads(json.dumps(to_wire(work)))
    assert wire["kind"] in ("cancel", "audit")
    assert from_wire(wire) == work


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "cancel", "run_id": RUN, "user": "U1"},  # no response_url
        {"kind": "cancel", "run_id": RUN, "user": "U1", "response_url": URL, "extra": 1},
        {"kind": "cancel", "run_id": 7, "user": "U1", "response_url": URL},
        {"kind": "cancel", "run_id": RUN, "user": None, "response_url": URL},
        {"kind": "cancel", "run_id": RUN, "user": "", "response_url": URL},
        {"kind": "cancel", "run_id": RUN, "user": "U1", "response_url": ["x"]},
        {"kind": "audit", "run_id": "../../etc", "user": "U1", "response_url": URL},
        {"kind": "audit", "run_id": RUN.upper(), "user": "U1", "response_url": URL},
        {"kind": "audit", "run_id": RUN + "a", "user": "U1", "response_url": URL},
        {"kind": "audit", "run_id": RUN, "user": {"id": "U1"}, "response_url": URL},
        {"kind": "audit"},
        {"kind": "Audit", "run_id": RUN, "user": "U1", "response_url": URL},
    ],
)
def test_malformed_work_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        from_wire(data)


def test_run_ids_the_bot_makes_have_the_checked_shape() -> None:
    assert RUN_ID.match(new_run_id())
    assert RUN_ID.match(run_id_for("13345224609.738474920.8ee904c5") or "")


# --- perform: fakes -------------------------------------------------------------------


@dataclass
class Sent:
    url: str
    text: str
    blocks: list[dict[str, Any]] | None
    response_type: str


class FakeWebhook:
    sent: list[Sent] = []  # noqa: RUF012 (reset by the fixture)

    def __init__(self, url: str) -> None:
        self.url = url

    async def send(self, *, text: str, blocks: Any = None, response_type: str, replace_original: bool) -> Any:
        assert replace_original is False
        FakeWebhook.sent.append(Sent(self.url, text, blocks, response_type))
        return SimpleNamespace(status_code=200)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[Sent]:
    FakeWebhook.sent = []
    monkeypatch.setattr(bot.perform, "AsyncWebhookClient", FakeWebhook)
    return FakeWebhook.sent


@dataclass
class FakeEngine:
    cancelled: Cancelled | None = None
    decided: DecideResult | None = None
    oversee: tuple[bool, tuple[str, ...]] = (True, ())
    start_error: Exception | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)

    async def cancel(self, *, run_id: str, user: str, channel: str | None = None) -> Cancelled:
        self.calls.append(("cancel", (run_id, user)))
        assert self.cancelled is not None
        return self.cancelled

    async def may_oversee(self, run: Run, user: str, *, channel: str | None = None) -> tuple[bool, tuple[str, ...]]:
        self.calls.append(("may_oversee", (run.run_id, user)))
        return self.oversee

    async def start(self, **kwargs: Any) -> Run:
        self.calls.append(("start", kwargs))
        assert self.start_error is not None
        raise self.start_error

    async def decide(self, **kwargs: Any) -> DecideResult:
        self.calls.append(("decide", kwargs))
        assert self.decided is not None
        return self.decided

    async def follow_up(self, result: DecideResult) -> Run | None:
        self.calls.append(("follow_up", result))
        return result.run


@dataclass
class FakeStore:
    runs: dict[str, Run] = field(default_factory=dict)
    loads: list[tuple[str, bool]] = field(default_factory=list)

    def load(self, run_id: str, *, snapshot: bool = True) -> Run | None:
        self.loads.append((run_id, snapshot))
        return self.runs.get(run_id)


def services(engine: FakeEngine, store: FakeStore | None = None) -> Any:
    return SimpleNamespace(
        engine=engine,
        store=store or FakeStore(),
        slack=SimpleNamespace(command="/graph"),
        graphs=SimpleNamespace(describe=lambda: [("deploy", "Ship it")]),
    )


def make_run(**changes: Any) -> Run:
    base = Run(
        run_id=RUN,
        graph="deploy",
        task="ship v2",
        started_by="U0ALICE",
        status=RunStatus.WAITING,
        version=1,
        created_at=NOW,
        updated_at=NOW,
    )
    return base.evolve(**changes)


def make_ask(**changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "key": "a1",
        "interrupt_id": "v1:x",
        "name": "approve_deploy",
        "reason": "Deploy?",
        "node_id": "deployer",
        "status": AskStatus.PENDING,
        "created_at": NOW,
    }
    fields.update(changes)
    return Ask(**fields)


# --- perform: cancel ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cancelled", "expected"),
    [
        (Cancelled(outcome=CancelOutcome.CANCELLED), "Cancelled run `abcdefghijklmnop`"),
        (Cancelled(outcome=CancelOutcome.STOPPING), "stopping before its next node"),
        (Cancelled(outcome=CancelOutcome.ALREADY), "already asked to cancel"),
        (Cancelled(outcome=CancelOutcome.FINISHED, status="completed"), "already finished (`completed`)"),
        (
            Cancelled(outcome=CancelOutcome.FINISHED, status="cancelled", ran="nodes finished: <!here>"),
            "What ran: nodes finished: &lt;!here&gt;.",
        ),
        (Cancelled(outcome=CancelOutcome.UNKNOWN), "I don't know a run `abcdefghijklmnop`"),
        (
            Cancelled(outcome=CancelOutcome.NOT_ALLOWED, allowed=("U0BOB", "S0OPS", "<!channel>")),
            "Ask whoever started it, <@U0BOB> or <!subteam^S0OPS>.",
        ),
        (Cancelled(outcome=CancelOutcome.NOT_ALLOWED, allowed=None), "type the command in that channel"),
    ],
    ids=lambda v: v.outcome.value if isinstance(v, Cancelled) else "",
)
async def test_cancel_tells_one_line_per_outcome(sent: list[Sent], cancelled: Cancelled, expected: str) -> None:
    engine = FakeEngine(cancelled=cancelled)
    await perform(CancelRun(run_id=RUN, user="U0CAROL", response_url=URL), services=services(engine))
    assert engine.calls == [("cancel", (RUN, "U0CAROL"))]
    assert len(sent) == 1 and sent[0].response_type == "ephemeral" and sent[0].url == URL
    assert expected in sent[0].text and "\n" not in sent[0].text
    assert_harmless(sent[0].text)
    assert "<!channel>" not in sent[0].text


async def test_a_failing_cancel_is_told_not_raised(sent: list[Sent]) -> None:
    class Broken(FakeEngine):
        async def cancel(self, *, run_id: str, user: str, channel: str | None = None) -> Cancelled:
            raise RuntimeError("store down")

    await perform(CancelRun(run_id=RUN, user="U0CAROL", response_url=URL), services=services(Broken()))
    assert len(sent) == 1 and "try again" in sent[0].text


# --- perform: audit -------------------------------------------------------------------


async def test_audit_is_shown_to_whoever_may_oversee(sent: list[Sent]) -> None:
    run = make_run(audit=(AuditEvent(at=NOW, kind="started", by="U0ALICE", text="deploy: ship <!here>"),))
    store = FakeStore(runs={RUN: run})
    engine = FakeEngine()
    await perform(ShowAudit(run_id=RUN, user="U0ALICE", response_url=URL), services=services(engine, store))
    assert store.loads == [(RUN, False)]
    assert engine.calls == [("may_oversee", (RUN, "U0ALICE"))]
    assert len(sent) == 1 and sent[0].response_type == "ephemeral"
    blocks = sent[0].blocks or []
    shown = "\n".join(b["text"]["text"] for b in blocks if b["type"] == "section")
    assert "started the run" in shown and "&lt;!here&gt;" in shown and "<!here>" not in shown


async def test_audit_is_refused_to_others_naming_who_may(sent: list[Sent]) -> None:
    store = FakeStore(runs={RUN: make_run(audit=(AuditEvent(at=NOW, kind="started", by="U0ALICE"),))})
    engine = FakeEngine(oversee=(False, ("U0BOB", "S0OPS")))
    await perform(ShowAudit(run_id=RUN, user="U0MALLORY", response_url=URL), services=services(engine, store))
    assert len(sent) == 1 and not sent[0].blocks
    text = sent[0].text
    assert "You may not read the audit trail" in text
    assert "<@U0ALICE>" in text and "<@U0BOB>" in text and "<!subteam^S0OPS>" in text
    assert "started the run" not in text


async def test_audit_of_an_unknown_run(sent: list[Sent]) -> None:
    engine = FakeEngine()
    await perform(ShowAudit(run_id=RUN, user="U0ALICE", response_url=URL), services=services(engine))
    assert engine.calls == []
    assert len(sent) == 1 and "I don't know a run" in sent[0].text


async def test_a_long_audit_is_sent_as_several_messages(sent: list[Sent]) -> None:
    events = tuple(AuditEvent(at=NOW + i, kind="reminded", text="x" * 100) for i in range(100))
    store = FakeStore(runs={RUN: make_run(audit=events, audit_dropped=3)})
    await perform(ShowAudit(run_id=RUN, user="U0ALICE", response_url=URL), services=services(FakeEngine(), store))
    assert 2 <= len(sent) <= 4
    assert all(s.response_type == "ephemeral" for s in sent)
    assert "3 earlier events are not kept here" in json.dumps(sent[0].blocks)


# --- perform: refused starts ----------------------------------------------------------


async def test_a_refused_start_names_the_starters(sent: list[Sent]) -> None:
    engine = FakeEngine(start_error=StartRefused(graph="deploy", allowed=("U0BOB", "S0OPS")))
    work = StartRun(run_id=RUN, graph="deploy", task="t", user="U0EVE", channel="C1", response_url=URL)
    await perform(work, services=services(engine))
    assert [c[0] for c in engine.calls] == ["start"]
    assert len(sent) == 1
    assert sent[0].text == "You may not start `deploy`; ask <@U0BOB> or <!subteam^S0OPS> (the graph's starters)."


async def test_a_start_refused_to_everyone(sent: list[Sent]) -> None:
    engine = FakeEngine(start_error=StartRefused(graph="<!channel>", allowed=()))
    work = StartRun(run_id=RUN, graph="<!channel>", task="t", user="U0EVE", channel="C1", response_url=URL)
    await perform(work, services=services(engine))
    assert "You may not start `&lt;!channel&gt;`" in sent[0].text
    assert_harmless(sent[0].text)


# --- perform: votes and refusals ------------------------------------------------------


def decide_work(decision: Decision) -> Decide:
    return Decide(
        run_id=RUN, ask_key="a1", decision=decision, card=MessageRef(channel="C1", ts="1.2"), response_url=URL
    )


async def test_a_counted_vote_is_told_and_the_card_updated(sent: list[Sent]) -> None:
    vote = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW)
    earlier = Decision(verdict=Verdict.APPROVE, user="U0CAROL", at=NOW - 5)
    ask = make_ask(rules=AskRules(quorum=3), votes={"U0CAROL": earlier, "U0BOB": vote})
    result = DecideResult(accepted=True, run=make_run(asks={"a1": ask}), ask=ask)
    assert result.counted
    engine = FakeEngine(decided=result)
    await perform(decide_work(vote), services=services(engine))
    assert [c[0] for c in engine.calls] == ["decide", "follow_up"]
    assert len(sent) == 1 and sent[0].text.startswith("Your approval counts: 2 of 3")
    assert "1 more" in sent[0].text


async def test_a_deciding_click_is_not_told_anything(sent: list[Sent]) -> None:
    decision = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW)
    ask = make_ask(status=AskStatus.DECIDED, decision=decision)
    engine = FakeEngine(decided=DecideResult(accepted=True, run=make_run(asks={"a1": ask}), ask=ask, claimed=True))
    await perform(decide_work(decision), services=services(engine))
    assert [c[0] for c in engine.calls] == ["decide", "follow_up"]
    assert sent == []


async def test_a_refused_click_is_told_why(sent: list[Sent]) -> None:
    ask = make_ask(rules=AskRules(approvers=("U0BOB",)))
    result = DecideResult(accepted=False, run=make_run(asks={"a1": ask}), ask=ask, refusal=Refusal.NOT_APPROVER)
    engine = FakeEngine(decided=result)
    await perform(decide_work(Decision(verdict=Verdict.APPROVE, user="U0EVE", at=NOW)), services=services(engine))
    assert [c[0] for c in engine.calls] == ["decide"]
    assert [s.text for s in sent] == [loser_text(result)]


async def test_a_vote_delivered_twice_is_quiet(sent: list[Sent]) -> None:
    vote = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW)
    ask = make_ask(rules=AskRules(quorum=2), votes={"U0BOB": vote})
    result = DecideResult(accepted=False, run=make_run(asks={"a1": ask}), ask=ask, refusal=Refusal.ALREADY_APPROVED)
    await perform(decide_work(vote), services=services(FakeEngine(decided=result)))
    assert sent == []


async def test_a_second_vote_of_the_same_person_is_told(sent: list[Sent]) -> None:
    first = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW)
    ask = make_ask(rules=AskRules(quorum=2), votes={"U0BOB": first})
    result = DecideResult(accepted=False, run=make_run(asks={"a1": ask}), ask=ask, refusal=Refusal.ALREADY_APPROVED)
    again = Decision(verdict=Verdict.APPROVE, user="U0BOB", at=NOW + 60)
    await perform(decide_work(again), services=services(FakeEngine(decided=result)))
    assert [s.text for s in sent] == [loser_text(result)]


# --- runs and status: the wire --------------------------------------------------------


@pytest.mark.parametrize(
    "work",
    [
        ListRuns(channel="C0E2E", user="U0ALICE", response_url=URL),
        ListRuns(channel="G0PRIVATE", user="U0ALICE", response_url=""),
        ShowStatus(run_id=RUN, user="U0ALICE", response_url=URL),
        ShowStats(channel="C0E2E", user="U0ALICE", response_url=URL),
        ShowStats(channel="C0E2E", user="U0ALICE", response_url=URL, graph="payout-rules"),
    ],
    ids=lambda w: type(w).__name__,
)
def test_runs_and_status_round_trip_through_json(work: Work) -> None:
    wire = json.loads(json.dumps(to_wire(work)))
    assert wire["kind"] in ("runs", "status", "stats")
    assert from_wire(wire) == work


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "runs", "channel": "C1", "user": "U1"},  # no response_url
        {"kind": "runs", "channel": "C1", "user": "U1", "response_url": URL, "run_id": RUN},
        {"kind": "runs", "channel": "", "user": "U1", "response_url": URL},
        {"kind": "runs", "channel": "c1", "user": "U1", "response_url": URL},
        {"kind": "runs", "channel": "C1\n", "user": "U1", "response_url": URL},
        {"kind": "runs", "channel": "<#C1>", "user": "U1", "response_url": URL},
        {"kind": "runs", "channel": ["C1"], "user": "U1", "response_url": URL},
        {"kind": "runs", "channel": "C1", "user": "", "response_url": URL},
        {"kind": "runs", "channel": "C1", "user": "U1", "response_url": 3},
        {"kind": "status", "run_id": RUN, "user": "U1"},
        {"kind": "status", "run_id": "../../etc", "user": "U1", "response_url": URL},
        {"kind": "status", "run_id": RUN + "\n", "user": "U1", "response_url": URL},
        {"kind": "status", "run_id": RUN, "user": "", "response_url": URL},
        {"kind": "status", "run_id": RUN, "user": None, "response_url": URL},
        {"kind": "status", "channel": "C1", "user": "U1", "response_url": URL},
        {"kind": "stats", "channel": "c1", "user": "U1", "response_url": URL},
        {"kind": "stats", "channel": "C1", "user": "", "response_url": URL},
        {"kind": "stats", "channel": "C1", "user": "U1", "response_url": URL, "graph": 3},
        {"kind": "stats", "channel": "C1", "user": "U1", "response_url": URL, "graph": "g" * 201},
    ],
)
def test_malformed_runs_and_status_work_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        from_wire(data)


# --- perform: runs --------------------------------------------------------------------


@dataclass
class ListingStore(FakeStore):
    recents: list[tuple[str, int]] = field(default_factory=list)
    fail: bool = False

    def recent(self, *, channel: str, limit: int = 20) -> list[Run]:
        self.recents.append((channel, limit))
        if self.fail:
            raise RuntimeError("store down")
        mine = [r for r in self.runs.values() if r.channel == channel]
        return sorted(mine, key=lambda r: r.created_at, reverse=True)[:limit]


async def test_runs_lists_the_channels_runs_newest_first(sent: list[Sent]) -> None:
    runs = [make_run(run_id=f"run{i:02}aaaaaaaaaaa", channel="C1", created_at=NOW + i) for i in range(3)]
    other = make_run(run_id="otheraaaaaaaaaaa", channel="C2")
    store = ListingStore(runs={r.run_id: r for r in [*runs, other]})
    engine = FakeEngine()
    await perform(ListRuns(channel="C1", user="U0EVE", response_url=URL), services=services(engine, store))
    assert store.recents == [("C1", 16)], "one more than shown, to know whether older runs exist"
    assert engine.calls == []
    assert len(sent) == 1 and sent[0].response_type == "ephemeral" and sent[0].url == URL
    shown = json.dumps(sent[0].blocks)
    assert "otheraaaaaaaaaaa" not in shown
    positions = [shown.index(r.run_id) for r in reversed(runs)]
    assert positions == sorted(positions), "newest first"


async def test_runs_of_an_empty_channel(sent: list[Sent]) -> None:
    work = ListRuns(channel="C1", user="U0EVE", response_url=URL)
    await perform(work, services=services(FakeEngine(), ListingStore()))
    assert [(s.text, s.blocks) for s in sent] == [("No runs in this channel yet.", None)]


async def test_a_failing_listing_is_told_not_raised(sent: list[Sent]) -> None:
    store = ListingStore(fail=True)
    await perform(ListRuns(channel="C1", user="U0EVE", response_url=URL), services=services(FakeEngine(), store))
    assert len(sent) == 1 and "try again in a moment" in sent[0].text


# --- perform: status ------------------------------------------------------------------


async def test_status_is_shown_to_whoever_may_oversee(sent: list[Sent]) -> None:
    ask = make_ask(rules=AskRules(approvers=("U0BOB",)))
    store = FakeStore(runs={RUN: make_run(asks={"a1": ask}, trail=("planner",))})
    engine = FakeEngine()
    await perform(ShowStatus(run_id=RUN, user="U0BOB", response_url=URL), services=services(engine, store))
    assert store.loads == [(RUN, False)]
    assert engine.calls == [("may_oversee", (RUN, "U0BOB"))]
    assert len(sent) == 1 and sent[0].response_type == "ephemeral"
    shown = "\n".join(b["text"]["text"] for b in sent[0].blocks or [] if b["type"] == "section")
    assert "waiting for 1 decision" in shown and "`planner`" in shown
    assert "• *Approve deploy*: <@U0BOB> may decide" in shown


async def test_status_is_refused_to_others_naming_who_may(sent: list[Sent]) -> None:
    store = FakeStore(runs={RUN: make_run(asks={"a1": make_ask()})})
    engine = FakeEngine(oversee=(False, ("U0BOB", "S0OPS")))
    await perform(ShowStatus(run_id=RUN, user="U0MALLORY", response_url=URL), services=services(engine, store))
    assert len(sent) == 1 and not sent[0].blocks
    text = sent[0].text
    assert text.startswith("You may not see the status of run `abcdefghijklmnop`")
    assert "<@U0ALICE>" in text and "<@U0BOB>" in text and "<!subteam^S0OPS>" in text
    assert "Approve deploy" not in text and "waiting" not in text


async def test_status_of_an_unknown_run(sent: list[Sent]) -> None:
    engine = FakeEngine()
    await perform(ShowStatus(run_id=RUN, user="U0ALICE", response_url=URL), services=services(engine))
    assert engine.calls == []
    assert len(sent) == 1 and "I don't know a run `abcdefghijklmnop`" in sent[0].text


async def test_a_failing_status_is_told_not_raised(sent: list[Sent]) -> None:
    class Broken(FakeStore):
        def load(self, run_id: str, *, snapshot: bool = True) -> Run | None:
            raise RuntimeError("store down")

    await perform(ShowStatus(run_id=RUN, user="U0ALICE", response_url=URL), services=services(FakeEngine(), Broken()))
    assert len(sent) == 1 and "That failed just now (run `abcdefghijklmnop`)" in sent[0].text
