"""The approvals inbox, a person's runs and App Home viewers: one contract, both backends.

Asks are found under who may decide them (``engine.store_rules.principals``) through an
index, never a scan; what a listing returns is what the run record says now. On DynamoDB
the requests each operation sends are counted at moto's HTTP front door.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from engine.policy import AskRules
from engine.records import Ask, AskStatus, Closed, Run, RunStatus
from engine.store import RunStore
from engine.store_rules import ANYONE, HOME_KEPT_SECONDS, principals
from tests.persistence.conftest import IN_C1, Backend, decision, make_run
from tests.support.aws import CountingMotoServer

DAY = 86400.0
both = pytest.mark.parametrize("backend", ["sqlite", "dynamodb"], indirect=True)


def _ask(key: str, *, at: float, approvers: tuple[str, ...] | None = None, **rules: object) -> Ask:
    return Ask(
        key=key,
        interrupt_id=f"i-{key}",
        name="approve-deploy",
        reason={"why": key},
        node_id="deployer",
        status=AskStatus.PENDING,
        created_at=at,
        rules=AskRules(approvers=approvers, **rules),  # type: ignore[arg-type]
    )


def _run(run_id: str, *asks: Ask, started_by: str = "U0STARTER", at: float | None = None, **changes: object) -> Run:
    created = at if at is not None else min((a.created_at for a in asks), default=time.time())
    return make_run(
        run_id,
        asks={a.key: a for a in asks},
        started_by=started_by,
        created_at=created,
        updated_at=created,
        channel="C1",
        **changes,
    )


def _indexed(store: RunStore, run: Run) -> Run:
    store.create(run)
    store.index_asks(run)
    return run


def _listed(store: RunStore, *who: str, limit: int = 50) -> list[tuple[str, str]]:
    return [(run.run_id, ask.key) for run, ask in store.pending_for(list(who), limit=limit)]


def _counter(backend: Backend, request: pytest.FixtureRequest) -> Callable[[], dict[str, int]]:
    """Starts counting requests to moto now; SQLite sends none (its counter stays empty)."""
    if not backend.dynamo:
        return dict
    server: CountingMotoServer = request.getfixturevalue("moto_server")
    server.reset_counts()
    return server.counts


def _inbox_items(backend: Backend) -> list[dict[str, Any]]:
    return [i for i in backend.items() if str(i["pk"]["S"]).startswith("inbox#")] if backend.dynamo else []


# -- principals --------------------------------------------------------------------------


def test_principals_are_the_deciders_or_anyone() -> None:
    now = time.time()
    assert principals(_ask("a", at=now)) == (ANYONE,)
    assert principals(_ask("a", at=now, approvers=("U0A", "S0TEAM"))) == ("U0A", "S0TEAM")
    escalating = _ask("a", at=now, approvers=("U0A",), escalate_to=("S0LEADS", "U0A"), escalate_at=now)
    assert principals(escalating) == ("U0A",)
    assert principals(replace(escalating, escalated=True)) == ("U0A", "S0LEADS")


# -- the inbox ---------------------------------------------------------------------------


@both
def test_pending_asks_are_found_by_user_by_group_and_by_anyone(backend: Backend) -> None:
    store = backend.store()
    now = time.time()
    run = _indexed(
        store,
        _run(
            "r-who",
            _ask("a1", at=now, approvers=("U0A", "S0TEAM")),
            _ask("a2", at=now + 1),  # anyone in the channel
        ),
    )
    assert _listed(store, "U0A") == [("r-who", "a1")]
    assert _listed(store, "S0TEAM") == [("r-who", "a1")]
    assert _listed(store, ANYONE) == [("r-who", "a2")]
    assert _listed(store, "U0B", "S0OTHER") == []
    assert _listed(store, "U0A", "S0TEAM", ANYONE) == [("r-who", "a2"), ("r-who", "a1")], "each ask once"
    listed_run, ask = store.pending_for(["U0A"])[0]
    assert ask == run.asks["a1"]
    assert listed_run.snapshot is None, "a listing never reads run state"
    assert listed_run == store.load("r-who", snapshot=False)


@both
def test_a_decided_or_obsolete_ask_leaves_the_listing(backend: Backend) -> None:
    store = backend.store()
    now = time.time()
    _indexed(store, _run("r-gone", _ask("a1", at=now, approvers=("U0A",)), _ask("a2", at=now + 1, approvers=("U0A",))))
    assert _listed(store, "U0A") == [("r-gone", "a2"), ("r-gone", "a1")]

    store.decide("r-gone", "a2", decision("U0A"), now=time.time(), member_of=IN_C1)
    assert _listed(store, "U0A") == [("r-gone", "a1")]
    stored = store.load("r-gone")
    assert stored is not None
    obsolete = replace(stored.asks["a1"], status=AskStatus.OBSOLETE, closed=Closed.MOVED_ON)
    store.save(stored.evolve(asks={**stored.asks, "a1": obsolete}), expected_version=stored.version)
    assert _listed(store, "U0A") == []
    if backend.dynamo:
        assert _inbox_items(backend) == [], "the listing deleted the entries it found stale"


@both
def test_stale_entries_do_not_hide_older_pending_asks(backend: Backend) -> None:
    store = backend.store()
    base = time.time()
    for n in range(6):
        _indexed(store, _run(f"r-st-{n}", _ask("a1", at=base + n, approvers=("U0A",))))
    for n in (5, 4, 3):  # the newest three are decided on their cards
        store.decide(f"r-st-{n}", "a1", decision("U0A"), now=time.time(), member_of=IN_C1)
    assert _listed(store, "U0A", limit=2) == [("r-st-2", "a1"), ("r-st-1", "a1")]
    assert _listed(store, "U0A", limit=10) == [("r-st-2", "a1"), ("r-st-1", "a1"), ("r-st-0", "a1")]


@both
def test_indexing_twice_makes_no_duplicates(backend: Backend) -> None:
    store = backend.store()
    run = _indexed(store, _run("r-twice", _ask("a1", at=time.time(), approvers=("U0A", "U0A", "S0T"))))
    before = _inbox_items(backend)
    store.index_asks(run)
    store.index_asks(run)
    assert _listed(store, "U0A", "S0T") == [("r-twice", "a1")]
    if backend.dynamo:
        assert len(_inbox_items(backend)) == len(before) == 2
        assert {i["sk"]["S"] for i in before} == {i["sk"]["S"] for i in _inbox_items(backend)}


@both
def test_indexing_an_out_of_date_copy_lists_nothing_decided(backend: Backend) -> None:
    store = backend.store()
    run = _indexed(store, _run("r-old-copy", _ask("a1", at=time.time(), approvers=("U0A",))))
    store.decide("r-old-copy", "a1", decision("U0A"), now=time.time(), member_of=IN_C1)
    store.index_asks(run)  # a delivery retry holding the copy from before the click
    assert _listed(store, "U0A") == []


@both
def test_an_escalation_adds_its_group_once_indexed_again(backend: Backend) -> None:
    store = backend.store()
    now = time.time()
    _indexed(
        store, _run("r-esc", _ask("a1", at=now, approvers=("U0A",), escalate_to=("S0LEADS",), escalate_at=now + 60))
    )
    assert _listed(store, "S0LEADS") == []
    stored = store.load("r-esc")
    assert stored is not None
    escalated = stored.evolve(asks={"a1": replace(stored.asks["a1"], escalated=True)})
    saved = store.save(escalated, expected_version=stored.version)
    store.index_asks(saved)
    assert _listed(store, "S0LEADS") == [("r-esc", "a1")]
    assert _listed(store, "U0A") == [("r-esc", "a1")], "the approvers keep it"


@both
def test_the_newest_asks_come_first_and_limit_caps_them(backend: Backend) -> None:
    store = backend.store()
    base = time.time()
    for n in range(7):
        group = ("S0TEAM",) if n % 2 else ("U0A",)
        _indexed(store, _run(f"r-new-{n}", _ask("a1", at=base + n, approvers=group)))
    everything = [(f"r-new-{n}", "a1") for n in reversed(range(7))]
    assert _listed(store, "U0A", "S0TEAM") == everything
    assert _listed(store, "U0A", "S0TEAM", limit=3) == everything[:3]
    assert _listed(store, "S0TEAM", limit=2) == [("r-new-5", "a1"), ("r-new-3", "a1")]
    assert _listed(store) == []


@both
def test_a_run_with_no_pending_ask_indexes_nothing(backend: Backend, request: pytest.FixtureRequest) -> None:
    store = backend.store()
    run = _run("r-none", status=RunStatus.COMPLETED)
    store.create(run)
    sent = _counter(backend, request)
    store.index_asks(run)
    assert sent() == {}
    assert _listed(store, ANYONE) == []


# -- a person's runs -----------------------------------------------------------------------


@both
def test_started_by_lists_ones_own_runs_newest_first(backend: Backend) -> None:
    store = backend.store()
    base = time.time()
    for n in range(8):
        store.create(_run(f"r-mine-{n}", started_by="U0ME" if n % 2 else "U0YOU", at=base + n))
    listed = store.started_by("U0ME", limit=3)
    assert [r.run_id for r in listed] == ["r-mine-7", "r-mine-5", "r-mine-3"]
    assert all(r.started_by == "U0ME" and r.snapshot is None for r in listed)
    assert [r.run_id for r in store.started_by("U0YOU")] == [f"r-mine-{n}" for n in (6, 4, 2, 0)]
    assert store.started_by("U0NOBODY") == []


# -- App Home viewers ----------------------------------------------------------------------


@both
def test_home_viewers_round_trip_and_a_later_visit_wins(backend: Backend) -> None:
    store = backend.store()
    now = 1_800_000_000.0
    assert store.home_viewers(since=0) == {}
    store.saw_home("U0A", at=now)
    store.saw_home("U0B", at=now + 5)
    store.saw_home("U0A", at=now + 10)
    store.saw_home("U0A", at=now + 1)  # a late duplicate of an older visit
    assert backend.store().home_viewers(since=0) == {"U0A": now + 10, "U0B": now + 5}
    assert store.home_viewers(since=now + 6) == {"U0A": now + 10}


@both
def test_home_viewers_gone_for_30_days_are_dropped_on_write(backend: Backend) -> None:
    store = backend.store()
    now = 1_800_000_000.0
    store.saw_home("U0OLD", at=now)
    store.saw_home("U0KEPT", at=now + 5 * DAY)
    store.saw_home("U0NEW", at=now + HOME_KEPT_SECONDS + DAY)
    assert store.home_viewers(since=0) == {"U0KEPT": now + 5 * DAY, "U0NEW": now + HOME_KEPT_SECONDS + DAY}


# -- nothing of the inbox is ever taken for a run ------------------------------------------


@both
def test_inbox_and_home_items_are_never_taken_for_runs(backend: Backend) -> None:
    store = backend.store()
    now = time.time()
    _indexed(store, _run("r-only", _ask("a1", at=now, approvers=("U0A",)), _ask("a2", at=now), started_by="U0A"))
    store.saw_home("U0A", at=now)
    assert store.stuck(now=now + 10 * DAY, limit=100) == ["r-only"]
    assert [r.run_id for r in store.recent(channel="C1")] == ["r-only"]
    assert [r.run_id for r in store.started_by("U0A")] == ["r-only"]
    if backend.dynamo:
        others = [i for i in backend.items() if i["sk"]["S"] == "run" and i["pk"]["S"] != "run#r-only"]
        assert others == []
        for item in backend.items():
            if not item["pk"]["S"].startswith("run#"):
                assert not {"channel", "started_by", "created_at", "sweep_pk", "sweep_at"} & set(item), item
        assert backend.offloaded() == set(), "nor for a piece of a run's state"


# -- what each operation costs on DynamoDB -------------------------------------------------


def test_dynamodb_request_counts(backend_dynamo: Backend, request: pytest.FixtureRequest) -> None:
    store = backend_dynamo.store()
    now = time.time()
    runs = [
        _run(f"r-cost-{n}", _ask("a1", at=now + n, approvers=("U0A", "S0TEAM")), _ask("a2", at=now + n))
        for n in range(4)
    ]
    for run in runs:
        store.create(run)
    sent = _counter(backend_dynamo, request)
    store.index_asks(runs[0])
    assert sent() == {"dynamodb.BatchWriteItem": 1}, "three entries: one request"

    for run in runs[1:]:
        store.index_asks(run)
    sent = _counter(backend_dynamo, request)
    assert len(store.pending_for(["U0A", "S0TEAM", ANYONE], limit=50)) == 8
    assert sent() == {"dynamodb.Query": 3, "dynamodb.BatchGetItem": 1}, "a Query per principal, one read of the runs"

    crowded = _run("r-crowd", *[_ask(f"a{n}", at=now, approvers=(f"U0P{n:02d}",)) for n in range(30)])
    store.create(crowded)
    sent = _counter(backend_dynamo, request)
    store.index_asks(crowded)
    assert sent() == {"dynamodb.BatchWriteItem": 2}, "30 entries: 25 and 5"

    sent = _counter(backend_dynamo, request)
    store.started_by("U0STARTER", limit=5)
    assert sent() == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 1}

    sent = _counter(backend_dynamo, request)
    store.saw_home("U0A", at=now)  # the first visit ever: no map yet
    assert sent() == {"dynamodb.UpdateItem": 2}
    sent = _counter(backend_dynamo, request)
    store.saw_home("U0B", at=now)
    store.home_viewers(since=0)
    assert sent() == {"dynamodb.UpdateItem": 1, "dynamodb.GetItem": 1}

    # Priced as DynamoDB bills them: every request the inbox sends is one the meter knows.
    server: CountingMotoServer = request.getfixturevalue("moto_server")
    server.reset_counts()
    store.index_asks(runs[0])
    store.pending_for(["U0A", "S0TEAM", ANYONE], limit=50)
    store.started_by("U0STARTER", limit=5)
    store.saw_home("U0C", at=now)
    store.home_viewers(since=0)
    capacity = server.capacity()
    print(f"\ninbox operations: {capacity}")
    assert capacity["unmetered"] == 0
    assert capacity["by_operation"]["dynamodb.BatchWriteItem"]["write_units"] == 3, "three small entries"


@pytest.fixture
def backend_dynamo(request: pytest.FixtureRequest, dynamodb_table: str) -> Backend:
    from persistence.dynamodb import DynamoRunStore

    return Backend("dynamodb", lambda: DynamoRunStore(dynamodb_table), dynamodb_table)


def test_dynamodb_a_decided_ask_costs_one_more_query_round_once(
    backend_dynamo: Backend, request: pytest.FixtureRequest
) -> None:
    """Stale entries are read past (another round) and deleted: the next listing is clean."""
    store = backend_dynamo.store()
    base = time.time()
    for n in range(4):
        _indexed(store, _run(f"r-round-{n}", _ask("a1", at=base + n, approvers=("U0A",))))
    for n in (3, 2):
        store.decide(f"r-round-{n}", "a1", decision("U0A"), now=time.time(), member_of=IN_C1)
    sent = _counter(backend_dynamo, request)
    assert _listed(store, "U0A", limit=2) == [("r-round-1", "a1"), ("r-round-0", "a1")]
    assert sent() == {"dynamodb.Query": 2, "dynamodb.BatchGetItem": 2, "dynamodb.BatchWriteItem": 1}
    sent = _counter(backend_dynamo, request)
    assert _listed(store, "U0A", limit=2) == [("r-round-1", "a1"), ("r-round-0", "a1")]
    assert sent() == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 1}
