"""The run lifecycle: start, decide exactly once, resume under a lease, recover.

States: ``running → waiting → resuming → waiting | completed | failed | cancelled``.
Every transition is one conditional store write, so any number of processes (server
replicas, Lambda invocations, the sweeper) can handle clicks for the same run:

* ``decide`` is a conditional write on the ask alone: exactly one click wins.
* ``resume`` claims the run at the version it read (``waiting → resuming`` with a
  lease), runs the graph with every decided-but-unused answer and saves at the claimed
  version. A decision made meanwhile bumped the version, so that save fails; the holder
  re-reads, keeps its progress, adopts the new decision and goes round again. Nobody
  waits on a lock and no decision is dropped.
* A holder that dies leaves a lease that expires; the next click or ``sweep`` takes the
  run over from its last saved snapshot, with the decisions that were not yet used.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ParamSpec, TypeVar

from engine.execution import Step, StepStatus, run_pass
from engine.lease import heartbeat, new_token
from engine.notify import Notifier
from engine.ports import GraphSource, Publisher
from engine.settle import merge_concurrent_decisions, obsoleted, settle, stale_answers
from engine.sources import response_for
from persistence.base import (
    AskNotFound,
    AskNotPending,
    RunNotFound,
    RunStore,
    StoreError,
    VerdictNotOffered,
    VersionConflict,
)
from persistence.records import Ask, AskStatus, Decision, Run, RunStatus

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

MAX_ROUNDS = 25  # resumes in a row for one click before the sweeper takes over
SAVE_RETRIES = (0.5, 1.0, 2.0)  # seconds between attempts to save a finished pass


class UnknownGraph(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown graph {name!r}")
        self.name = name


@dataclass(frozen=True, kw_only=True)
class DecideResult:
    """What a click achieved. ``accepted`` is False when someone decided first
    (``ask.decision`` says who) or when the run or ask does not exist (``ask`` None)."""

    accepted: bool
    run: Run | None
    ask: Ask | None


def new_run_id() -> str:
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class RunEngine:
    def __init__(
        self,
        *,
        store: RunStore,
        graphs: GraphSource,
        publisher: Publisher,
        owner: str | None = None,
        lease_seconds: float = 120.0,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = new_run_id,
    ) -> None:
        self._store = store
        self._graphs = graphs
        self._publisher = publisher
        self._notify = Notifier(publisher)
        self.owner = owner or default_owner()
        self._lease = lease_seconds
        self._clock = clock
        self._new_id = new_id
        self.unsaved_ask_wait = 10.0
        self._working = 0

    async def _io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        # Store backends are synchronous (boto3, sqlite3): keep them off the event loop.
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def start(self, *, graph: str, task: str, user: str, channel: str) -> Run:
        """Announce, record and run a new graph run until it pauses or ends.

        Raises UnknownGraph before anything is posted, and ``PublishError`` when the
        run cannot be announced (nothing is recorded then).
        """
        if not self._graphs.exists(graph):
            raise UnknownGraph(graph)
        now = self._clock()
        draft = Run(
            run_id=self._new_id(),
            graph=graph,
            task=task,
            started_by=user,
            status=RunStatus.RUNNING,
            version=0,
            created_at=now,
            updated_at=now,
            lease_owner=new_token(self.owner),
            lease_until=now + self._lease,
        )
        thread = await self._publisher.run_started(run=draft, channel=channel)
        run = draft.evolve(thread=thread)
        await self._io(self._store.create, run)
        saved = await self._advance(run)
        # A click that landed while the first pass was being saved is picked up here.
        return await self.resume(saved.run_id, known=saved) or saved

    async def decide(self, *, run_id: str, ask_key: str, decision: Decision) -> DecideResult:
        """Record a decision if the ask is still open, and replace its card."""
        with self._work():
            return await self._decide(run_id=run_id, ask_key=ask_key, decision=decision)

    async def _decide(self, *, run_id: str, ask_key: str, decision: Decision) -> DecideResult:
        try:
            run = await self._io(self._store.decide, run_id, ask_key, decision, now=self._clock())
        except (AskNotPending, VerdictNotOffered) as lost:
            return DecideResult(accepted=False, run=lost.run, ask=lost.run.asks[ask_key])
        except RunNotFound:
            return DecideResult(accepted=False, run=None, ask=None)
        except AskNotFound:
            return await self._decide_unsaved(run_id=run_id, ask_key=ask_key, decision=decision)
        ask = run.asks[ask_key]
        await self._notify.ask_changed(run, ask)
        return DecideResult(accepted=True, run=run, ask=ask)

    async def _decide_unsaved(self, *, run_id: str, ask_key: str, decision: Decision) -> DecideResult:
        """A click on a card whose ask is not saved yet.

        Cards are posted just before their pass saves (so every saved ask knows its card);
        a quick click can land in between. While the pass holds a live lease, wait for the
        save. If the holder died instead, its card's key is never reused, so the click can
        only fail here, never answer an ask that its clicker did not see.
        """
        deadline = self._clock() + self.unsaved_ask_wait
        while True:
            run = await self._io(self._store.load, run_id, snapshot=False)
            if run is not None and ask_key in run.asks:
                return await self.decide(run_id=run_id, ask_key=ask_key, decision=decision)
            live = run is not None and run.status.leased and (run.lease_until or 0.0) > self._clock()
            if not live or self._clock() >= deadline:
                return DecideResult(accepted=False, run=run, ask=None)
            await asyncio.sleep(0.2)

    async def resume(self, run_id: str, *, known: Run | None = None) -> Run | None:
        """Claim the run if it has work (decisions to use, a dead holder, cards to re-post) and do it.

        ``known`` is a copy the caller just read (e.g. returned by ``decide``), which
        saves a read; a stale copy only costs a failed claim and a re-read.
        """
        run = known if known is not None else await self._io(self._store.load, run_id)
        for _ in range(MAX_ROUNDS):
            if run is None:
                return None
            status = self._claimable_as(run)
            if status is None:
                return run
            token, lease_until = new_token(self.owner), self._clock() + self._lease
            try:
                version = await self._io(
                    self._store.claim,
                    run.run_id,
                    expected_version=run.version,
                    status=status,
                    owner=token,
                    lease_until=lease_until,
                    now=self._clock(),
                )
            except VersionConflict:
                run = await self._io(self._store.load, run.run_id)
                continue
            claimed = run.evolve(version=version, status=status, lease_owner=token, lease_until=lease_until)
            if run.status is RunStatus.WAITING and not run.decided_asks():
                with self._work():
                    run = await self._repost_cards(claimed)
            else:
                run = await self._advance(claimed)
        logger.warning("run %s: still has work after %d rounds; the sweeper will go on", run_id, MAX_ROUNDS)
        return run

    async def sweep(self, *, limit: int = 25) -> list[Run]:
        """Take over runs whose holder died, decisions nobody picked up, cards never posted."""
        finished: list[Run] = []
        for run_id in await self._io(self._store.stuck, now=self._clock(), limit=limit):
            try:
                run = await self.resume(run_id)
            except Exception:  # one broken run must not stop the sweep
                logger.exception("sweep: run %s failed to resume", run_id)
                continue
            if run is not None:
                finished.append(run)
        return finished

    def _claimable_as(self, run: Run) -> RunStatus | None:
        now = self._clock()
        if run.status is RunStatus.WAITING and (run.decided_asks() or (run.sweep_at or now + 1) <= now):
            return RunStatus.RESUMING  # answers to send, or cards to post again
        if run.status.leased and (run.lease_until or 0.0) < now:
            # The holder died: start over from the last snapshot, or from the task.
            return RunStatus.RESUMING if run.snapshot is not None else RunStatus.RUNNING
        return None

    @property
    def busy(self) -> bool:
        """Whether a decision or a pass is under way here; a shutdown waits for it to be saved."""
        return self._working > 0

    @contextlib.contextmanager
    def _work(self) -> Iterator[None]:
        self._working += 1
        try:
            yield
        finally:
            self._working -= 1

    async def _advance(self, run: Run) -> Run:
        """Run one pass for a run this process holds, then save and publish the outcome."""
        with self._work():
            return await self._advance_held(run)

    async def _advance_held(self, run: Run) -> Run:
        decided = run.decided_asks()
        responses = [(a.interrupt_id, response_for(a, a.decision)) for a in decided if a.decision]
        assert run.lease_owner is not None
        async with heartbeat(
            store=self._store, run_id=run.run_id, token=run.lease_owner, lease_seconds=self._lease, clock=self._clock
        ):
            step = await self._pass(run, responses, stale=stale_answers(run))
        return await self._finish_pass(run, step, sent=[a.key for a in decided])

    async def _pass(self, run: Run, responses: list[tuple[str, Any]], *, stale: list[str]) -> Step:
        try:
            graph = self._graphs.build(run.graph)
        except Exception as error:  # the definition itself is broken or gone
            logger.warning("run %s: cannot build graph %s", run.run_id, run.graph, exc_info=True)
            return Step(status=StepStatus.FAILED, snapshot=None, error=f"cannot build graph {run.graph}: {error}")
        return await run_pass(graph=graph, task=run.task, snapshot=run.snapshot, responses=responses, stale=stale)

    async def _repost_cards(self, claimed: Run) -> Run:
        """Post the cards whose first posting failed; nothing else about the run changes."""
        missing = [a for a in claimed.pending_asks() if a.card is None]
        cards = await self._notify.asks_raised(claimed, missing) if missing else {}
        asks = {**claimed.asks, **{k: replace(claimed.asks[k], card=ref) for k, ref in cards.items()}}
        released = claimed.evolve(
            status=RunStatus.WAITING, asks=asks, lease_owner=None, lease_until=None, updated_at=self._clock()
        )
        saved, _ = await self._save(claimed, released, fallback=released)
        return saved

    async def _finish_pass(self, claimed: Run, step: Step, *, sent: list[str]) -> Run:
        outcome = settle(claimed, step, sent=sent, now=self._clock())
        if outcome.new_asks:
            outcome = outcome.with_cards(await self._notify.asks_raised(outcome.run, outcome.new_asks))
        failed = claimed.evolve(
            status=RunStatus.FAILED,
            lease_owner=None,
            lease_until=None,
            error="the run's progress could not be saved; see the bot's logs",
            updated_at=self._clock(),
        )
        saved, landed = await self._save(claimed, outcome.run, fallback=failed)
        for ask in outcome.new_asks:
            if ask.card is not None and ask.key not in saved.asks:
                # The pass was taken over or could not be saved: the cards it posted are void.
                await self._notify.ask_changed(saved, replace(ask, status=AskStatus.OBSOLETE))
        if not landed:
            return saved
        for ask in obsoleted(claimed, saved):
            await self._notify.ask_changed(saved, ask)
        if saved.status.terminal:
            await self._notify.run_finished(saved)
        return saved

    async def _save(self, claimed: Run, target: Run, *, fallback: Run) -> tuple[Run, bool]:
        """Save ``target`` at the claimed version, adopting decisions made meanwhile.

        Returns the run as stored and True, or the run as another process holds it and
        False when this one lost its lease. A store that keeps failing gets ``fallback``
        instead (a small record that ends the run), so the sweeper does not redo the pass
        and its side effects forever.
        """
        expected, attempts = claimed.version, list(SAVE_RETRIES)
        while True:
            try:
                return await self._io(self._store.save, target, expected_version=expected), True
            except VersionConflict:
                fresh = await self._io(self._store.load, claimed.run_id)
                if fresh is None or fresh.lease_owner != claimed.lease_owner:
                    logger.warning("run %s: lost the lease during a pass; dropped its result", claimed.run_id)
                    return (fresh if fresh is not None else claimed), False
                target = merge_concurrent_decisions(claimed=claimed, mine=target, fresh=fresh)
                fallback = merge_concurrent_decisions(claimed=claimed, mine=fallback, fresh=fresh)
                expected = fresh.version
            except StoreError:
                if not attempts:
                    if target is fallback:
                        raise
                    logger.exception("run %s: saving its progress keeps failing; marking it failed", claimed.run_id)
                    target = fallback
                    attempts = list(SAVE_RETRIES)
                    continue
                logger.warning("run %s: saving failed; retrying", claimed.run_id, exc_info=True)
                await asyncio.sleep(attempts.pop(0))
