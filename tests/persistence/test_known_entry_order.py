"""``RunStore.decide(known=...)`` never chooses which ``all_of`` entry an approval fills.

The rules give an approval the *first* ``all_of`` entry (in the policy's order) still
missing that the person is shown to be in. A ``known`` record showing an earlier entry
filled that is not must not make DynamoDB count the approval for a later one (its write
checks that the entries before it are filled); SQLite ignores ``known``. Both stores agree.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from engine.decision_rules import ALL_OF_LOOKED_UP
from engine.policy import AskRules
from engine.records import Decision, Verdict
from tests.persistence.conftest import Backend, make_run


def test_a_record_showing_an_entry_filled_that_is_not_does_not_choose_the_entry(backend: Backend) -> None:
    if backend.bucket:
        pytest.skip("where the state lives does not change a decision's rules")
    base = make_run(f"r-known-review-{time.monotonic_ns()}", started_by="U0S")
    run = base.evolve(asks={"a1": replace(base.asks["a1"], rules=AskRules(quorum=3, all_of=("S0FIN", "S0LEGAL")))})
    store = backend.store()
    store.create(run)
    ask = run.asks["a1"]
    # A record that shows finance filled (by U0Z); as stored, nothing is filled yet.
    vote = Decision(verdict=Verdict.APPROVE, user="U0Z", at=time.time(), counts_for="S0FIN")
    forged = run.evolve(asks={"a1": replace(ask, votes={"U0Z": vote})})
    # U0A is in both teams: the rules count the approval for finance, the first one missing.
    both = frozenset({"C1", ALL_OF_LOOKED_UP, "S0FIN", "S0LEGAL"})
    yes = Decision(verdict=Verdict.APPROVE, user="U0A", at=time.time())
    done = store.decide(run.run_id, "a1", yes, now=time.time(), member_of=both, known=forged)
    assert done.asks["a1"].filled == {"S0FIN": "U0A"}, f"{backend.name}: counted for {done.asks['a1'].filled}"
