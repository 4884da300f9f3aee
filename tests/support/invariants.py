"""The product's promises as checks over what a test can observe: the stored runs, what
was shown in Slack, and the side effects the test graphs wrote.

Each check is a plain function returning the violations it found (empty: none), worded
so that a failing test says what broke. They read only the record, the recording
publisher's log and the marker file (``tests/support/graphs.py``), so they can later be
swapped for the engine's own checks without touching the tests that call them.
``tests/engine/test_interleavings.py`` runs them after every step of a random
interleaving of clicks, passes, sweeps, lost responses and crashes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from engine.policy import HITL_YES, Policy
from engine.records import LIVE, Ask, AskStatus, Closed, Decision, Run, RunStatus, Verdict
from engine.sources import HITL_INTERRUPT_NAME

# How far an ask has gone: it only ever moves forward.
_RANK = {AskStatus.PENDING: 0, AskStatus.DECIDED: 1, AskStatus.CONSUMED: 2, AskStatus.OBSOLETE: 2}


@dataclass
class Ledger:
    """What the test saw happen besides the record, filled in by its wrappers.

    ``consumed``: per (run id, ask key), the passes whose landed save turned that decided
    ask into a consumed one. ``crashes``: per run, the simulated deaths of a process while
    it held the run (a pass that died after its side effect and before its save is re-run
    by the takeover: the documented at-least-once, allowed once per such crash).
    ``shown_unsaved``: publisher calls that showed a state the store did not have yet.
    ``passes_after_cancel``: passes started on a run already cancelled (or asked to be);
    ``passes_after_end``: on a run that had ended otherwise; ``late_passes``: either, by a
    follow-up whose claim had expired.
    ``effects_at_cancel``: the side effects a run had when it was first seen cancelled.
    ``late``: per run, follow-ups that ran on a claim whose lease had already expired (a
    sweeper may have taken the run over meanwhile).
    """

    consumed: Counter[tuple[str, str]] = field(default_factory=Counter)
    crashes: Counter[str] = field(default_factory=Counter)
    shown_unsaved: list[str] = field(default_factory=list)
    passes_after_cancel: list[str] = field(default_factory=list)
    effects_at_cancel: dict[str, int] = field(default_factory=dict)
    late: Counter[str] = field(default_factory=Counter)
    late_now: set[str] = field(default_factory=set)  # runs a late follow-up is working on now
    passes_after_end: list[str] = field(default_factory=list)
    late_passes: list[str] = field(default_factory=list)
    stale_cancel: list[str] = field(default_factory=list)  # passes on a copy from before a cancel


# -- side effects: the marker lines the test graphs write ------------------------------


def marker_owner(line: str) -> tuple[str, str]:
    """(node id, task) of one marker line; tasks are unique per run in these tests."""
    if line.startswith("set_replicas "):
        return "ops", str(json.loads(line.removeprefix("set_replicas "))["service"])
    if line.startswith("dropped "):
        return "dba", line.removeprefix("dropped ")
    node, rest = line.split(":", 1)
    return node, rest.split(" | ", 1)[0]


def effects_by_run(markers: Iterable[str], runs: Mapping[str, Run]) -> Counter[tuple[str, str]]:
    """Side effects per (run id, node id)."""
    by_task = {run.task: run.run_id for run in runs.values()}
    counted: Counter[tuple[str, str]] = Counter()
    for line in markers:
        node, task = marker_owner(line)
        counted[(by_task.get(task, f"?{task}"), node)] += 1
    return counted


def lets_effect_run(ask: Ask) -> bool:
    """Whether the answer recorded on ``ask`` lets its gated side effect run in the test graphs."""
    d = ask.decision
    if d is None or d.expired or d.verdict is Verdict.REJECT:
        return False
    if ask.name == HITL_INTERRUPT_NAME and d.verdict is Verdict.REPLY:
        return (d.text or "").strip().lower() in HITL_YES
    return True


def side_effects_at_most_once(
    runs: Mapping[str, Run], markers: list[str], ledger: Ledger, *, excused: Mapping[str, int] | None = None
) -> list[str]:
    """An approved side effect runs at most once per approval (plus one rerun per crash mid-hold,
    and per run the ``excused`` reruns a known issue explains)."""
    found: list[str] = []
    excused = excused or {}
    for (run_id, node), count in effects_by_run(markers, runs).items():
        run = runs.get(run_id)
        if run is None:
            found.append(f"side effect of node {node} for no known run ({run_id})")
            continue
        approvals = sum(1 for a in run.asks.values() if a.node_id == node and lets_effect_run(a))
        if count > approvals + ledger.crashes[run_id] + excused.get(run_id, 0):
            found.append(
                f"run {run_id} node {node}: side effect ran {count}x for {approvals} approval(s)"
                f" and {ledger.crashes[run_id]} crash(es) mid-hold"
            )
        if run.status is RunStatus.CANCELLED:
            ledger.effects_at_cancel.setdefault(f"{run_id}/{node}", count)
            if count > ledger.effects_at_cancel[f"{run_id}/{node}"]:
                found.append(f"run {run_id} node {node}: a side effect ran after the run was cancelled")
    return found


# -- who decided ------------------------------------------------------------------------


def allowed_by_policy(run: Run, ask: Ask, decision: Decision, policy: Policy, groups: Mapping[str, set[str]]) -> bool:
    """The graph's policy as declared (not as copied into the ask): may this person answer so?"""
    if decision.expired:
        return True
    rejecting = decision.verdict is Verdict.REJECT
    if decision.user == run.started_by:
        return rejecting or policy.allow_self_approval
    approvers = policy.approvers
    if approvers is None:
        return True
    ids = set(approvers) | (set(policy.escalate_to) if ask.escalated else set())
    return decision.user in ids or any(decision.user in groups.get(g, set()) for g in ids)


def decisions_allowed(run: Run, policy_of: Callable[[str], Policy], groups: Mapping[str, set[str]]) -> list[str]:
    """Every decision and vote recorded came from someone the policy allows (or the expiry),
    and an approval decided a quorum ask only with the quorum reached."""
    found: list[str] = []
    policy = policy_of(run.graph)
    for ask in run.asks.values():
        for d in [*([ask.decision] if ask.decision else []), *ask.votes.values()]:
            if not allowed_by_policy(run, ask, d, policy, groups):
                found.append(f"run {run.run_id} ask {ask.key}: {d.verdict.value} by {d.user} is not allowed")
        d = ask.decision
        if d is not None and not d.expired and d.verdict is Verdict.APPROVE and policy.quorum > 1:
            voters = set(ask.votes) | {d.user}
            if len(voters) < policy.quorum:
                found.append(
                    f"run {run.run_id} ask {ask.key}: approved by {sorted(voters)} under quorum {policy.quorum}"
                )
        hitl = d is not None and ask.name == HITL_INTERRUPT_NAME and policy.quorum > 1
        if hitl and d is not None and d.verdict is Verdict.REPLY and lets_effect_run(ask):
            found.append(f"run {run.run_id} ask {ask.key}: a reply {d.text!r} approved a quorum ask alone")
    return found


# -- the record's own consistency -------------------------------------------------------


def idle_waiting_is_live(run: Run) -> list[str]:
    """A waiting run nobody holds has an open ask, and each pending ask has a live card
    posted or a delivery owed (so a sweeper will post it)."""
    if run.status is not RunStatus.WAITING or run.lease_owner is not None:
        return []
    found: list[str] = []
    if not run.pending_asks() and not run.decided_asks():
        found.append(f"run {run.run_id} waits with no open ask ({_asks(run)})")
    for ask in run.pending_asks():
        if ask.card is None and not (run.owes_slack and run.sweep_at is not None):
            found.append(f"run {run.run_id} ask {ask.key} is pending with no card and no delivery owed")
    return found


def asks_move_forward(before: Run | None, after: Run) -> list[str]:
    """An ask never goes back (pending, decided, consumed or obsolete) and its decision never changes."""
    if before is None:
        return []
    found: list[str] = []
    for key, old in before.asks.items():
        new = after.asks.get(key)
        if new is None:
            continue
        if _RANK[new.status] < _RANK[old.status] or (_RANK[old.status] == 2 and new.status is not old.status):
            found.append(f"run {after.run_id} ask {key} went from {old.status.value} to {new.status.value}")
        if old.decision is not None and new.decision != old.decision:
            found.append(f"run {after.run_id} ask {key}: its decision changed from {old.decision} to {new.decision}")
    if before.status.terminal and after.status is not before.status:
        found.append(f"run {after.run_id} went from {before.status.value} to {after.status.value}")
    return found


def decisions_not_dropped(run: Run) -> list[str]:
    """A decision reaches the graph, or is discarded only because its question changed, the
    run failed or was cancelled: never closed as "moved on" with the answer unread."""
    return [
        f"run {run.run_id} ask {a.key}: {a.decision.verdict.value} by {a.decision.user} closed unread ({_asks(run)})"
        for a in run.asks.values()
        if a.status is AskStatus.OBSOLETE and a.decision is not None and a.closed is Closed.MOVED_ON
    ]


def answers_used_once(ledger: Ledger) -> list[str]:
    """A decided ask is consumed by exactly one pass (others carry it on); crashes mid-hold aside."""
    return [
        f"run {run_id} ask {key}: consumed by {n} passes"
        for (run_id, key), n in ledger.consumed.items()
        if n > 1 + ledger.crashes[run_id]
    ]


def nothing_after_cancel(ledger: Ledger) -> list[str]:
    return list(ledger.passes_after_cancel)


def nothing_after_the_end(ledger: Ledger) -> list[str]:
    return list(ledger.passes_after_end)


def pass_started(ledger: Ledger, stored: Run | None, held: Run) -> None:
    """Note a pass about to run on ``held`` (the holder's copy) if the store says the run is
    over or cancelled: by a late follow-up, on a copy that missed the cancel, or otherwise."""
    if stored is None or not (stored.cancelled_by or stored.status.terminal):
        return
    run_id = held.run_id
    why = f"run {run_id}: a pass started while the store says {stored.status.value}, cancelled by {stored.cancelled_by}"
    if run_id in ledger.late_now:
        ledger.late_passes.append(why)
    elif stored.cancelled_by and not held.cancelled_by and not stored.status.terminal:
        ledger.stale_cancel.append(why)
    elif stored.cancelled_by or stored.status is RunStatus.CANCELLED:
        ledger.passes_after_cancel.append(why)
    else:
        ledger.passes_after_end.append(why)


def durable_before_visible(ledger: Ledger) -> list[str]:
    return list(ledger.shown_unsaved)


def shown_is_saved(stored: Run | None, what: str, ask: Ask | None, run: Run) -> str | None:
    """Whether a publisher call about to show ``what`` shows a state the store has; None if so.

    ``what``: started, card, update, notice or final (the publisher's calls).
    """
    if stored is None:
        return f"{what} for run {run.run_id} shown before the run was saved"
    if what == "final":
        if not stored.status.terminal or stored.status is not run.status:
            return f"run {run.run_id}: final {run.status.value} shown while the store says {stored.status.value}"
        return None
    if ask is None:
        return None
    saved = stored.asks.get(ask.key)
    if saved is None:
        return f"run {run.run_id}: {what} of ask {ask.key} shown before the ask was saved"
    if what == "update":
        shown_rank = 0 if ask.view.startswith(LIVE) else 1 if ask.view == "decided" else 2
        if _RANK[saved.status] < shown_rank:
            return f"run {run.run_id} ask {ask.key}: card shows {ask.view} while the store has {saved.status.value}"
        if shown_rank == 0 and len(saved.votes) < len(ask.votes):
            return f"run {run.run_id} ask {ask.key}: card shows {len(ask.votes)} votes, the store {len(saved.votes)}"
    if what == "notice" and len(saved.notices) < len(ask.notices):
        return f"run {run.run_id} ask {ask.key}: a notice shown before it was claimed in the store"
    return None


# -- after quiescence -------------------------------------------------------------------


def settled(run: Run, *, now: float) -> list[str]:
    """Once every lease and grace is past and sweeps found nothing due: nothing lost, nothing stuck.

    Every run is terminal with its end posted, or waiting, unheld, with only pending asks,
    each with a live card that shows its state.
    """
    if run.status.terminal:
        return [] if run.final is not None or run.channel is None else [f"run {run.run_id} ended unannounced"]
    if run.status is not RunStatus.WAITING:
        return [f"run {run.run_id} is stuck {run.status.value} (lease until {run.lease_until}, now {now})"]
    found = idle_waiting_is_live(run)
    if run.lease_owner is not None:
        found.append(f"run {run.run_id} waits held by {run.lease_owner}")
    if run.decided_asks():
        found.append(f"run {run.run_id} waits with decided asks nobody resumed ({_asks(run)})")
    if not run.pending_asks():
        found.append(f"run {run.run_id} waits with nothing pending ({_asks(run)})")
    for ask in run.pending_asks():
        if ask.card is None or ask.card_owed:
            found.append(f"run {run.run_id} ask {ask.key}: its card is missing or out of date")
    if run.owes_slack:
        found.append(f"run {run.run_id} still owes Slack")
    return found


def _asks(run: Run) -> str:
    return ", ".join(f"{a.key}={a.status.value}" for a in run.asks.values()) or "no asks"
