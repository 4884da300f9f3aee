"""A seeded schedule of faults, one plan per run, so that any failure can be replayed from its seed.

Random faults find what hand-written cases miss, but a failure nobody can reproduce is
worth little: every choice here comes from one ``random.Random(seed)``, in a fixed order,
and the plan of each run prints as one line. ``FAULT_SEED=<seed>`` replays a sweep exactly
(the same graphs, decisions, faults and crash points; only the timing of the machine
differs).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from localslack import LocalSlack
from tests.support.faults import FaultProxy

STORE_OPERATIONS = ("PutItem", "UpdateItem", "GetItem", "Query")
SLACK_METHODS = ("chat.postMessage", "chat.update")
FIRST_PASS_CRASHES = ("saved", "posted", "recorded")
"""``engine.crash`` points a bot reaches in the first pass of a run (``APPROVAL_BOT_CRASH_AT``)."""
CARD_WRITE = "card-write"
"""SIGKILL while the card's reference is written: the write lands, the bot never hears (DynamoDB only)."""
MID_RESUME = "mid-resume"
"""SIGKILL from outside at a random moment after a click was acked: before or after the resume's save."""


@dataclass(frozen=True)
class GraphCase:
    """A graph the sweep runs, the decisions its cards offer, and how its side effect shows."""

    name: str
    shape: str
    verdicts: tuple[str, ...]
    approvers: int = 1
    effects: dict[str, str] = field(default_factory=dict)
    """The marker line each verdict makes the graph write (``{tag}`` is the run's); {} when it writes none."""
    rejected_status: str = "completed"

    @property
    def marks(self) -> bool:
        return bool(self.effects)


_WRITER = "writer:{tag}"
_REPLICAS = 'set_replicas {{"replicas": {n}, "service": "{tag}"}}'
EDITED_REPLICAS = 5

CASES = {
    case.name: case
    for case in (
        GraphCase(
            "guarded-write",
            "tool interrupt",
            ("approve", "reject", "reply"),
            effects={"approve": _WRITER, "reply": _WRITER + " | reply: because {tag}"},
        ),
        GraphCase(
            "tool-gate-test",
            "hook gate (BeforeToolCallEvent)",
            ("approve", "reject", "reply", "edit"),
            effects={
                "approve": _REPLICAS.replace("{n}", "3"),
                "reply": _REPLICAS.replace("{n}", "3"),
                "edit": _REPLICAS.replace("{n}", str(EDITED_REPLICAS)),
            },
        ),
        GraphCase("hitl", "HumanInTheLoop", ("approve", "reject"), effects={"approve": "dropped users"}),
        GraphCase(
            "guarded-quorum",
            "multi-approver policy (2 of 3)",
            ("approve", "reject"),
            approvers=2,
            effects={"approve": _WRITER + " | approvers: U0BOB,U0CAROL"},
        ),
        GraphCase("node-gate", "node gate (BeforeNodeCallEvent)", ("approve", "reject"), rejected_status="rejected"),
        GraphCase("incident", "result review (review_after)", ("approve", "reject", "reply")),
        GraphCase("deploy", "tool interrupt (example)", ("approve", "reject", "reply")),
        GraphCase("tool-gate", "hook gate (example)", ("approve", "reject")),
        GraphCase("cleanup", "HumanInTheLoop (example)", ("approve", "reject")),
    )
}
FAST_CRASHES = 2
"""At most this many crashing runs in the fast sweep: each costs two bot starts (the CI budget)."""
FAST_GRAPHS = ("guarded-write", "tool-gate-test", "hitl", "guarded-quorum", "node-gate", "incident")


@dataclass
class RunPlan:
    """What happens to one run: its graph, the decision, the faults and the crash point."""

    index: int
    case: GraphCase
    verdict: str
    store_faults: list[tuple[str, str, int, float]] = field(default_factory=list)
    """(kind, operation, times, seconds): kind is throttle-pte, throttle, 500, delay or lost-response."""
    slack_faults: list[tuple[str, str, float]] = field(default_factory=list)
    """(kind, method, seconds): kind is 429, 500, slow or timeout."""
    crash: str | None = None
    kill_after: float = 0.0

    @property
    def tag(self) -> str:
        return f"r{self.index}"

    @property
    def channel(self) -> str:
        return f"C0F{self.index:04d}"

    def describe(self) -> str:
        store = ",".join(f"{k}:{op}x{n}" + (f"@{s:.1f}s" if s else "") for k, op, n, s in self.store_faults)
        slack = ",".join(f"{k}:{m}" + (f"@{s:.1f}s" if s else "") for k, m, s in self.slack_faults)
        crash = (
            f"{self.crash}" + (f"@{self.kill_after:.2f}s" if self.crash == MID_RESUME else "") if self.crash else "-"
        )
        return (
            f"run {self.index}: {self.case.name} {self.verdict}; store [{store or '-'}]; "
            f"slack [{slack or '-'}]; crash {crash}"
        )


OUTAGE_REQUESTS = 8
"""500s in a row: botocore's standard mode tries 6 times, so a request fails to the bot
and the next one fails twice more before getting through."""

DEFAULT_SEED = 20261123
"""CI replays one schedule, so a red CI names a change, not a lucky draw; ``FAULT_SEED=random`` explores."""


def seed_and_runs(*, default_runs: int) -> tuple[int, int]:
    """``FAULT_SEED`` (a number, or ``random`` for a fresh one; else ``DEFAULT_SEED``) and ``FAULT_RUNS``."""
    chosen = os.environ.get("FAULT_SEED") or str(DEFAULT_SEED)
    seed = random.SystemRandom().randrange(1, 2**31) if chosen == "random" else int(chosen)
    return seed, int(os.environ.get("FAULT_RUNS") or default_runs)


def plan_runs(*, seed: int, runs: int, graphs: tuple[str, ...], dynamodb: bool, long: bool) -> list[RunPlan]:
    """The schedule: every graph in turn, a random decision, random faults and (one run in three) a crash.

    The fast sweep keeps at most ``FAST_CRASHES`` crashes; the draws are the same either way.
    """
    rng = random.Random(seed)
    plans: list[RunPlan] = []
    for index in range(runs):
        case = CASES[graphs[index % len(graphs)]]
        plan = RunPlan(index=index, case=case, verdict=rng.choice(case.verdicts))
        if dynamodb:
            for _ in range(rng.randint(1, 3)):
                kind = rng.choice(("throttle-pte", "throttle", "500", "delay", "lost-response", "outage"))
                operation = "UpdateItem" if kind == "lost-response" else rng.choice(STORE_OPERATIONS)
                seconds = round(rng.uniform(0.2, 1.2), 1) if kind == "delay" else 0.0
                # An outage outlasts botocore's 6 attempts, so the bot itself meets the error.
                times = OUTAGE_REQUESTS if kind == "outage" else rng.randint(1, 2)
                plan.store_faults.append((kind, operation, times, seconds))
        for _ in range(rng.randint(0, 2)):
            kinds = ("429", "500", "slow", "timeout") if long else ("429", "500", "slow")
            kind = rng.choice(kinds)
            seconds = {"slow": round(rng.uniform(0.3, 1.5), 1), "timeout": 32.0}.get(kind, 0.0)
            plan.slack_faults.append((kind, rng.choice(SLACK_METHODS), seconds))
        if rng.random() < 1 / 3:
            points = list(FIRST_PASS_CRASHES) + ([CARD_WRITE] if dynamodb else []) + ([MID_RESUME] if long else [])
            point, kill_after = rng.choice(points), round(rng.uniform(0.0, 1.0), 2)
            if long or sum(p.crash is not None for p in plans) < FAST_CRASHES:
                plan.crash, plan.kill_after = point, kill_after
        plans.append(plan)
    return plans


def arm_store(plan: RunPlan, proxy: FaultProxy) -> None:
    """Switch on the run's DynamoDB faults; each lasts its number of matching requests."""
    proxy.clear()
    for kind, operation, times, seconds in plan.store_faults:
        if kind in ("throttle-pte", "throttle"):
            error = "ProvisionedThroughputExceededException" if kind == "throttle-pte" else "ThrottlingException"
            proxy.throttle(kind=error, operations={operation}, times=times)  # type: ignore[arg-type]
        elif kind in ("500", "outage"):
            proxy.fail(operations={operation}, times=times)
        elif kind == "delay":
            proxy.delay(operations={operation}, seconds=seconds, times=times)
        else:
            proxy.lose_response(operations={operation}, times=times)


def arm_slack(plan: RunPlan, slack: LocalSlack) -> None:
    """Switch on the run's Slack faults: each hits the next call of its method in the run's channel."""
    slack.clear_failures()

    def in_channel(params: object) -> bool:
        return isinstance(params, dict) and params.get("channel") == plan.channel

    for kind, method, seconds in plan.slack_faults:
        if kind in ("429", "500"):
            slack.inject_failures(method=method, status=int(kind), retry_after=1, when=in_channel)
        else:
            slack.hold_answers(method=method, seconds=seconds, when=in_channel)
