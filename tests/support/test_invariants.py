"""The checks of ``tests/support/invariants.py`` see what they are meant to see.

The interleavings test passes when they find nothing; these make sure that finding nothing
means something: each check fires on a record or a log that breaks its promise.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.policy import Policy
from engine.records import Ask, AskStatus, Decision, MessageRef, Run, RunStatus, Verdict
from engine.store import StoreUnavailable
from tests.support import invariants as inv
from tests.support.lossy_store import LossyStore

CARD = MessageRef(channel="C1", ts="1.0")


def _ask(key: str = "a1", status: AskStatus = AskStatus.PENDING, **changes: object) -> Ask:
    ask = Ask(
        key=key, interrupt_id="i", name="approve_write_writer", reason={}, node_id="writer", status=status, created_at=0
    )
    return replace(ask, **changes)  # type: ignore[arg-type]


def _run(*asks: Ask, status: RunStatus = RunStatus.WAITING, **changes: object) -> Run:
    run = Run(
        run_id="r0",
        graph="g",
        task="t0x",
        started_by="U0STARTER",
        status=status,
        version=3,
        created_at=0,
        updated_at=0,
        thread=CARD,
        channel="C1",
        asks={a.key: a for a in asks},
    )
    return run.evolve(**changes)


def _decision(user: str, verdict: Verdict = Verdict.APPROVE) -> Decision:
    return Decision(verdict=verdict, user=user, at=1.0)


def test_a_waiting_run_with_nothing_open_is_caught() -> None:
    consumed = _ask(status=AskStatus.CONSUMED, decision=_decision("U0BOB"), card=CARD, shown="decided")
    assert inv.idle_waiting_is_live(_run(consumed))
    assert not inv.idle_waiting_is_live(_run(consumed, lease_owner="p1/x", lease_until=9.0))
    assert not inv.idle_waiting_is_live(_run(_ask(card=CARD)))


def test_a_decision_the_policy_forbids_is_caught() -> None:
    def policy_of(_: str) -> Policy:
        return Policy(approvers=("U0ALICE", "S0OPS"), quorum=1)

    groups = {"S0OPS": {"U0OPS"}}
    ok = _run(_ask(status=AskStatus.DECIDED, decision=_decision("U0OPS")))
    assert not inv.decisions_allowed(ok, policy_of, groups)
    assert inv.decisions_allowed(_run(_ask(status=AskStatus.DECIDED, decision=_decision("U0BOB"))), policy_of, groups)
    own = _run(_ask(status=AskStatus.DECIDED, decision=_decision("U0STARTER")))
    assert inv.decisions_allowed(own, policy_of, groups)


def test_an_approval_short_of_its_quorum_is_caught() -> None:
    def policy_of(_: str) -> Policy:
        return Policy(approvers=("U0ALICE", "U0BOB"), quorum=2)

    alone = _run(_ask(status=AskStatus.DECIDED, decision=_decision("U0BOB")))
    assert inv.decisions_allowed(alone, policy_of, {})
    both = _run(_ask(status=AskStatus.DECIDED, decision=_decision("U0BOB"), votes={"U0ALICE": _decision("U0ALICE")}))
    assert not inv.decisions_allowed(both, policy_of, {})


def test_an_ask_going_back_or_changing_its_answer_is_caught() -> None:
    decided = _run(_ask(status=AskStatus.DECIDED, decision=_decision("U0BOB")))
    assert inv.asks_move_forward(decided, _run(_ask()))
    other = _run(_ask(status=AskStatus.DECIDED, decision=_decision("U0CAROL")))
    assert inv.asks_move_forward(decided, other)
    consumed = _run(_ask(status=AskStatus.CONSUMED, decision=_decision("U0BOB")))
    assert not inv.asks_move_forward(decided, consumed)


def test_a_side_effect_beyond_its_approvals_is_caught() -> None:
    ledger = inv.Ledger()
    runs = {"r0": _run(_ask(status=AskStatus.CONSUMED, decision=_decision("U0BOB")))}
    assert not inv.side_effects_at_most_once(runs, ["writer:t0x"], ledger)
    assert inv.side_effects_at_most_once(runs, ["writer:t0x", "writer:t0x | reply: x"], ledger)
    ledger.crashes["r0"] += 1  # one rerun after a crash mid-hold is the documented at-least-once
    assert not inv.side_effects_at_most_once(runs, ["writer:t0x", "writer:t0x"], ledger)
    rejected = {"r0": _run(_ask(status=AskStatus.CONSUMED, decision=_decision("U0BOB", Verdict.REJECT)))}
    assert inv.side_effects_at_most_once(rejected, ["writer:t0x"], inv.Ledger())


def test_showing_what_the_store_does_not_have_is_caught() -> None:
    pending = _ask(card=CARD)
    decided = _ask(status=AskStatus.DECIDED, decision=_decision("U0BOB"), card=CARD)
    assert inv.shown_is_saved(None, "card", pending, _run(pending))
    assert inv.shown_is_saved(_run(), "card", pending, _run(pending))
    assert inv.shown_is_saved(_run(pending), "update", decided, _run(decided))
    assert inv.shown_is_saved(_run(decided), "update", decided, _run(decided)) is None
    ended = _run(status=RunStatus.COMPLETED)
    assert inv.shown_is_saved(_run(pending), "final", None, ended)
    assert inv.shown_is_saved(ended, "final", None, ended) is None


def test_a_run_left_stuck_is_not_settled() -> None:
    assert inv.settled(_run(_ask()), now=0)  # a pending ask without a card
    assert inv.settled(_run(_ask(card=CARD), status=RunStatus.RESUMING, lease_owner="p", lease_until=1), now=5)
    assert inv.settled(_run(status=RunStatus.COMPLETED), now=0)  # its end never posted
    assert not inv.settled(_run(_ask(card=CARD)), now=0)
    assert not inv.settled(_run(status=RunStatus.COMPLETED, final=CARD), now=0)


def test_the_lossy_store_lands_the_write_then_loses_its_answer() -> None:
    class Inner:
        def __init__(self) -> None:
            self.notes: list[str] = []

        def note(self, run_id: str, event: object) -> None:
            self.notes.append(run_id)

        def load(self, run_id: str) -> str:
            return run_id

    inner = Inner()
    store = LossyStore(inner)  # type: ignore[arg-type]
    store.lose_next()
    assert store.load("r0") == "r0"  # reads are never lost
    with pytest.raises(StoreUnavailable):
        store.note("r0", None)
    assert inner.notes == ["r0"] and store.lost == ["note"]
    store.note("r1", None)
    assert inner.notes == ["r0", "r1"]
