"""The RunStore contract, run against SQLite, DynamoDB (moto over HTTP) and DynamoDB + S3."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from engine.records import RetryOf, ToolCall
from engine.store import RECENT_LIMIT, Lease
from persistence import (
    AskNotFound,
    AskNotPending,
    AskStatus,
    Run,
    RunExists,
    RunStatus,
    RunStore,
    Verdict,
    VerdictNotOffered,
    VersionConflict,
    snapshots,
)
from tests.persistence.conftest import IN_C1, Backend, decision, item_size, make_run
from tests.support.aws import CountingMotoServer

MB = 1024 * 1024


def test_create_then_load_round_trips_every_field(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-create")
    decided = replace(
        run.asks["a2"],
        status=AskStatus.DECIDED,
        decision=decision("U9", verdict=Verdict.EDIT, text="ok ✓", edited_input={"x": [1, 2.0, {"y": "ü"}]}),
    )
    run = run.evolve(
        asks={**run.asks, "a2": decided},
        lease_owner="host-1",
        lease_until=run.updated_at + 0.5,
        output="out",
        held_until=run.updated_at + 0.25,
    )
    store.create(run)

    assert store.load("r-create") == run
    loaded = store.load("r-create")
    assert loaded is not None
    assert isinstance(loaded.asks["a1"].reason["ratio"], float)
    assert loaded.asks["a1"].reason["big"] == 2**70
    with pytest.raises(RunExists):
        store.create(run.evolve(task="other"))
    assert backend.store().load("r-create") == run


def test_load_unknown_run_is_none(backend: Backend) -> None:
    assert backend.store().load("nope") is None


def test_decide_exactly_once_among_twenty_threads(backend: Backend) -> None:
    backend.store().create(make_run("r-race"))
    users = [f"U{i:02d}" for i in range(20)]
    barrier = threading.Barrier(len(users))
    won: list[Run] = []
    lost: list[AskNotPending] = []
    errors: list[BaseException] = []
    store = backend.store()  # one instance shared by threads, as the engine uses it

    def click(user: str) -> None:
        barrier.wait()
        try:
            won.append(store.decide("r-race", "a1", decision(user), now=time.time(), member_of=IN_C1))
        except AskNotPending as exc:
            lost.append(exc)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=click, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert len(won) == 1 and len(lost) == 19
    winner = won[0].asks["a1"].decision
    assert winner is not None and winner.user in users
    assert {exc.run.asks["a1"].decision.user for exc in lost if exc.run.asks["a1"].decision} == {winner.user}
    stored = backend.store().load("r-race")
    assert stored is not None and stored.version == 2 and stored.asks["a1"].decision == winner


def test_decide_records_decision_and_bumps_version(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-decide")
    store.create(run)
    choice = decision("U1", verdict=Verdict.REPLY, text="wait until 5pm, s'il vous plaît")
    after = store.decide("r-decide", "a1", choice, now=run.updated_at + 10, member_of=IN_C1)

    assert after.version == run.version + 1
    assert after.updated_at == run.updated_at + 10
    assert after.asks["a1"].status is AskStatus.DECIDED and after.asks["a1"].decision == choice
    assert after.asks["a2"] == run.asks["a2"]
    assert store.fetch_state(after) == run.snapshot
    assert store.load("r-decide") == after.evolve(snapshot=run.snapshot)


def test_decide_unknown_run_or_ask(backend: Backend) -> None:
    from persistence import RunNotFound

    store = backend.store()
    store.create(make_run("r-unknown"))
    with pytest.raises(RunNotFound):
        store.decide("nope", "a1", decision("U1"), now=time.time(), member_of=IN_C1)
    with pytest.raises(AskNotFound):
        store.decide("r-unknown", "a9", decision("U1"), now=time.time(), member_of=IN_C1)


def test_claim_takes_the_lease_once(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-claim")
    store.create(run)
    until = run.updated_at + 60
    version = store.claim(
        "r-claim", expected_version=1, status=RunStatus.RESUMING, owner="p1", lease_until=until, now=run.updated_at
    )
    assert version == 2
    stored = store.load("r-claim")
    assert stored is not None
    assert (stored.version, stored.status, stored.lease_owner, stored.lease_until) == (
        2,
        RunStatus.RESUMING,
        "p1",
        until,
    )
    assert stored.snapshot == run.snapshot  # claim writes no snapshot and keeps the one there
    with pytest.raises(VersionConflict):
        store.claim("r-claim", expected_version=1, status=RunStatus.RESUMING, owner="p2", lease_until=until, now=0)
    with pytest.raises(VersionConflict):
        store.claim("nope", expected_version=1, status=RunStatus.RESUMING, owner="p2", lease_until=until, now=0)


def test_a_claim_marks_the_answers_it_hands_its_pass_and_counts_takeovers(backend: Backend) -> None:
    """What a pass got is recorded by the claim that starts it (``engine.takeover``)."""
    store = backend.store()
    run = make_run("r-hand")
    store.create(run)
    decided = store.decide("r-hand", "a1", decision("U1"), now=run.updated_at, member_of=IN_C1)
    assert decided.asks["a1"].handed is None, "a decision without a claim hands nothing"
    v = store.claim(
        "r-hand",
        expected_version=decided.version,
        status=RunStatus.RESUMING,
        owner="p1/1",
        lease_until=1e10,
        now=1,
        handing=["a1"],
        takeovers=2,
    )
    stored = store.load("r-hand")
    assert stored is not None and stored.version == v
    assert stored.asks["a1"].handed == "p1/1" and stored.asks["a2"].handed is None
    assert stored.takeovers == 2
    assert stored.asks["a1"].decision == decided.asks["a1"].decision, "the decision is kept as it was"
    assert (
        store.claim(  # the same claim again (a lost response): recognised as done
            "r-hand",
            expected_version=decided.version,
            status=RunStatus.RESUMING,
            owner="p1/1",
            lease_until=1e10,
            now=1,
            handing=["a1"],
            takeovers=2,
        )
        == v
    )
    # A claim that does not count a takeover leaves the count as stored; a save sets it.
    saved = store.save(stored.evolve(status=RunStatus.WAITING, lease_owner=None, lease_until=None), expected_version=v)
    status = RunStatus.RESUMING
    store.claim("r-hand", expected_version=saved.version, status=status, owner="p2/1", lease_until=1e10, now=2)
    again = store.load("r-hand", snapshot=False)
    assert again is not None and again.takeovers == 2 and again.asks["a1"].handed == "p1/1"
    reset = store.save(again.evolve(takeovers=0), expected_version=again.version)
    assert reset.takeovers == 0 and store.load("r-hand", snapshot=False) == reset.evolve(snapshot=None)


def test_a_decision_that_claims_marks_its_ask_as_handed(backend: Backend) -> None:
    store = backend.store()
    store.create(make_run("r-hand-decide"))
    lease = Lease(owner="p1/2", until=time.time() + 60)
    claimed = store.decide("r-hand-decide", "a1", decision("U1"), now=time.time(), claim=lease, member_of=IN_C1)
    assert claimed.lease_owner == "p1/2" and claimed.asks["a1"].handed == "p1/2"
    stored = store.load("r-hand-decide", snapshot=False)
    assert stored is not None and stored.asks["a1"].handed == "p1/2" and stored.asks["a2"].handed is None
    held = store.decide(
        "r-hand-decide", "a2", decision("U2"), now=time.time(), claim=Lease(owner="p3/1", until=1e10), member_of=IN_C1
    )
    assert held.lease_owner == "p1/2" and held.asks["a2"].handed is None, "a held run is decided alone: not handed"


def test_a_may_have_acted_ask_round_trips(backend: Backend) -> None:
    store = backend.store()
    response = {"decision": "approve", "text": None, "user": "U1", "approvers": ["U1"], "approval_id": "r:a1", "n": 1.5}
    run = make_run("r-retry-of")
    again = replace(
        run.asks["a1"],
        key="a3",
        verdicts=(Verdict.RETRY, Verdict.REJECT),
        retry_of=RetryOf(key="a1", response=response),
    )
    run = run.evolve(asks={**run.asks, "a3": again}, takeovers=1)
    store.create(run)
    assert store.load("r-retry-of") == run
    decided = store.decide("r-retry-of", "a3", decision("U2", verdict=Verdict.RETRY), now=time.time(), member_of=IN_C1)
    assert decided.asks["a3"].status is AskStatus.DECIDED and decided.asks["a3"].retry_of == again.retry_of


def test_previews_round_trip_whatever_their_keys(backend: Backend) -> None:
    from engine.previews import bounded

    store = backend.store()
    odd = bounded({"": 1, "a.b#c": "x", "naïve ✓": float("nan"), "n": 1.5, "deep": {"k": [1, None]}})
    run = make_run("r-preview")
    text = replace(run.asks["a1"], key="a2", preview=bounded("pays 5 EUR\n<!channel> to ACME"))
    run = run.evolve(asks={"a1": replace(run.asks["a1"], preview=odd), "a2": text})
    store.create(run)
    loaded = store.load("r-preview")
    assert loaded is not None and loaded == run
    assert loaded.asks["a1"].preview == odd and isinstance(odd, dict) and odd["(blank)"] == "1"


def test_a_decision_makes_the_holders_save_fail(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-save")
    store.create(run)
    v = store.claim("r-save", expected_version=1, status=RunStatus.RESUMING, owner="p1", lease_until=1e10, now=1)
    store.decide("r-save", "a2", decision("U2"), now=2, member_of=IN_C1)
    with pytest.raises(VersionConflict):
        store.save(run.evolve(status=RunStatus.WAITING, snapshot=b"new"), expected_version=v)
    stored = store.load("r-save")
    assert stored is not None and stored.snapshot == run.snapshot and stored.status is RunStatus.RESUMING

    released = store.save(stored.evolve(status=RunStatus.WAITING, snapshot=b"new"), expected_version=v + 1)
    assert released.version == v + 2
    assert store.load("r-save") == released


def test_renew_only_by_the_owner(backend: Backend) -> None:
    store = backend.store()
    store.create(make_run("r-renew"))
    v = store.claim("r-renew", expected_version=1, status=RunStatus.RUNNING, owner="p1", lease_until=100, now=1)

    assert store.renew("r-renew", owner="p1", lease_until=200) is True
    assert store.renew("r-renew", owner="p2", lease_until=300) is False
    assert store.renew("nope", owner="p1", lease_until=300) is False
    stored = store.load("r-renew")
    assert stored is not None and stored.lease_until == 200 and stored.version == v

    store.save(stored.evolve(status=RunStatus.WAITING), expected_version=v)  # released, owner left in place
    assert store.renew("r-renew", owner="p1", lease_until=400) is False


def test_stuck_finds_expired_leases_and_unclaimed_decisions(backend: Backend) -> None:
    store = backend.store()
    now = time.time()
    store.create(make_run("expired", status=RunStatus.RESUMING, lease_owner="p", lease_until=now - 50))
    store.create(make_run("healthy", status=RunStatus.RUNNING, lease_owner="p", lease_until=now + 600))
    store.create(make_run("waiting"))
    store.create(make_run("done", status=RunStatus.COMPLETED))
    store.create(make_run("decided"))
    store.decide("decided", "a1", decision("U1"), now=now - 10, member_of=IN_C1)

    assert store.stuck(now=now) == ["expired", "decided"]  # oldest first
    assert store.stuck(now=now, limit=1) == ["expired"]
    assert store.stuck(now=now - 100) == []

    # Once the decision is consumed and the run waits again, nothing is stuck there.
    run = store.load("decided")
    assert run is not None
    consumed = replace(run.asks["a1"], status=AskStatus.CONSUMED)
    store.save(run.evolve(asks={**run.asks, "a1": consumed}), expected_version=run.version)
    assert store.stuck(now=now) == ["expired"]


@pytest.mark.parametrize(
    "size", [pytest.param(1000, id="small"), pytest.param(int(1.6 * MB), id="1.6MB"), pytest.param(10 * MB, id="10MB")]
)
def test_snapshots_of_any_size_round_trip(backend: Backend, size: int) -> None:
    store = backend.store()
    run = make_run("r-snap", snapshot=os.urandom(size))
    store.create(run)
    assert store.load("r-snap") == run
    first = backend.offloaded()

    loaded = store.load("r-snap")
    assert loaded is not None
    second = store.save(loaded.evolve(snapshot=os.urandom(size)), expected_version=1)
    assert backend.store().load("r-snap") == second.evolve(snapshot=second.snapshot or _state(store, second))
    now_stored = backend.offloaded()
    if backend.bucket:
        assert not (first & now_stored), "the previous state's S3 object must be gone"
    elif backend.dynamo:
        # Superseded chunks are left to DynamoDB's TTL (free), not deleted (billed by size).
        assert all("expires_at" in i for i in backend.items() if i["sk"]["S"].startswith("state#"))
    if backend.dynamo:
        sizes = [item_size(i) for i in backend.items()]
        assert max(sizes) < 400 * 1024
        record = next(i for i in backend.items() if i["sk"]["S"] == "run")
        if size > MB:
            assert item_size(record) < 4 * 1024, "a large state must live outside the run record"
            assert len([k for k in now_stored - first if "/state#" in k]) == (
                0 if backend.bucket else -(-size // (300 * 1024))
            )

    # A decision returns the run; its state comes with it when the record holds it, and
    # from fetch_state wherever it is kept.
    decided = store.decide("r-snap", "a1", decision("U1"), now=time.time(), member_of=IN_C1)
    assert decided.snapshot in (None, _state(store, second)) and store.fetch_state(decided) == _state(store, second)


def _state(store: RunStore, run: Run) -> bytes | None:
    return store.fetch_state(run)


def test_failed_save_keeps_previous_snapshot_and_leaves_nothing_behind(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-stale", snapshot=os.urandom(int(1.6 * MB)))
    store.create(run)
    kept = store.save(run.evolve(snapshot=os.urandom(int(1.6 * MB))), expected_version=1)
    pieces = backend.offloaded()

    # Two stale writers: one a version behind (it would write under the same version as
    # the stored snapshot), one two versions behind.
    for stale in (1, 0):
        with pytest.raises(VersionConflict):
            store.save(run.evolve(snapshot=os.urandom(int(1.6 * MB))), expected_version=stale)
    assert backend.offloaded() == pieces
    assert backend.store().load("r-stale") == kept


def test_another_process_sees_and_changes_the_same_data(backend: Backend) -> None:
    store = backend.store()
    store.create(make_run("r-proc"))
    if backend.dynamo:
        opener = (
            f"from persistence.dynamodb import DynamoRunStore as S; s = S({backend.table!r}, bucket={backend.bucket!r})"
        )
    else:
        path = store._path  # type: ignore[attr-defined]
        opener = f"from persistence.sqlite import SqliteRunStore as S; s = S({path!r})"
    code = (
        f"{opener}\n"
        "from persistence import Decision, Verdict\n"
        "r = s.decide('r-proc', 'a1', Decision(verdict=Verdict.REJECT, user='U7', at=5.5), now=6.5,"
        " member_of=frozenset({'C1'}))\n"
        "print(r.version)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
    stored = store.load("r-proc")
    assert stored is not None and stored.asks["a1"].decision is not None
    assert stored.asks["a1"].decision.user == "U7" and stored.updated_at == 6.5


def test_the_same_call_again_is_recognised_as_done(backend: Backend) -> None:
    """What a client retry after a lost response looks like: identical arguments."""
    store = backend.store()
    run = make_run("r-again")
    store.create(run)
    choice = decision("U1")
    first = store.decide("r-again", "a1", choice, now=10.0, member_of=IN_C1)
    assert store.decide("r-again", "a1", choice, now=10.0, member_of=IN_C1).evolve(snapshot=None) == first.evolve(
        snapshot=None
    )
    # The same person giving the same answer again (a resubmitted modal) is the same decision...
    assert store.decide("r-again", "a1", replace(choice, at=11.0), now=11.0, member_of=IN_C1).version == first.version
    with pytest.raises(AskNotPending):  # ...another answer is not
        store.decide("r-again", "a1", decision("U1", text="other"), now=11.0, member_of=IN_C1)

    args = {"expected_version": first.version, "status": RunStatus.RESUMING, "owner": "p1", "lease_until": 99.0}
    assert store.claim("r-again", **args, now=12.0) == first.version + 1  # type: ignore[arg-type]
    assert store.claim("r-again", **args, now=12.0) == first.version + 1  # type: ignore[arg-type]
    with pytest.raises(VersionConflict):
        store.claim("r-again", **{**args, "owner": "p2"}, now=12.0)  # type: ignore[arg-type]
    # A retried claim whose first attempt landed, after a click moved the version on:
    # the token names the claim, so it is still recognised as done.
    released = store.load("r-again")
    assert released is not None
    store.save(released.evolve(status=RunStatus.WAITING, lease_owner=None), expected_version=released.version)
    v = store.claim(
        "r-again",
        expected_version=released.version + 1,
        status=RunStatus.RESUMING,
        owner="p3",
        lease_until=99.0,
        now=13.0,
    )
    store.decide("r-again", "a2", decision("U2"), now=14.0, member_of=IN_C1)
    assert (
        store.claim(
            "r-again",
            expected_version=released.version + 1,
            status=RunStatus.RESUMING,
            owner="p3",
            lease_until=99.0,
            now=13.0,
        )
        == v
    ), "recognised as done; the version the claim made, not the one stored now"
    holder = store.load("r-again")
    assert holder is not None
    with pytest.raises(VersionConflict):  # so a holder with a pre-click copy merges instead of overwriting
        store.save(holder.evolve(status=RunStatus.WAITING), expected_version=v)


def _requests(backend: Backend, request: pytest.FixtureRequest) -> Callable[[], dict[str, int]]:
    """Starts counting requests to moto now; the returned call says what was sent since.

    SQLite sends no requests: its counter stays empty.
    """
    if not backend.dynamo:
        return dict
    server: CountingMotoServer = request.getfixturevalue("moto_server")
    server.reset_counts()
    return server.counts


@pytest.mark.parametrize("size", [pytest.param(1000, id="inline"), pytest.param(int(1.6 * MB), id="offloaded-1.6MB")])
def test_load_without_snapshot_reads_everything_else_and_fetches_nothing(
    backend: Backend, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    store = backend.store()
    run = make_run("r-light", snapshot=os.urandom(size))
    # Every Run field away from its default, so a field the light read drops shows up.
    tool = ToolCall(name="deploy", input={"env": "prod", "n": 1.0}, input_schema={"type": "object"})
    gate = replace(run.asks["a1"], tool=tool, verdicts=(Verdict.APPROVE, Verdict.EDIT, Verdict.REJECT))
    run = run.evolve(
        asks={**run.asks, "a1": gate},
        status=RunStatus.RUNNING,
        lease_owner="host-1",
        lease_until=run.updated_at + 60,
        output="partial",
        error="none yet",
    )
    store.create(run)
    decoded: list[int] = []
    decode = snapshots.decode

    def counting_decode(blob: bytes) -> bytes:
        decoded.append(len(blob))
        return decode(blob)

    monkeypatch.setattr(snapshots, "decode", counting_decode)
    fresh = backend.store()  # a new process: nothing cached
    sent = _requests(backend, request)

    light = fresh.load("r-light", snapshot=False)

    assert light == run.evolve(snapshot=None)
    assert light is not None and light.asks["a1"].tool == tool
    assert decoded == [], "the snapshot must not be decoded"
    if backend.dynamo:
        assert sent() == {"dynamodb.GetItem": 1}, "one GetItem: no chunk Query, no S3 GET"
    assert fresh.load("nope", snapshot=False) is None

    # The full read still brings the snapshot, through the same counters (they can fail).
    sent = _requests(backend, request)
    assert fresh.load("r-light") == run
    assert decoded != []
    if backend.dynamo and size > MB:
        assert set(sent()) == {"dynamodb.GetItem", "s3.GET" if backend.bucket else "dynamodb.Query"}


def test_decide_refuses_a_verdict_the_ask_does_not_offer(backend: Backend, request: pytest.FixtureRequest) -> None:
    store = backend.store()
    run = make_run("r-offer")  # a2 offers approve and reject only
    store.create(run)
    stored = store.load("r-offer")

    for ask_key, verdict in (("a2", Verdict.REPLY), ("a2", Verdict.EDIT), ("a1", Verdict.TRUST)):
        sent = _requests(backend, request)
        with pytest.raises(VerdictNotOffered) as refused:
            store.decide(
                "r-offer", ask_key, decision("U1", verdict=verdict, text="x"), now=run.updated_at + 5, member_of=IN_C1
            )
        if backend.dynamo:
            assert sent() == {"dynamodb.UpdateItem": 1}, "a refusal is told apart without a second request"
        assert refused.value.ask_key == ask_key and refused.value.verdict is verdict
        assert refused.value.run == run.evolve(snapshot=None)  # the run as stored, ask still pending
        assert not isinstance(refused.value, AskNotPending)
    assert backend.store().load("r-offer") == stored, "a refused decision changes nothing"

    # Still pending: an offered verdict is accepted, and a refused one on a decided ask
    # is reported as decided (someone else answered; the caller shows who).
    choice = decision("U2", verdict=Verdict.REJECT)
    after = store.decide("r-offer", "a2", choice, now=run.updated_at + 6, member_of=IN_C1)
    assert after.version == 2 and after.asks["a2"].decision == choice and store.fetch_state(after) == run.snapshot
    with pytest.raises(AskNotPending) as late:
        store.decide("r-offer", "a2", decision("U3", verdict=Verdict.REPLY), now=run.updated_at + 7, member_of=IN_C1)
    assert late.value.run.asks["a2"].decision == choice
    again = store.decide("r-offer", "a2", choice, now=run.updated_at + 6, member_of=IN_C1)  # a retry still succeeds
    assert again.evolve(snapshot=None) == after.evolve(snapshot=None)


def test_an_ask_recorded_without_verdicts_offers_the_defaults(backend: Backend) -> None:
    """decide accepts exactly the verdicts that load shows, even for a record with no list."""
    store = backend.store()
    run = make_run("r-default")
    bare = replace(run.asks["a2"], verdicts=())
    store.create(run.evolve(asks={**run.asks, "a2": bare}))
    loaded = store.load("r-default")
    assert loaded is not None and loaded.asks["a2"].verdicts == (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY)

    with pytest.raises(VerdictNotOffered):
        store.decide("r-default", "a2", decision("U1", verdict=Verdict.TRUST), now=time.time(), member_of=IN_C1)
    assert (
        store.decide("r-default", "a2", decision("U1", verdict=Verdict.REPLY), now=time.time(), member_of=IN_C1).version
        == 2
    )


def test_decide_exactly_once_when_some_clicks_name_a_verdict_not_offered(backend: Backend) -> None:
    backend.store().create(make_run("r-mixed"))
    offered = {Verdict.APPROVE, Verdict.REJECT}  # what a2 offers
    clicks = [(f"U{i:02d}", (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.EDIT)[i % 4]) for i in range(20)]
    barrier = threading.Barrier(len(clicks))
    won: list[Run] = []
    refused: list[tuple[Verdict, Exception]] = []
    errors: list[BaseException] = []
    store = backend.store()

    def click(user: str, verdict: Verdict) -> None:
        barrier.wait()
        try:
            won.append(store.decide("r-mixed", "a2", decision(user, verdict=verdict), now=time.time(), member_of=IN_C1))
        except (AskNotPending, VerdictNotOffered) as exc:
            refused.append((verdict, exc))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=click, args=c) for c in clicks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert len(won) == 1 and len(refused) == 19
    winner = won[0].asks["a2"].decision
    assert winner is not None and winner.verdict in offered
    for verdict, exc in refused:
        # An offered verdict can only lose to the winner; one not offered is refused as
        # such while the ask is pending, and as decided once the winner is in.
        assert isinstance(exc, AskNotPending) or verdict not in offered
        assert not isinstance(exc, VerdictNotOffered) or exc.run.asks["a2"].status is AskStatus.PENDING
    stored = backend.store().load("r-mixed")
    assert stored is not None and stored.version == 2 and stored.asks["a2"].decision == winner


def test_recent_lists_a_channels_runs_newest_first_through_an_index(
    backend: Backend, request: pytest.FixtureRequest
) -> None:
    store = backend.store()
    base = time.time()
    for n in range(12):
        channel = "C-LIST" if n % 3 else "C-OTHER"
        store.create(make_run(f"r-list-{n:02d}", channel=channel, created_at=base + n, snapshot=os.urandom(3000)))
    sent = _requests(backend, request)
    listed = store.recent(channel="C-LIST", limit=5)
    assert [r.run_id for r in listed] == ["r-list-11", "r-list-10", "r-list-08", "r-list-07", "r-list-05"]
    assert all(r.snapshot is None for r in listed), "a listing never reads run state"
    if backend.dynamo:
        assert sent() == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 1}, "two requests, no scan"
    assert store.recent(channel="C-NONE") == []


def test_recent_since_reads_only_the_window_through_the_index(backend: Backend, request: pytest.FixtureRequest) -> None:
    """``since`` bounds the index's range key: older runs are never read, the bound is
    inclusive, and ``limit`` still keeps the newest (``/graph stats`` reads a window)."""
    store = backend.store()
    base = time.time()
    for n in range(6):
        store.create(make_run(f"r-win-{n}", channel="C-WIN", created_at=base - 100.0 * (5 - n)))
    store.create(make_run("r-win-elsewhere", channel="C-ELSE", created_at=base))
    sent = _requests(backend, request)
    listed = store.recent(channel="C-WIN", since=base - 200.0, limit=50)
    assert [r.run_id for r in listed] == ["r-win-5", "r-win-4", "r-win-3"], "at or after since, newest first"
    if backend.dynamo:
        assert sent() == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 1}, "two requests, no scan"
    assert [r.run_id for r in store.recent(channel="C-WIN", since=base - 450.0, limit=2)] == ["r-win-5", "r-win-4"]
    assert store.recent(channel="C-WIN", since=base + 1.0) == []
    assert len(store.recent(channel="C-WIN", since=None, limit=50)) == 6


def test_recent_reads_past_one_batch_up_to_its_limit(backend: Backend, request: pytest.FixtureRequest) -> None:
    """More runs than one BatchGetItem takes (100): one query, then one read per 100."""
    if backend.bucket:
        pytest.skip("a listing never reads state: the bucket changes nothing here, and 105 creates cost a second")
    store = backend.store()
    base = time.time()
    for n in range(105):
        store.create(replace(make_run(f"r-many-{n:03d}", channel="C-MANY", created_at=base + n), asks={}))
    sent = _requests(backend, request)
    listed = store.recent(channel="C-MANY", since=base, limit=RECENT_LIMIT)
    assert [r.run_id for r in listed] == [f"r-many-{n:03d}" for n in reversed(range(105))]
    if backend.dynamo:
        assert sent() == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 2}, "1 + ceil(105 / 100) requests"
    assert len(store.recent(channel="C-MANY", limit=RECENT_LIMIT + 5)) == 105


def test_a_claim_never_takes_a_lease_that_still_holds(backend: Backend) -> None:
    """``store_rules.lease_free``: a renewal does not bump the version, so a claimer that read
    the run before its holder renewed must lose while the renewed lease holds; once the lease
    ran out, the same claim is taken."""
    store = backend.store()
    now = time.time()
    store.create(make_run("r-lease", status=RunStatus.RESUMING, lease_owner="a/1", lease_until=now - 1))
    read = store.load("r-lease", snapshot=False)
    assert read is not None
    assert store.renew("r-lease", owner="a/1", lease_until=now + 60)
    with pytest.raises(VersionConflict):
        store.claim(
            "r-lease",
            expected_version=read.version,
            status=RunStatus.RESUMING,
            owner="b/1",
            lease_until=now + 60,
            now=now,
        )
    version = store.claim(
        "r-lease",
        expected_version=read.version,
        status=RunStatus.RESUMING,
        owner="b/1",
        lease_until=now + 120,
        now=now + 61,
    )
    assert version == read.version + 1
    stored = store.load("r-lease", snapshot=False)
    assert stored is not None and stored.lease_owner == "b/1"


def test_a_lease_that_ran_out_is_not_renewed(backend: Backend) -> None:
    """A holder that stalled past its lease must not take it back: a claimer that read the run
    meanwhile may be taking it over this instant (its claim checks only the version and that
    the lease ran out), and both would then hold the run."""
    store = backend.store()
    now = time.time()
    store.create(make_run("r-renew", status=RunStatus.RESUMING, lease_owner="a/1", lease_until=now + 5))
    assert store.renew("r-renew", owner="a/1", lease_until=now + 60, now=now), "a live lease is renewed"
    assert not store.renew("r-renew", owner="a/1", lease_until=now + 200, now=now + 61), "one that ran out is not"
    assert not store.renew("r-renew", owner="b/1", lease_until=now + 60, now=now), "nor someone else's"
    stored = store.load("r-renew", snapshot=False)
    assert stored is not None and stored.lease_until == now + 60
