"""The run lifecycle: start, decide exactly once, resume under a lease, recover.

States: ``running → waiting → resuming → waiting | completed | failed | rejected``.
Every transition is one conditional store write, so any number of processes (server
replicas, Lambda invocations, the sweeper) can handle clicks for the same run:

* ``decide`` is a conditional write on the ask alone: exactly one click wins. When
  nobody holds the run, the same write claims it for the clicker's process.
* A holder runs the graph with every decided-but-unused answer and saves at the version
  it claimed. A decision made meanwhile bumped the version, so that save fails; the
  holder re-reads, keeps its progress, adopts the new decision and goes round again.
* Durable before visible: the save comes first, then the cards, card updates and final
  message it implies (``engine.delivery``), then one small write recording what Slack
  accepted. A crash anywhere leaves the store knowing what is owed.
* A holder that dies leaves a lease that expires; the next click or ``sweep`` takes the
  run over from its last saved state, with the decisions that were not yet used.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, ParamSpec, TypeVar, cast

from engine import audit, metrics, previews, rule_choice, takeover, tracing
from engine.audit import AuditEvent
from engine.ballot import Ballot
from engine.brake import CANCEL_CHECK_SECONDS, Brake
from engine.crash import crash_point
from engine.deadlines import expired_asks, expiry_decision, with_notices
from engine.delivery import Courier
from engine.execution import Raised, Step, StepStatus, progress_watcher, run_pass
from engine.ids import default_owner, new_run_id
from engine.invariants import enforced, violations
from engine.lease import heartbeat, new_token
from engine.log_context import about_run
from engine.oversight import Cancelled, Oversight, groups_of
from engine.policy import DEFAULT_EXPIRES_AFTER, AskRules, Directory, Policy, may_start
from engine.ports import (
    FINAL,
    DecideResult,
    GraphSource,
    ProgressPublisher,
    Publisher,
    PublishError,
    PublishUnconfirmed,
    StartLimited,
    StartRefused,
    UnknownGraph,
)
from engine.progress import Tracker, saved_progress
from engine.records import STATE_REFRESH_MARGIN_SECONDS, Decision, MessageRef, Run, RunStatus
from engine.saving import Saver, cancelled_record, failed_record
from engine.settle import bounded_reason, settle, stale_answers
from engine.sources import details_of, response_for
from engine.start_limits import StartLimits, check_start
from engine.store import (
    Lease,
    RunStore,
    StoreError,
    VersionConflict,
)
from engine.threads import in_thread
from engine.transitions import Cause, run_to

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

PURGE_EVERY = 3600.0  # seconds between deletions of finished runs past their retention
MAX_ROUNDS = 25  # resumes in a row for one click before the sweeper takes over
MAX_AUTO_ROUNDS = 10  # passes in a row sending a policy rule's own answers before the run waits


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
        directory: Directory | None = None,
        default_expires_after: float = DEFAULT_EXPIRES_AFTER,
        ask_alarm_after: float | None = None,
        retention_seconds: float | None = None,
        progress: bool = False,
        cancel_check_seconds: float | None = None,
        start_limits: StartLimits | None = None,
    ) -> None:
        self._store = store
        self._start_limits = start_limits or StartLimits()
        self._graphs = graphs
        self._publisher = publisher
        # Through self, so that a clock swapped later (tests moving time on) reaches them too.
        self._courier = Courier(
            publisher=publisher,
            store=store,
            clock=lambda: self._clock(),
            progress=cast("ProgressPublisher", publisher) if hasattr(publisher, "update_progress") else None,
        )
        self._saver = Saver(store=store, clock=lambda: self._clock())
        self._ballot = Ballot(store=store, directory=directory, clock=lambda: self._clock())
        self._oversight = Oversight(
            store=store, courier=self._courier, directory=directory, clock=lambda: self._clock(), policy=self._policy
        )
        self.owner = owner or default_owner()
        self._lease = lease_seconds
        self._clock = clock
        self._new_id = new_id
        self._working = 0
        self._directory = directory
        self._default_wait = default_expires_after
        # ASK_ALARM_AFTER: every ask raised gets a reminder at that age (``Policy.rules_for``).
        self._alarm_after = ask_alarm_after
        self._retention = retention_seconds
        self._purged_at = -math.inf
        # Live progress needs a publisher that can show it (``ports.ProgressPublisher``).
        self._progress = cast("ProgressPublisher", publisher) if progress else None
        # How often a pass may read the store for a cancel (None: ``CANCEL_CHECK_SECONDS``).
        self._cancel_check = cancel_check_seconds

    async def _io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        # Store backends are synchronous (boto3, sqlite3): keep them off the event loop.
        return await in_thread(fn, *args, **kwargs)

    @about_run
    async def start(self, *, graph: str, task: str, user: str, channel: str, run_id: str | None = None) -> Run:
        """Record, announce and run a new graph run until it pauses or ends.

        Raises UnknownGraph, StartRefused (the graph's ``starters`` do not include
        ``user``) or StartLimited (``user`` has started their share of runs:
        ``engine.start_limits``) before anything is recorded, ``StoreError`` when the run
        cannot be recorded (nothing is posted then; ``RunExists`` when ``run_id`` names a
        run already started, which makes a start delivered twice start one run), and
        ``PublishError`` when Slack refuses the announcement (the run is then recorded as
        failed, and nothing else is posted). When Slack gives no verdict
        (``PublishUnconfirmed``) the run goes on and its announcement stays owed; the run
        returned then has no thread unless the message was found.
        """
        if not self._graphs.exists(graph):
            raise UnknownGraph(graph)
        policy = self._graphs.policy(graph)
        if policy.starters is not None:
            member_of = await groups_of(self._directory, user, policy.starters)
            if not may_start(policy, user, member_of=member_of):
                refused = AuditEvent(at=self._clock(), kind="refused_start", by=user, text=graph)
                audit.log(run_id or "-", [refused])
                raise StartRefused(graph=graph, allowed=policy.starters)
        run_id = run_id or self._new_id()
        if self._start_limits.any:  # the start takes its place in the person's book; a refusal records nothing
            limits, now = self._start_limits, self._clock()
            try:
                await self._io(check_start, self._store, limits, user=user, run_id=run_id, now=now)
            except StartLimited as limited:
                refused = AuditEvent(at=self._clock(), kind="refused_start", by=user, text=f"{graph}: {limited}")
                audit.log(run_id, [refused])
                raise
        now = self._clock()
        run = Run(
            audit=(AuditEvent(at=now, kind="started", by=user, text=f"{graph}: {task}"),),
            run_id=run_id,
            graph=graph,
            task=task,
            started_by=user,
            channel=channel,
            status=RunStatus.RUNNING,
            version=0,
            created_at=now,
            updated_at=now,
            lease_owner=new_token(self.owner),
            lease_until=now + self._lease,
        )
        await self._io(self._store.create, run)
        audit.log(run.run_id, run.audit, run=run)
        with self._work():
            try:
                thread = await self._publisher.run_started(run=run, channel=channel)
            except PublishUnconfirmed as unconfirmed:
                # Slack gave no verdict: the announcement may be in the channel (an answer
                # after the client's timeout). Failing the run would leave it there under a
                # false "could not post". The pass looks for it by its metadata first and
                # posts it only if absent (``_announced``); the delivery keeps trying after.
                logger.warning("run %s: Slack did not confirm its announcement (%s)", run.run_id, unconfirmed)
                return await self._hold(run)
            except Exception as error:
                reason = str(error) if isinstance(error, PublishError) else type(error).__name__
                ended = failed_record(run, now=self._clock(), error=f"the run could not be announced: {reason}")
                ended = ended.evolve(channel=None)  # nothing to post, ever: the requester is told now
                with contextlib.suppress(StoreError):  # else its lease expires and the sweeper ends it
                    saved = await self._io(self._store.save, ended, expected_version=run.version)
                    audit.log(saved.run_id, [e for e in saved.audit if e not in run.audit], run=saved)
                raise error if isinstance(error, PublishError) else PublishError(reason) from error
            return await self._hold(run.evolve(thread=thread))

    @about_run
    async def decide(
        self, *, run_id: str, ask_key: str, decision: Decision, claim: bool = False, card: MessageRef | None = None
    ) -> DecideResult:
        """Record a decision if the ask is still open; with ``claim``, take the run if free.

        Nothing about Slack happens here: the card is updated by ``follow_up`` (or by
        whoever resumes the run). A caller that claims must call ``follow_up``: the
        claim is a lease that only this process's ``follow_up`` uses before it expires.
        """
        lease = Lease(owner=new_token(self.owner), until=self._clock() + self._lease) if claim else None
        with self._work():
            return await self._ballot.record(run_id=run_id, ask_key=ask_key, decision=decision, claim=lease, card=card)

    async def follow_up(self, result: DecideResult) -> Run | None:
        """After an accepted decision: resume the run if the decision claimed it, else
        update the card and leave the run to whoever holds it."""
        if not result.accepted or result.run is None:
            return result.run
        if result.claimed:
            run = await self._hold(result.run)
            return await self.resume(run.run_id, known=run)
        with self._work():
            await self._courier.deliver(result.run)
        return await self.resume(result.run.run_id)

    @about_run
    async def pick_up(self, run_id: str) -> Run | None:
        """After a decision recorded elsewhere (a modal's ack): resume the run if it is
        free, else bring its cards up to date and leave it to its holder."""
        run = await self._io(self._store.load, run_id, snapshot=False)
        if run is None:
            return None
        if self._claimable_as(run) is None:
            with self._work():
                run = await self._courier.deliver(run)
        return await self.resume(run_id, known=run)

    @about_run
    async def resume(self, run_id: str, *, known: Run | None = None) -> Run | None:
        """Claim the run if it has work (decisions to use, a dead holder, state to refresh) and do it.

        ``known`` is a copy the caller just read, which saves a read; a stale copy only
        costs a failed claim and a re-read.
        """
        run = known if known is not None else await self._io(self._store.load, run_id, snapshot=False)
        for _ in range(MAX_ROUNDS):
            if run is None:
                return None
            status = self._claimable_as(run)
            if status is None:
                return run
            token, lease_until = new_token(self.owner), self._clock() + self._lease
            dead_holder = takeover.is_takeover(run, now=self._clock())
            handing, takeovers = takeover.to_hand(run), run.takeovers + 1 if dead_holder else None
            try:
                if dead_holder and takeover.over_cap(run):  # taken over too often: fail closed instead
                    return await self._stop(run)
                version = await self._io(
                    self._store.claim,
                    run.run_id,
                    expected_version=run.version,
                    status=status,
                    owner=token,
                    lease_until=lease_until,
                    now=self._clock(),
                    handing=handing,
                    takeovers=takeovers,
                )
            except VersionConflict:
                run = await self._io(self._store.load, run.run_id, snapshot=False)
                continue
            refresh = run.status is RunStatus.WAITING and not run.decided_asks()
            cause = Cause.TAKEOVER if run.status.leased else Cause.SWEEPER
            claimed = run_to(run, status, cause=cause, version=version, lease_owner=token, lease_until=lease_until)
            claimed = takeover.claimed_record(claimed, handing=handing, takeovers=takeovers)
            crash_point("claimed")
            run = await self._hold(claimed, refresh_only=refresh)
        logger.warning("run %s: still has work after %d rounds; the sweeper will go on", run_id, MAX_ROUNDS)
        return run

    async def sweep(self, *, limit: int = 25) -> list[Run]:
        """Take over runs whose holder died, pick up decisions, deliver what Slack is owed."""
        swept: list[Run] = []
        for run_id in await self.due(limit=limit):
            try:
                run = await self.sweep_run(run_id)
            except Exception:  # one broken run must not stop the sweep
                logger.exception("sweep: run %s could not be handled", run_id)
                continue
            if run is not None:
                swept.append(run)
        await self._purge()
        metrics.swept()
        return swept

    async def _purge(self) -> None:
        """Delete finished runs past their retention, at most hourly, on stores that need
        it (DynamoDB lets its TTL do it, free of charge)."""
        purge = getattr(self._store, "purge", None)
        now = self._clock()
        if purge is None or self._retention is None or now - self._purged_at < PURGE_EVERY:
            return
        self._purged_at = now
        try:
            gone = await self._io(purge, now=now, older_than=self._retention)
        except StoreError:
            logger.warning("sweep: could not delete finished runs past their retention", exc_info=True)
            return
        if gone:
            logger.info("sweep: deleted %d finished runs past their retention", gone)

    async def due(self, *, limit: int = 25) -> list[str]:
        """The runs a sweep should look at now, oldest first (one query of the sweep index)."""
        return await self._io(self._store.stuck, now=self._clock(), limit=limit)

    @about_run
    async def sweep_run(self, run_id: str) -> Run | None:
        """One run of a sweep: resume it if it has work, else deliver what Slack is owed.

        Safe to call for any run, any number of times, from any number of processes: a
        run someone holds is left alone, and every change is a conditional write.
        """
        run = await self._io(self._store.load, run_id, snapshot=False)
        metrics.surveyed([run] if run is not None else [], now=self._clock())
        if run is not None and not run.status.leased:
            run = await self._sound(run)
        if run is not None and run.status is RunStatus.WAITING and run.lease_owner is None:
            run = await self._deadlines(run)
        if run is not None and self._claimable_as(run) is not None:
            return await self.resume(run_id, known=run)
        # Deliver only a debt that is due: one owed for less than its grace is being paid
        # by the process that made it (another sweeper that just claimed a reminder, say),
        # and paying it too would post it twice while that process waits out a 429.
        now = self._clock()
        due = run is not None and run.sweep_at is not None and run.sweep_at <= now
        if run is not None and due and not (run.status.leased and (run.lease_until or 0.0) >= now):
            with self._work():
                return await self._courier.deliver(run, sweeping=True)
        return run

    async def _sound(self, run: Run) -> Run | None:
        """The sweeper's look at the lifecycle's invariants (``engine.invariants``): a record
        that breaks one is repaired (or, in strict mode, raises), saved at the version read,
        and what the repair owes Slack (closed cards, the final message) is delivered."""
        if not violations(run):
            return run
        fixed = enforced(run, now=self._clock(), where="a sweep")
        try:
            fixed = fixed.evolve(updated_at=self._clock())
            saved = await self._io(self._store.save, fixed, expected_version=run.version)
        except VersionConflict:  # changed meanwhile: whoever changed it saved it through the checks
            return await self._io(self._store.load, run.run_id, snapshot=False)
        audit.log(run.run_id, [e for e in saved.audit if e not in run.audit], run=saved)
        with self._work():
            return await self._courier.deliver(saved)

    async def _deadlines(self, run: Run) -> Run | None:
        """Expire what nobody decided in time; claim the reminders and escalations due.

        An expiry is a decision like any other (exactly one sweeper records it); the run
        is then resumed by the caller like any run with a decision. Notices are claimed
        by a save at the version read (a racing sweeper's save fails and it re-reads),
        then posted from the record.
        """
        now = self._clock()
        expired = expired_asks(run, now=now)
        for ask in expired:
            await self.decide(run_id=run.run_id, ask_key=ask.key, decision=expiry_decision(ask, now=now))
        if expired:
            return await self._io(self._store.load, run.run_id, snapshot=False)
        claimed = with_notices(run, now=now)
        if claimed is None:
            return run
        try:
            saved = await self._io(self._store.save, claimed, expected_version=run.version)
        except VersionConflict:  # another sweeper claimed them, or a click landed: look again
            return await self._io(self._store.load, run.run_id, snapshot=False)
        crash_point("notices_claimed")
        audit.log(run.run_id, [e for e in saved.audit if e not in run.audit], run=saved)
        with self._work():
            return await self._courier.deliver(saved, unposted={"notices"})

    @about_run
    async def cancel(self, *, run_id: str, user: str, channel: str | None = None) -> Cancelled:
        """End the run for ``user`` if they started it or may decide its asks (``engine.oversight``)."""
        with self._work():
            return await self._oversight.cancel(run_id=run_id, user=user, channel=channel)

    async def may_oversee(self, run: Run, user: str, *, channel: str | None = None) -> tuple[bool, tuple[str, ...]]:
        """Whether ``user`` may cancel ``run`` and read its audit trail, and, when not,
        who may besides whoever started it."""
        return await self._oversight.may_oversee(run, user, channel=channel)

    def _claimable_as(self, run: Run) -> RunStatus | None:
        now = self._clock()
        if run.status is RunStatus.WAITING and run.lease_owner is None:
            expires = (run.state_ref or {}).get("expires_at")
            refresh_due = expires is not None and float(expires) - STATE_REFRESH_MARGIN_SECONDS <= now
            if run.decided_asks() or refresh_due:
                return RunStatus.RESUMING  # answers to send, or an expiring state to rewrite
        if run.status.leased and (run.lease_until or 0.0) < now:
            # The holder died: start over from the last saved state, or from the task.
            return RunStatus.RESUMING if run.state_ref is not None else RunStatus.RUNNING
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

    @about_run
    async def _hold(self, run: Run, *, refresh_only: bool = False, auto_rounds: int = 0) -> Run:
        """Everything a process does while it holds a run: bring decided cards up to date,
        run one pass, save; then, with the lease released, deliver what the save implies.

        A pass whose new asks a policy rule decided (``AskPolicy.auto``) saves them decided,
        keeping its lease (the one extra write), posts one line per ask naming the rule, and
        holds on for another pass that sends those answers (at most ``MAX_AUTO_ROUNDS`` in a
        row; then the run waits and is resumed like any run with a decision)."""
        assert run.lease_owner is not None and run.lease_until is not None
        if run.lease_until < self._clock():
            run, taken = await self._claimed_again(run)
            if not taken:
                return run  # taken over, or changed meanwhile: left to whoever has it now
        assert run.lease_owner is not None and run.lease_until is not None
        with self._work():
            async with heartbeat(
                store=self._store,
                run_id=run.run_id,
                token=run.lease_owner,
                until=run.lease_until,
                lease_seconds=self._lease,
                clock=self._clock,
            ) as beat:
                run = await self._announced(await self._courier.card_updates(run))
                if run.snapshot is None and run.state_ref is not None:
                    run = run.evolve(snapshot=await self._io(self._store.fetch_state, run))
                unposted: set[str] = set()
                traced = tracing.PassTrace()
                if run.cancelled_by:  # cancelled while its holder died: end it, run nothing
                    target = cancelled_record(run, now=self._clock())
                    unposted = {FINAL}
                elif refresh_only:  # nothing to run: write the state anew (new TTL), release
                    target = run_to(
                        run, RunStatus.WAITING, cause=Cause.PASS, lease_owner=None, lease_until=None, state_ref=None
                    )
                elif (reviewed := self._reviewed(run)).new_asks and not takeover.sendable(reviewed.run):
                    # Only approvals a dead pass got: ask about them again, run nothing.
                    now = self._clock()
                    target, unposted = takeover.asked_again(reviewed, now=now), {a.key for a in reviewed.new_asks}
                else:
                    policy = self._policy(run.graph)
                    decided = takeover.sendable(reviewed.run)
                    # The approval binds to what its card said will happen: checked again now.
                    voided = await in_thread(previews.changed, decided, policy.previews, details=details_of)
                    # An Edit is judged by the rule its edited input falls under: moved, not sent.
                    moved = await in_thread(
                        rule_choice.moved_by_edit,
                        decided,
                        policy,
                        now=self._clock(),
                        default_expires_after=self._default_wait,
                    )
                    decided = [a for a in decided if a.key not in voided and a.key not in moved]
                    responses = [
                        (a.interrupt_id, response_for(a, a.decision, run_id=run.run_id)) for a in decided if a.decision
                    ]
                    stale = stale_answers(reviewed.run, unsent=[*voided, *moved])
                    # Approvals the graph holds for a call that runs now: bound to their preview too.
                    stale += await in_thread(
                        previews.rebound,
                        list(reviewed.run.asks.values()),
                        decided,
                        policy.previews,
                        details=details_of,
                    )
                    with (
                        tracing.pass_span(run=run, answering=decided) as traced,
                        metrics.timed(metrics.PASS_DURATION, graph=run.graph),
                    ):
                        step = await self._pass(run, responses, stale=stale)
                        traced.ended(step.status.value)
                    # Computed on what the ask will record (its reason cut like the card's), so that the
                    # check before the hand-off, which reads the record, computes the same preview.
                    shown = await in_thread(
                        previews.previews_for, step.raised, policy.previews, details=_recorded_details
                    )
                    now = self._clock()
                    outcome = settle(
                        reviewed.run,  # with any "may have acted" asks: a re-raised interrupt finds its own
                        step,
                        sent=[a.key for a in decided],
                        now=now,
                        stale=stale,
                        rules_for=lambda raised: self._rules(policy, raised, now=now),
                        go_on=auto_rounds < MAX_AUTO_ROUNDS,
                        voided=voided,
                        previews=shown,
                        moved=moved,
                        by_content=lambda raised: policy.by_content(name=raised.name, tool=raised.gated_tool),
                        trace=traced.context,
                    )
                    target = outcome.run.evolve(takeovers=0)
                    if target.status.leased:  # a rule decided: the lease is kept for the next pass
                        target = target.evolve(lease_until=self._clock() + self._lease)
                    if step.nodes or run.progress is not None:
                        # (A pass that followed nothing, say one that could not build its
                        # graph, still settles the saved nodes, so the message cannot stay
                        # "waiting" on a run that ended.)
                        waiting = {a.node_id for a in target.pending_asks() if a.node_id is not None}
                        nodes = step.nodes or (run.progress.nodes if run.progress else ())
                        target = target.evolve(
                            progress=saved_progress(
                                run.progress, nodes, step.status_message, waiting=waiting, status=target.status
                            )
                        )
                    # Nobody can have posted these: the asks are new, the end is this pass's.
                    unposted = {a.key for a in outcome.new_asks} | ({FINAL} if target.status.terminal else set())
                    unposted |= {a.key for a in reviewed.new_asks}
                crash_point("passed")
                saved, landed, adopted = await self._saver.save(run, target, beat=beat)
            crash_point("saved")
            if not landed:
                return saved
            # Only this pass's events: a click's that landed meanwhile was logged (and counted) by it.
            audit.log(saved.run_id, [e for e in saved.audit if e not in run.audit and e.id not in adopted], run=saved)
            tracing.asks_finished(run, saved, by=traced)
            if saved.status.leased and saved.lease_owner == run.lease_owner:
                going_on = saved.evolve(snapshot=saved.snapshot or target.snapshot)
                going_on = await self._courier.auto_lines(going_on, unposted=unposted)
                return await self._hold(going_on, auto_rounds=auto_rounds + 1)
            delivered = await self._courier.deliver(saved, unposted=unposted)
            self._ballot.remember(delivered)  # its cards' first clicks: a write shaped right, not blind
            return delivered

    async def _claimed_again(self, run: Run) -> tuple[Run, bool]:
        """A claim that ran out before its pass began (a process stalled between a click and
        its follow-up), taken again if nothing changed since: the version it made proves
        nobody took the run over, so the answers it was handed are handed anew to the new
        claim (no "may have acted" card for a pass that never ran). Else the run as stored,
        left to whoever holds it now (a lease that ran out is never renewed)."""
        token, until = new_token(self.owner), self._clock() + self._lease
        handing = [a.key for a in run.decided_asks() if a.handed == run.lease_owner]
        try:
            version = await self._io(
                self._store.claim,
                run.run_id,
                expected_version=run.version,
                status=run.status,
                owner=token,
                lease_until=until,
                now=self._clock(),
                handing=handing,
            )
        except VersionConflict:
            logger.warning("run %s: its claim ran out before the pass began; left to its taker", run.run_id)
            return (await self._io(self._store.load, run.run_id, snapshot=False) or run), False
        claimed = run_to(run, run.status, cause=Cause.TAKEOVER, version=version, lease_owner=token, lease_until=until)
        return takeover.claimed_record(claimed, handing=handing, takeovers=None), True

    def _reviewed(self, run: Run) -> takeover.Review:
        """``run`` with what a dead pass got and must not get again asked anew (``engine.takeover``)."""
        return takeover.review(run, now=self._clock(), idempotent=self._policy(run.graph).idempotent)

    async def _stop(self, run: Run) -> Run:
        """Fail ``run`` closed after too many takeovers (conditional on the version read)."""
        stopped = takeover.stopped_record(run, now=self._clock())
        saved = await self._io(self._store.save, stopped, expected_version=run.version)
        logger.error("run %s: %s", run.run_id, saved.error)
        audit.log(saved.run_id, [e for e in saved.audit if e not in run.audit], run=saved)
        tracing.asks_finished(run, saved)
        with self._work():
            return await self._courier.deliver(saved, unposted={FINAL})

    def _policy(self, graph: str) -> Policy:
        try:
            return self._graphs.policy(graph)
        except Exception:  # a definition gone since the run started: the default terms
            logger.warning("graph %s: its policy could not be read; its asks get the default terms", graph)
            return Policy()

    def _rules(self, policy: Policy, raised: Raised, *, now: float) -> AskRules:
        # A gated call is judged by its tool's rules and its input as it will run, also when
        # it is too big to keep on the card (a padded call must not fall to the graph's terms).
        details = raised.tool_input if isinstance(raised.tool_input, dict) else details_of(raised)
        return policy.rules_for(
            name=raised.name,
            tool=raised.gated_tool,
            now=now,
            default_expires_after=self._default_wait,
            details=details,
            alarm_after=self._alarm_after,
        )

    async def _announced(self, run: Run) -> Run:
        """A takeover of a first pass that died before saving its thread: find or post it."""
        if run.thread is not None or run.channel is None:
            return run
        thread = await self._courier.find(run, "") or await self._courier.announce(run)
        return run.evolve(thread=thread) if thread is not None else run

    def _brake(self, run: Run) -> Brake:
        """The cancel check of one pass: a read of the run's cancel mark, when a node is due one.

        The claim (or the start) that began the pass is its first look: it wrote the record
        when the lease was taken (``lease_until`` minus the lease's length).
        """

        async def look() -> str | None:
            fresh = await self._io(self._store.load, run.run_id, snapshot=False)
            return fresh.cancelled_by if fresh is not None else None

        claimed_at = (run.lease_until - self._lease) if run.lease_until is not None else None
        every = CANCEL_CHECK_SECONDS if self._cancel_check is None else self._cancel_check
        return Brake(look=look, every=every, clock=self._clock, last=claimed_at)

    async def _pass(self, run: Run, responses: list[tuple[str, Any]], *, stale: list[str]) -> Step:
        try:
            graph = self._graphs.build(run.graph)
        except Exception as error:  # the definition itself is broken or gone
            logger.warning("run %s: cannot build graph %s", run.run_id, run.graph, exc_info=True)
            return Step(status=StepStatus.FAILED, snapshot=None, error=f"cannot build graph {run.graph}: {error}")
        about = f"run {run.run_id} (graph {run.graph})"
        brake = self._brake(run)
        if self._progress is None:
            return await run_pass(
                graph=graph,
                task=run.task,
                snapshot=run.snapshot,
                responses=responses,
                stale=stale,
                about=about,
                brake=brake,
            )
        live = self._progress.live_progress(run=run)
        tracker = Tracker(saved=run.progress, node_ids=list(graph.nodes), clock=self._clock)
        watch = progress_watcher(graph, tracker, show=lambda: live.show(tracker.nodes), output=live.output)
        if run.progress is None:
            live.show(tracker.nodes)  # the plan, before its first node runs
        step: Step | None = None
        try:
            step = await run_pass(
                graph=graph,
                task=run.task,
                snapshot=run.snapshot,
                responses=responses,
                stale=stale,
                about=about,
                watch=watch,
                brake=brake,
            )
        finally:
            tracker.ended(failed=step is None or step.status is StepStatus.FAILED)
            live.show(tracker.nodes)
            message = await live.close()
        assert step is not None  # run_pass reports every failure as a step
        return replace(step, nodes=tracker.nodes, status_message=message)


def _recorded_details(raised: Raised) -> Any:
    """What a preview gets about a raised interrupt: its details as its ask will record them."""
    return details_of(replace(raised, reason=bounded_reason(raised.reason)))
