"""``engine.stats`` and ``engine.stats_access``: how approvals went, counted from run records.

Pure counting first (how an ask ended, percentiles, windows, the "approved unchanged every
time" candidates), then the reading: through ``RunStore.recent`` with the window's bound
and the cap, and only the graphs the person may oversee (``oversight.may_oversee_graph``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from engine.oversight import graph_deciders, may_oversee_graph
from engine.policy import AskPolicy, AskRules, Policy
from engine.records import Ask, AskStatus, Closed, Decision, Run, RunStatus, Verdict
from engine.stats import (
    DAY,
    MIN_CANDIDATE_ASKS,
    WINDOW_SECONDS,
    Ending,
    candidates,
    ending,
    percentile,
    tally,
    window_seconds,
)
from engine.stats_access import StatsReport, read_stats
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import FakeDirectory

NOW = 1_800_000_000.0


def _ask(key: str, *, name: str = "approve_payout", label: str | None = None, **changes: object) -> Ask:
    ask = Ask(
        key=key,
        interrupt_id=f"i-{key}",
        name=name,
        reason=None,
        node_id="n",
        status=AskStatus.CONSUMED,
        created_at=NOW - 1000,
        rules=AskRules(label=label),
    )
    return replace(ask, **changes)  # type: ignore[arg-type]


def _by(user: str, verdict: Verdict = Verdict.APPROVE, *, after: float = 10.0, **extra: object) -> Decision:
    return Decision(verdict=verdict, user=user, at=NOW - 1000 + after, **extra)  # type: ignore[arg-type]


def _run(run_id: str, *asks: Ask, graph: str = "payouts", created_at: float = NOW - 1000, channel: str = "C1") -> Run:
    return Run(
        run_id=run_id,
        graph=graph,
        task="t",
        started_by="U0REQ",
        status=RunStatus.COMPLETED,
        version=1,
        created_at=created_at,
        updated_at=created_at,
        channel=channel,
        asks={a.key: a for a in asks},
    )


def test_each_ask_counts_once_by_how_it_ended() -> None:
    assert ending(_ask("a", decision=_by("U1"))) is Ending.APPROVED
    assert ending(_ask("a", decision=_by("U1", Verdict.TRUST))) is Ending.APPROVED
    assert ending(_ask("a", decision=_by("U1", Verdict.EDIT, edited_input={"x": 1}))) is Ending.EDITED
    assert ending(_ask("a", decision=_by("U1", Verdict.REJECT))) is Ending.REJECTED
    assert ending(_ask("a", decision=_by("U1", Verdict.REPLY, text="later"))) is Ending.ANSWERED
    assert ending(_ask("a", decision=_by("", Verdict.REJECT, expired=True))) is Ending.EXPIRED
    assert ending(_ask("a", decision=_by("", policy="small"))) is Ending.AUTO_APPROVED
    assert ending(_ask("a", decision=_by("", Verdict.REJECT, policy="big"))) is Ending.AUTO_REJECTED
    assert ending(_ask("a", status=AskStatus.PENDING)) is Ending.OPEN
    assert ending(_ask("a", status=AskStatus.OBSOLETE, closed=Closed.CANCELLED)) is Ending.CLOSED
    moved_on = _ask("a", status=AskStatus.OBSOLETE, closed=Closed.MOVED_ON, decision=_by("U1"))
    assert ending(moved_on) is Ending.APPROVED, "a decision made counts, even if the run moved on without it"


def test_percentiles_are_values_that_occurred() -> None:
    assert percentile([], 50) is None
    assert percentile([7.0], 90) == 7.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.0, "nearest rank: the 2nd of 4"
    ten = [float(n) for n in range(1, 11)]
    assert percentile(ten, 50) == 5.0 and percentile(ten, 90) == 9.0 and percentile(ten, 100) == 10.0
    assert percentile([1.0, 100.0], 90) == 100.0


def test_rows_per_ask_name_and_rule_with_people_s_times_only() -> None:
    runs = [
        _run("r1", _ask("a", label="default: Bob", decision=_by("U0BOB", after=10))),
        _run("r2", _ask("a", label="default: Bob", decision=_by("U0BOB", Verdict.REJECT, after=30))),
        _run("r3", _ask("a", label="small", decision=_by("", policy="small", after=0))),
        _run("r4", _ask("a", label="default: Bob", decision=_by("", Verdict.REJECT, expired=True, after=500))),
        _run("r5", _ask("b", name="confirm", status=AskStatus.PENDING), graph="other"),
    ]
    [other, payouts] = tally(runs)
    assert (payouts.graph, payouts.runs, other.graph) == ("payouts", 4, "other")
    bob, small = payouts.rows
    assert (bob.name, bob.label, bob.asks, bob.decided) == ("approve_payout", "default: Bob", 3, 3)
    assert bob.count(Ending.APPROVED) == 1 and bob.count(Ending.REJECTED) == 1 and bob.count(Ending.EXPIRED) == 1
    assert bob.waits == (10.0, 30.0), "an expiry is no person's decision time"
    assert (bob.median, bob.p90) == (10.0, 30.0)
    assert (small.label, small.auto, small.waits, small.median) == ("small", 1, (), None)
    assert payouts.total.asks == 4 and payouts.total.auto == 1
    (row,) = other.rows
    assert row.count(Ending.OPEN) == 1 and row.decided == 0


def test_the_window_leaves_out_older_runs_and_is_never_longer_than_the_retention() -> None:
    runs = [_run("old", _ask("a"), created_at=NOW - 31 * DAY), _run("new", _ask("a"), created_at=NOW - DAY)]
    [stats] = tally(runs, since=NOW - WINDOW_SECONDS)
    assert stats.runs == 1
    assert window_seconds(None) == WINDOW_SECONDS == 30 * DAY
    assert window_seconds(90 * DAY) == 30 * DAY
    assert window_seconds(7 * DAY) == 7 * DAY


def test_candidates_are_rows_approved_unchanged_every_time() -> None:
    def runs(name: str, *decisions: Decision, label: str | None = None) -> list[Run]:
        return [_run(f"{name}{n}", _ask("a", name=name, label=label, decision=d)) for n, d in enumerate(decisions)]

    yes = [_by("U1") for _ in range(MIN_CANDIDATE_ASKS)]
    all_yes = runs("always", *yes, label="default")
    few = runs("few", *yes[:-1])
    edited = runs("edited", *yes[:-1], _by("U1", Verdict.EDIT, edited_input={}))
    rejected = runs("rejected", *yes, _by("U1", Verdict.REJECT))
    expired = runs("expired", *yes, _by("", Verdict.REJECT, expired=True))
    auto = runs("auto", *[_by("", policy="r") for _ in yes])
    still_open = [_run("open", _ask("a", name="always", label="default", status=AskStatus.PENDING))]
    graphs = tally([*all_yes, *few, *edited, *rejected, *expired, *auto, *still_open])
    found = candidates(graphs)
    assert [(g, r.name, r.label, r.decided) for g, r in found] == [("payouts", "always", "default", 5)]


def test_who_a_graph_s_policy_lets_decide() -> None:
    named = Policy.declare(
        approvers=["U0ALICE", "S0OPS"],
        escalate_to=["S0LEADS"],
        escalate_after=60,
        asks={"pay": [AskPolicy(when=lambda d: True, all_of=["S0FIN", "S0LEGAL"]), AskPolicy(approvers=["U0BOB"])]},
    )
    assert graph_deciders(named) == (("U0ALICE", "S0OPS", "S0LEADS", "S0FIN", "S0LEGAL", "U0BOB"), False)
    open_graph = Policy.declare(asks={"pay": AskPolicy(approvers=["U0BOB"])})
    assert graph_deciders(open_graph) == (("U0BOB",), True), "the asks no rule covers: the channel decides"


async def test_may_oversee_a_graph_named_through_a_group_or_in_the_channel_failing_closed() -> None:
    directory = FakeDirectory(groups={"S0OPS": {"U0OPS"}}, channels={"C1": {"U0IN"}})
    named = Policy.declare(approvers=["U0ALICE", "S0OPS", "S0GONE"])
    assert await may_oversee_graph(directory, named, "U0ALICE", channel="C1")
    assert await may_oversee_graph(directory, named, "U0OPS", channel="C1")
    assert not await may_oversee_graph(directory, named, "U0IN", channel="C1"), "named approvers: not the channel"
    assert "S0GONE" in directory.lookups, "a group that cannot be read counts as one they are not in"
    open_graph = Policy.declare(asks={"pay": AskPolicy(approvers=["U0BOB"])})
    assert await may_oversee_graph(directory, open_graph, "U0IN", channel="C1")
    assert await may_oversee_graph(directory, open_graph, "U0BOB", channel="C1")
    assert not await may_oversee_graph(directory, open_graph, "U0OUT", channel="C1")


@pytest.fixture
def seeded(store: SqliteRunStore) -> SqliteRunStore:
    now = time.time()
    for n in range(4):
        store.create(_run(f"open-{n}", _ask("a", decision=_by("U1")), graph="open", created_at=now - 10 - n))
    store.create(_run("named-0", _ask("a", decision=_by("U1")), graph="named", created_at=now - 5))
    store.create(_run("old", _ask("a", decision=_by("U1")), graph="open", created_at=now - 40 * DAY))
    store.create(_run("gone-0", _ask("a"), graph="gone", created_at=now - 3))
    store.create(_run("elsewhere", _ask("a"), graph="open", created_at=now - 3, channel="C2"))
    return store


def _policies(name: str) -> Policy:
    if name == "gone":
        raise LookupError(name)
    return Policy.declare(approvers=["U0ALICE"]) if name == "named" else Policy()


async def test_read_stats_reads_the_window_of_this_channel_and_only_graphs_the_person_may_oversee(
    seeded: SqliteRunStore,
) -> None:
    directory = FakeDirectory(channels={"C1": {"U0IN", "U0ALICE"}})

    async def read(user: str, *, graph: str | None = None, retention: float | None = None) -> StatsReport:
        return await read_stats(
            store=seeded,
            directory=directory,
            policy=_policies,
            channel="C1",
            user=user,
            graph=graph,
            now=time.time(),
            retention_seconds=retention,
        )

    alice = await read("U0ALICE")
    assert [g.graph for g in alice.graphs] == ["named", "open"]
    assert [g.runs for g in alice.graphs] == [1, 4], "the 40-day-old run and other channels are not read"
    assert alice.runs_read == 6 and not alice.capped and alice.window == 30 * DAY
    member = await read("U0IN")
    assert [g.graph for g in member.graphs] == ["open"], "named approvers only; a gone graph is left out"
    outsider = await read("U0OUT", graph="named")
    assert outsider.graphs == () and outsider.any_runs
    short = await read("U0ALICE", retention=0.5 * DAY)
    assert short.window == 0.5 * DAY and [g.runs for g in short.graphs] == [1, 4]


async def test_read_stats_says_when_the_cap_was_hit(seeded: SqliteRunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engine.stats_access.MAX_RUNS_READ", 3)
    report = await read_stats(
        store=seeded,
        directory=None,
        policy=_policies,
        channel="C1",
        user="U0ALICE",
        graph=None,
        now=time.time(),
        retention_seconds=None,
    )
    assert report.capped and report.runs_read == 3
    assert sum(g.runs for g in report.graphs) == 2, "the newest three: gone (left out), named, one of open"
