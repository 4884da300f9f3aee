"""The figures of a fault sweep, read from the store, the local Slack and the markers file after it settled.

Counted from what really happened (events the fault proxy and the local Slack served,
records in the store, lines the approved tools wrote), never from what the schedule
meant to do: a fault planned but never hit is not a fault injected.
"""

from __future__ import annotations

import json
import platform
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.records import AskStatus, RunStatus
from tests.e2e.conftest import cards, live_buttons
from tests.reliability.driver import Sweep
from tests.reliability.schedule import MID_RESUME, RunPlan

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


@dataclass
class Figures:
    seed: int
    backend: str
    runs: int
    faults: dict[str, int]
    runs_completed: int = 0
    runs_ended_otherwise: dict[str, int] = field(default_factory=dict)
    decisions: int = 0
    decisions_lost: int = 0
    side_effects_doubled: int = 0
    side_effects_rerun_documented: int = 0
    runs_stuck: int = 0
    live_cards_for_gone_asks: int = 0
    acks: int = 0
    acks_over_3s: int = 0
    slowest_ack: float = 0.0
    runs_failed_undecided: int = 0
    """Runs that ended failed before anyone could decide (e.g. the announcement timed out): by design."""
    problems: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)

    def row(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        rejected = self.runs_ended_otherwise.get("rejected", 0)
        completed = f"{self.runs_completed}" + (f" (+{rejected} rejected at a node gate)" if rejected else "")
        return (
            f"| {self.backend} | {self.seed} | {self.runs} | {faults} | {completed} "
            f"| {self.runs_failed_undecided} | {self.decisions} | {self.decisions_lost} "
            f"| {self.side_effects_doubled} (reruns after a kill mid-resume: {self.side_effects_rerun_documented}) "
            f"| {self.runs_stuck} | {self.live_cards_for_gone_asks} "
            f"| {self.acks_over_3s} (of {self.acks}, slowest {self.slowest_ack:.2f} s) |"
        )


def injected(sweep: Sweep) -> dict[str, int]:
    """Faults by kind, as served: DynamoDB answers of the proxy, Slack answers of the local Slack, crashes."""
    kinds: Counter[str] = Counter()
    if sweep.proxy is not None:
        for event in sweep.proxy.events:
            name = {"delay": "dynamodb delay", "lose_response": "dynamodb lost response"}.get(event.action)
            kinds[name or f"dynamodb {event.error}"] += 1
    for served in sweep.slack.faults_served:
        kind = ("timeout" if served["hold"] > 30 else "slow") if served.get("hold") else str(served["status"])
        kinds[f"slack {kind}"] += 1
    if sweep.refused:
        kinds["starts refused (store unreachable), retried"] = sum(sweep.refused.values())
    for point, count in sweep.crashes.items():
        kinds[f"SIGKILL {point}"] += count
    return dict(kinds)


def measure(*, sweep: Sweep, plans: list[RunPlan], seed: int, markers: list[str]) -> Figures:
    figures = Figures(seed=seed, backend=sweep.backend.name, runs=len(plans), faults=injected(sweep))
    store = sweep.backend.open_store()
    runs = {index: store.load(run_id, snapshot=False) for index, run_id in sweep.run_ids.items()}
    ended: Counter[str] = Counter()
    for plan in plans:
        run = runs.get(plan.index)
        if run is None or not run.status.terminal or run.owes_slack:
            figures.runs_stuck += 1
            figures.problems.append(f"run {plan.index} stuck: {run and (run.status, run.owes_slack)}")
            continue
        ended[str(run.status)] += 1
        expected = plan.case.rejected_status if plan.verdict == "reject" else "completed"
        if plan.index not in decided(sweep, plans):
            if run.status is RunStatus.FAILED and not run.asks:
                figures.runs_failed_undecided += 1
                figures.observations.append(f"run {plan.index} failed before a card: {run.error}")
            else:
                figures.problems.append(f"run {plan.index} ended {run.status} with no decision recorded")
        elif str(run.status) != expected:
            figures.problems.append(f"run {plan.index} ended {run.status}, decided {plan.verdict}")
        live = [m for m in cards(sweep.slack, plan.channel) if live_buttons(m)]
        for message in live:
            figures.live_cards_for_gone_asks += 1
            figures.problems.append(f"run {plan.index}: live card {message.get('ts')} after the run ended")
    figures.problems.extend(sweep.unplanned_deaths)
    figures.runs_completed = ended.pop("completed", 0)
    figures.runs_ended_otherwise = dict(ended)
    _decisions(figures, sweep=sweep, runs=runs)
    _side_effects(figures, plans=plans, decided=decided(sweep, plans), markers=markers)
    figures.acks = len(sweep.acks)
    figures.acks_over_3s = sum(1 for a in sweep.acks if a > 3.0)
    figures.slowest_ack = max(sweep.acks, default=0.0)
    return figures


def _decisions(figures: Figures, *, sweep: Sweep, runs: dict[int, Any]) -> None:
    figures.decisions = len(sweep.clicks)
    for click in sweep.clicks:
        run = runs.get(click.run)
        ask = run.asks.get(click.key) if run is not None else None
        decided = ask is not None and (
            (ask.decision is not None and ask.decision.user == click.user) or click.user in ask.votes
        )
        if not decided or ask is None or ask.status is not AskStatus.CONSUMED:
            figures.decisions_lost += 1
            figures.problems.append(f"decision lost: {click} -> {ask and (ask.status, ask.decision, ask.votes)}")


def decided(sweep: Sweep, plans: list[RunPlan]) -> set[int]:
    """The runs whose deciding clicks the bot acked as recorded (a quorum's approval takes two)."""
    clicks = Counter(click.run for click in sweep.clicks)
    need = {p.index: p.case.approvers if p.verdict == "approve" else 1 for p in plans}
    return {index for index, count in clicks.items() if count >= need.get(index, 1)}


def _side_effects(figures: Figures, *, plans: list[RunPlan], decided: set[int], markers: list[str]) -> None:
    """Every run, decided or not, against the side effects its graph could write.

    A decided run writes its verdict's line once (a Reply appends its text), a rejection
    none. A run whose deciding click got no ack may or may not have been decided: its
    verdict's line at most once, any other line never. A run SIGKILLed mid-resume may run
    the approved tool once more (the documented at-least-once of a pass that crashed
    before its save): one extra is counted apart; a second extra is doubled like any other.
    """
    want: Counter[str] = Counter()
    most: Counter[str] = Counter()
    for plan in plans:
        for template in plan.case.effects.values():
            line = template.format(tag=plan.tag)
            want[line] += 0  # every line the graph could write is checked, a rejection's too
            most[line] += 0
        if plan.verdict in plan.case.effects:
            line = plan.case.effects[plan.verdict].format(tag=plan.tag)
            want[line] += 1 if plan.index in decided else 0
            most[line] += 1 + (1 if plan.crash == MID_RESUME else 0)
    seen = Counter(markers)
    for line in want:
        got = seen[line]
        if got > most[line]:
            figures.side_effects_doubled += got - most[line]  # beyond what any reading allows
            figures.problems.append(f"side effect doubled: {line!r} {got} times, at most {most[line]} allowed")
        elif got > max(want[line], 1):  # the one rerun of a pass killed mid-resume
            figures.side_effects_rerun_documented += got - max(want[line], 1)
        elif got < want[line]:
            figures.decisions_lost += want[line] - got
            figures.problems.append(f"approved but never ran: {line!r} ({got} of {want[line]})")


def write_report(figures: list[Figures], *, command: str, workers: int = 0) -> None:
    """``bench/results/faults.md`` and ``.json`` (only when asked: a CI run leaves the tree clean);
    with ``workers`` (``FAULT_WORKERS``), ``faults-workers.md`` and ``.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "faults-workers" if workers else "faults"
    title = f", served with --workers {workers}" if workers else ""
    lines = [
        f"## Faults: a seeded random schedule against the real bot{title}",
        "",
        f"Command: `{command}`",
        f"({time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}).",
        "",
        "Each run of a graph gets DynamoDB faults at the HTTP level (throttling, 500s, delays, a write whose",
        "answer is lost), local-Slack faults (429 with Retry-After, 500, slow and timed-out answers) and, one",
        "run in three, a SIGKILL of the bot at a point of a pass; people decide by clicking. Counted after",
        "the sweeper (every 1 s) settled. Replay a row with `FAULT_SEED=<seed> FAULT_RUNS=<runs>`.",
        "",
        "| store | seed | runs | faults injected | runs completed | failed before a card | decisions "
        "| decisions lost | side effects doubled | runs stuck | live cards for gone asks | acks over 3 s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(f.row() for f in figures),
        "",
    ]
    reasons = Counter(o.split(": ", 1)[-1] for f in figures for o in f.observations)
    if reasons:
        lines += [
            "Runs that failed before anyone could decide (the bot's choice when it cannot announce a run; "
            "the requester is told), by reason: " + "; ".join(f"{r} ({n})" for r, n in sorted(reasons.items())) + ".",
            "",
        ]
    if workers:
        lines += [
            f"Every bot ran {workers} worker processes (`bot/workers.py`): a crash point killed the worker that "
            "reached it (the bot restarted it and handed it again what it had not finished, then was stopped and "
            "replaced), a kill mid-resume or during the card write killed the host (the workers and the bot).",
            "",
        ]
    (RESULTS / f"{name}.md").write_text("\n".join(lines))
    (RESULTS / f"{name}.json").write_text(json.dumps([asdict(f) for f in figures], indent=2) + "\n")
