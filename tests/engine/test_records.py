"""What a run record says it owes Slack and when a sweeper should look at it: derived, never stored."""

from __future__ import annotations

from dataclasses import replace

from engine.records import (
    DELIVERY_GRACE_SECONDS,
    LIVE,
    STATE_REFRESH_MARGIN_SECONDS,
    AskStatus,
    Closed,
    Decision,
    MessageRef,
    RunStatus,
    ToolCall,
    Verdict,
    ask_digest,
)
from tests.persistence.conftest import make_run

CARD = MessageRef(channel="C1", ts="1.1")
THREAD = MessageRef(channel="C1", ts="1.0")


def test_a_pending_ask_without_a_card_is_owed_once_the_run_has_a_thread() -> None:
    bare = {k: replace(a, card=None) for k, a in make_run("r").asks.items()}
    run = make_run("r", status=RunStatus.WAITING, thread=None, channel=None, asks=bare)
    assert not run.owes_slack, "no thread yet: nothing can be posted"
    run = run.evolve(thread=THREAD)
    assert run.owes_slack and run.sweep_at == run.updated_at + DELIVERY_GRACE_SECONDS
    carded = {k: replace(a, card=CARD, shown=LIVE) for k, a in run.asks.items()}
    assert not run.evolve(asks=carded).owes_slack


def test_a_passs_own_debt_waits_for_its_lease_end_when_it_comes_within_one_more_grace() -> None:
    """The claim put the run in the sweep index at its lease end; a save whose debt is due by
    then keeps that key (a moved key is two index writes), never racing the holder's grace."""
    bare = {k: replace(a, card=None) for k, a in make_run("r").asks.items()}
    run = make_run("r", status=RunStatus.WAITING, thread=THREAD, asks=bare)
    grace_end = run.updated_at + DELIVERY_GRACE_SECONDS
    held = grace_end + DELIVERY_GRACE_SECONDS / 2
    assert run.evolve(held_until=held).sweep_at == held
    assert run.evolve(held_until=grace_end + DELIVERY_GRACE_SECONDS).sweep_at == grace_end + DELIVERY_GRACE_SECONDS
    # Too far off (a long lease), already over (a long pass), or a debt a sweeper failed to pay: the grace.
    assert run.evolve(held_until=grace_end + 2 * DELIVERY_GRACE_SECONDS).sweep_at == grace_end
    assert run.evolve(held_until=run.updated_at).sweep_at == grace_end
    stalled = run.evolve(held_until=held, stalled=1, stalled_at=run.updated_at)
    assert stalled.sweep_at == run.updated_at + 2 * DELIVERY_GRACE_SECONDS
    done = make_run("r", status=RunStatus.COMPLETED, thread=THREAD, asks={}, held_until=held)
    assert done.sweep_at == held, "the final message's debt too"
    assert make_run("r", held_until=held).to_dict()["held_until"] == held


def test_a_card_that_shows_something_else_than_its_ask_is_owed_an_update() -> None:
    run = make_run("r", status=RunStatus.WAITING, thread=THREAD)
    asks = {k: replace(a, card=CARD, shown=LIVE) for k, a in run.asks.items()}
    decided = replace(
        asks["a1"], status=AskStatus.DECIDED, decision=Decision(verdict=Verdict.APPROVE, user="U", at=1.0)
    )
    assert decided.view == "decided" and decided.card_owed
    closed = replace(asks["a1"], status=AskStatus.OBSOLETE, closed=Closed.CHANGED)
    assert closed.view == "closed:changed" and closed.card_owed
    assert not replace(closed, shown="closed:changed").card_owed
    assert run.evolve(asks={**asks, "a1": decided}).owes_slack


def test_a_finished_run_owes_its_final_message_until_recorded() -> None:
    run = make_run("r", status=RunStatus.COMPLETED, thread=THREAD, asks={})
    assert run.owes_slack and run.sweep_at is not None
    done = run.evolve(final=MessageRef(channel="C1", ts="9.9"))
    assert not done.owes_slack and done.sweep_at is None


def test_a_waiting_run_is_swept_before_its_offloaded_state_expires() -> None:
    asks = {k: replace(a, card=CARD, shown=LIVE) for k, a in make_run("r").asks.items()}
    run = make_run(
        "r", status=RunStatus.WAITING, thread=THREAD, asks=asks, state_ref={"kind": "chunks", "expires_at": 1e9}
    )
    assert run.sweep_at == 1e9 - STATE_REFRESH_MARGIN_SECONDS


def test_the_digest_follows_everything_the_card_shows() -> None:
    call = ToolCall(name="transfer", input={"amount": 100, "to": "acme"})
    base = ask_digest(name="approve", reason="100 to acme", tool=call)
    assert base == ask_digest(name="approve", reason="100 to acme", tool=call)
    assert base != ask_digest(name="approve", reason="5000 to mallory", tool=call)
    assert base != ask_digest(
        name="approve", reason="100 to acme", tool=replace(call, input={"amount": 5000, "to": "acme"})
    )
    assert base != ask_digest(name="other", reason="100 to acme", tool=call)
    assert ask_digest(name="a", reason={"x": 1, "y": 2}, tool=None) == ask_digest(
        name="a", reason={"y": 2, "x": 1}, tool=None
    )
