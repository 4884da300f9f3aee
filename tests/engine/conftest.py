"""Engine fixtures: the real SQLite store, real graphs, and a publisher that records."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from strands.multiagent.graph import Graph

import tests.support.graphs as test_graphs
from engine import RunEngine
from engine.policy import Policy
from engine.records import Ask, AskStatus, Decision, MessageRef, Run, RunStatus, Verdict
from engine.store import RunStore
from graph_defs.registry import build_graph, get_graph, list_graphs, load_graph_modules
from persistence.sqlite import SqliteRunStore


class RegistrySource:
    def build(self, name: str) -> Graph:
        return build_graph(name)

    def exists(self, name: str) -> bool:
        return any(d.name == name for d in list_graphs())

    def policy(self, name: str) -> Policy:
        policy: Policy = getattr(get_graph(name), "policy", Policy())
        return policy


@dataclass
class FakeDirectory:
    """User groups for the engine's policy checks; counts lookups."""

    groups: dict[str, set[str]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)
    channels: dict[str, set[str]] | None = None  # channel -> members; None: everyone is in every channel
    channel_lookups: list[tuple[str, str]] = field(default_factory=list)

    async def members(self, group: str) -> frozenset[str]:
        self.lookups.append(group)
        if group not in self.groups:
            raise LookupError(group)
        return frozenset(self.groups[group])

    async def in_channel(self, user: str, channel: str) -> bool:
        self.channel_lookups.append((user, channel))
        return self.channels is None or user in self.channels.get(channel, set())


@dataclass
class RecordingPublisher:
    """Remembers what would have been posted, in order, with fake message refs.

    ``posted`` maps (run id, what) to the ref, like message metadata in Slack, so that
    ``find_posted`` answers as the real one does.
    """

    events: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, run id, ask key or status)
    posted: dict[tuple[str, str], MessageRef] = field(default_factory=dict)
    _ts: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        self.events.append(("started", run.run_id, ""))
        return self._place(run, "", channel)

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        self.events.append(("card", run.run_id, ask.key))
        return self._place(run, ask.key, "C1")

    async def update_card(self, *, run: Run, ask: Ask) -> None:
        self.events.append(("changed", run.run_id, f"{ask.key}:{ask.view}"))

    async def post_final(self, *, run: Run) -> MessageRef:
        self.events.append(("finished", run.run_id, run.status.value))
        return self._place(run, "final", "C1")

    async def post_notice(self, *, run: Run, ask: Ask, index: int) -> MessageRef:
        self.events.append(("notice", run.run_id, f"{ask.key}:{ask.notices[index]}"))
        return self._place(run, f"{ask.key}:notice:{index}", "C1")

    async def find_posted(self, *, run: Run, what: str) -> MessageRef | None:
        self.events.append(("lookup", run.run_id, what))
        return self.posted.get((run.run_id, what))

    async def retract(self, *, ref: MessageRef) -> None:
        self.events.append(("retracted", "", ref.ts))

    def _place(self, run: Run, what: str, channel: str) -> MessageRef:
        ref = MessageRef(channel=channel, ts=f"{next(self._ts)}.0")
        self.posted[(run.run_id, what)] = ref
        return ref

    def of(self, kind: str) -> list[tuple[str, str, str]]:
        return [e for e in self.events if e[0] == kind]


@pytest.fixture(autouse=True)
def offline_graphs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    monkeypatch.setenv("APPROVAL_BOT_TEST_MARKERS", str(tmp_path / "markers.txt"))
    load_graph_modules(["tests.support.graphs"], examples=True)  # the engine tests run the examples too
    test_graphs.DURING_PASS.clear()


@pytest.fixture
def store(tmp_path: Path) -> SqliteRunStore:
    return SqliteRunStore(str(tmp_path / "runs.sqlite3"))


@pytest.fixture
def publisher() -> RecordingPublisher:
    return RecordingPublisher()


@pytest.fixture
def make_engine(store: SqliteRunStore, publisher: RecordingPublisher):  # type: ignore[no-untyped-def]
    """A new engine per call: each one stands for another process (own owner id, fresh graphs)."""

    def make(*, owner: str | None = None, lease_seconds: float = 900.0) -> RunEngine:
        return RunEngine(
            store=store, graphs=RegistrySource(), publisher=publisher, owner=owner, lease_seconds=lease_seconds
        )

    return make


async def died_holding_approval(
    store: RunStore,
    publisher: RecordingPublisher,
    *,
    graph: str = "guarded-write",
    starter: str = "U0",
    approvers: tuple[str, ...] = ("U1",),
    takeovers: int = 0,
) -> Run:
    """A run of ``graph`` whose question ``approvers`` approved, and whose approval a pass got
    (its claim marked it handed) before that pass died: what a takeover then finds."""
    first = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, lease_seconds=60)
    run = await first.start(graph=graph, task="x", user=starter, channel="C1")
    (ask,) = run.pending_asks()
    for user in approvers:
        approve = Decision(verdict=Verdict.APPROVE, user=user, at=time.time())
        assert (await first.decide(run_id=run.run_id, ask_key=ask.key, decision=approve)).accepted
    decided = store.load(run.run_id, snapshot=False)
    assert decided is not None and decided.asks[ask.key].status is AskStatus.DECIDED
    return handed_to_a_dead_pass(store, decided, ask.key, takeovers=takeovers)


def handed_to_a_dead_pass(store: RunStore, decided: Run, ask_key: str, *, takeovers: int = 0) -> Run:
    """``decided`` as a pass that was handed ``ask_key``'s answer (its claim marked it) and
    died leaves it: claimed by a holder whose lease has run out."""
    store.claim(
        decided.run_id,
        expected_version=decided.version,
        status=RunStatus.RESUMING,
        owner="dead/1",
        lease_until=time.time() - 1,
        now=time.time(),
        handing=[ask_key],
        takeovers=takeovers,
    )
    loaded = store.load(decided.run_id, snapshot=False)
    assert loaded is not None
    return loaded
