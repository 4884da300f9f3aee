"""Progress: the nodes a pass ran, saved with the run, and the status message brought to them.

Real graphs (``five-steps``: plan → fetch → approve (asks) → build → report) on the real
SQLite store; the publisher records what the live view was shown and what the durable
update showed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine import RunEngine
from engine.progress import NodeProgress, NodeState, Progress, Tracker
from engine.records import Decision, MessageRef, Run, RunStatus, Verdict
from persistence.sqlite import SqliteRunStore
from tests.engine.conftest import RecordingPublisher, RegistrySource


@dataclass
class Live:
    shown: list[tuple[NodeProgress, ...]] = field(default_factory=list)
    outputs: list[tuple[str, str]] = field(default_factory=list)
    message: MessageRef | None = None

    def show(self, nodes: tuple[NodeProgress, ...]) -> None:
        self.shown.append(nodes)

    def output(self, node_id: str, text: str) -> None:
        self.outputs.append((node_id, text))

    async def close(self) -> MessageRef | None:
        return self.message


@dataclass
class ProgressPublisher(RecordingPublisher):
    lives: list[Live] = field(default_factory=list)
    updates: list[Progress] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    fail_updates: int = 0

    def live_progress(self, *, run: Run) -> Live:
        live = Live(message=run.progress.message if run.progress else MessageRef(channel="C1", ts="900.0"))
        self.lives.append(live)
        return live

    async def update_progress(self, *, run: Run) -> MessageRef:
        assert run.progress is not None
        if self.fail_updates:
            self.fail_updates -= 1
            raise RuntimeError("Slack said 500")
        self.events.append(("progress", run.run_id, ",".join(n.state.value for n in run.progress.nodes)))
        self.updates.append(run.progress)
        return run.progress.message or MessageRef(channel="C1", ts="901.0")

    async def run_changed(self, *, run: Run) -> None:
        self.changed.append(run.status.value)


@pytest.fixture(autouse=True)
def quick_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPROVAL_BOT_TEST_NODE_SECONDS", "0.01")


def _engine(store: SqliteRunStore, publisher: ProgressPublisher, **kwargs: object) -> RunEngine:
    return RunEngine(store=store, graphs=RegistrySource(), publisher=publisher, progress=True, **kwargs)  # type: ignore[arg-type]


def states(progress: Progress | None) -> dict[str, str]:
    assert progress is not None
    return {n.node_id: n.state.value for n in progress.nodes}


async def test_a_pass_saves_every_nodes_progress_and_the_message_is_brought_to_it(tmp_path: Path) -> None:
    store, publisher = SqliteRunStore(str(tmp_path / "r.db")), ProgressPublisher()
    engine = _engine(store, publisher)
    run = await engine.start(graph="five-steps", task="billing", user="U1", channel="C1")

    assert run.status is RunStatus.WAITING
    assert states(run.progress) == {
        "plan": "done",
        "fetch": "done",
        "approve": "waiting",
        "build": "pending",
        "report": "pending",
    }
    assert run.progress is not None and run.progress.shown == run.progress.rev >= 1
    assert run.progress.message == MessageRef(channel="C1", ts="900.0")  # the live view's message, saved
    assert all(n.tokens > 0 and n.seconds > 0 for n in run.progress.nodes[:2])  # scripted models report tokens
    live = publisher.lives[0]
    assert [n for n, _ in live.outputs] == ["plan", "fetch"]  # nodes that lead on; the end makes the final message
    assert live.shown[0][0].state is NodeState.PENDING  # the plan shows before its first node runs
    assert len(publisher.updates) == 1 and publisher.changed == ["waiting"]  # views of the run refreshed

    ask = run.pending_asks()[0]
    decided = await engine.decide(
        run_id=run.run_id,
        ask_key=ask.key,
        decision=Decision(verdict=Verdict.APPROVE, user="U2", at=time.time()),
        claim=True,
    )
    done = await engine.follow_up(decided)
    assert done is not None and done.status is RunStatus.COMPLETED
    assert set(states(done.progress).values()) == {"done"}
    assert done.progress is not None and done.progress.shown == done.progress.rev
    assert done.progress.message == MessageRef(channel="C1", ts="900.0")  # one message for the whole run
    kinds = [e[0] for e in publisher.events if e[0] in ("progress", "finished")]
    assert kinds[-2:] == ["finished", "progress"]  # the end is not held up by the pace of edits
    assert "completed" in publisher.changed


async def test_a_failed_update_stays_owed_and_the_sweeper_delivers_it(tmp_path: Path) -> None:
    store, publisher = SqliteRunStore(str(tmp_path / "r.db")), ProgressPublisher(fail_updates=1)
    clock = [time.time()]
    engine = _engine(store, publisher, clock=lambda: clock[0])
    run = await engine.start(graph="five-steps", task="billing", user="U1", channel="C1")
    assert run.progress is not None and run.progress.shown < run.progress.rev
    assert run.owes_slack and run.sweep_at is not None

    clock[0] = run.sweep_at + 1
    await engine.sweep()
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None and stored.progress is not None
    assert stored.progress.shown == stored.progress.rev and not stored.owes_slack
    assert states(publisher.updates[-1]) == states(stored.progress)


async def test_cancelling_a_waiting_run_stops_its_waiting_node(tmp_path: Path) -> None:
    store, publisher = SqliteRunStore(str(tmp_path / "r.db")), ProgressPublisher()
    engine = _engine(store, publisher)
    run = await engine.start(graph="five-steps", task="billing", user="U1", channel="C1")
    await engine.cancel(run_id=run.run_id, user="U1")
    stored = store.load(run.run_id, snapshot=False)
    assert stored is not None and stored.status is RunStatus.CANCELLED
    assert states(stored.progress)["approve"] == "stopped"
    assert stored.progress is not None and stored.progress.shown == stored.progress.rev


async def test_without_progress_nothing_is_followed(tmp_path: Path, publisher: RecordingPublisher) -> None:
    store = SqliteRunStore(str(tmp_path / "r.db"))
    engine = RunEngine(store=store, graphs=RegistrySource(), publisher=publisher)
    run = await engine.start(graph="five-steps", task="billing", user="U1", channel="C1")
    assert run.progress is None and not run.owes_slack


def test_the_tracker_keeps_earlier_passes_and_lists_every_node() -> None:
    now = [100.0]
    saved = Progress(nodes=(NodeProgress(node_id="a", state=NodeState.DONE, seconds=2.0, tokens=5, runs=1),), rev=1)
    tracker = Tracker(saved=saved, node_ids=["a", "b"], clock=lambda: now[0])
    assert tracker.started("b")
    now[0] = 103.0
    assert tracker.stopped("b", status="completed", seconds=None, tokens=7)
    assert not tracker.started("nope")  # a node the graph does not have is ignored
    a, b = tracker.nodes
    assert (a.seconds, a.tokens) == (2.0, 5)
    assert (b.state, b.seconds, b.tokens, b.runs) == (NodeState.DONE, 3.0, 7, 1)


def test_progress_round_trips_through_the_record() -> None:
    progress = Progress(
        nodes=(NodeProgress(node_id="a", state=NodeState.WAITING, seconds=1.5, tokens=3, runs=2),),
        rev=3,
        shown=2,
        message=MessageRef(channel="C1", ts="1.0"),
    )
    assert Progress.from_dict(progress.to_dict()) == progress
    assert progress.owed and not Progress(nodes=progress.nodes, rev=2, shown=2, message=progress.message).owed
