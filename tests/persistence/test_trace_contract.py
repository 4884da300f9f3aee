"""An ask's trace context (``Ask.trace``, ``engine.tracing``) survives every write of both stores."""

from __future__ import annotations

from dataclasses import replace

from engine.records import RunStatus
from tests.persistence.conftest import IN_C1, Backend, decision, make_run

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"  # the raising pass's trace and span ids


def test_an_asks_trace_context_round_trips_through_create_decide_claim_and_save(backend: Backend) -> None:
    store = backend.store()
    run = make_run("r-trace")
    run = run.evolve(asks={**run.asks, "a1": replace(run.asks["a1"], trace=TRACE)})
    store.create(run)
    assert store.load("r-trace") == run
    decided = store.decide("r-trace", "a1", decision("U1"), now=run.updated_at, member_of=IN_C1)
    assert decided.asks["a1"].trace == TRACE and decided.asks["a2"].trace is None
    version = store.claim(
        "r-trace", expected_version=decided.version, status=RunStatus.RESUMING, owner="p1/1", lease_until=1e10, now=1
    )
    claimed = backend.store().load("r-trace")
    assert claimed is not None and claimed.version == version and claimed.asks["a1"].trace == TRACE
    saved = store.save(claimed.evolve(output="kept"), expected_version=version)
    assert backend.store().load("r-trace") == saved and saved.asks["a1"].trace == TRACE
    if backend.dynamo:
        (item,) = [i for i in backend.items() if i["pk"]["S"] == "run#r-trace" and i["sk"]["S"] == "run"]
        asks = item["asks"]["M"]
        assert asks["a1"]["M"]["trace"] == {"S": TRACE} and "trace" not in asks["a2"]["M"], "absent when untraced"
