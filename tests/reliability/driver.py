"""Drives runs through the real bot the way people would, under a schedule of faults, and keeps the record.

Every request the "people" send (slash command, click, modal submit) is timed, every
click the bot acked without saying "Nothing was recorded" is remembered as a decision
that must end up in the store and in the graph, and every crash is made the way the
e2e crash tests make it: ``APPROVAL_BOT_CRASH_AT`` for the named points of a first pass,
a SIGKILL from the fault proxy while the card's reference is written, or a SIGKILL from
outside at a random moment after a click.

``FAULT_WORKERS=N`` serves every bot with ``--workers N`` (``bot/workers.py``). A crash
point then kills the worker that reaches it: the bot restarts it and hands it again what
it had not finished, and the driver stops that bot (SIGTERM) and starts a fresh one, as
after a bot that died. The proxy's kill and the kill mid-resume kill the host: the
workers and the serving process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from engine.records import AskStatus, Run
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import Backend, BotProcess, StartBot, cards, live_buttons, run_of
from tests.e2e.test_workers import worker_pids
from tests.reliability.schedule import (
    CARD_WRITE,
    EDITED_REPLICAS,
    FIRST_PASS_CRASHES,
    MID_RESUME,
    RunPlan,
    arm_slack,
    arm_store,
)
from tests.support.faults import FaultProxy

NOT_RECORDED = "Nothing was recorded"
FAILED_START = "failed; the bot's logs say why"
STARTER = "U0STARTER"
LABELS = {"approve": "Approve", "reject": "Reject", "reply": "Reply", "edit": "Edit"}


@dataclass(frozen=True)
class Click:
    """A decision the bot acked as recorded: it must be in the store and must have reached the graph."""

    run: int
    key: str
    user: str
    verdict: str


@dataclass
class Sweep:
    """One sweep of runs against one bot at a time (restarted after every crash)."""

    slack: LocalSlack
    backend: Backend
    start_bot: StartBot
    user_for: Callable[[BotProcess], LocalSlackUser]
    proxy: FaultProxy | None
    run_seconds: float
    bot: BotProcess | None = None
    acks: list[float] = field(default_factory=list)
    clicks: list[Click] = field(default_factory=list)
    crashes: Counter[str] = field(default_factory=Counter)
    run_ids: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unplanned_deaths: list[str] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    """By channel: slash commands the bot answered with "Starting ... failed" (store unreachable), retried."""
    workers: int = field(default_factory=lambda: int(os.environ.get("FAULT_WORKERS") or 0))

    async def start(self, **extra: str) -> BotProcess:
        began = time.monotonic()
        try:
            return await self._start(**extra)
        finally:
            print(f"  bot up in {time.monotonic() - began:.1f} s", flush=True)

    async def _start(self, **extra: str) -> BotProcess:
        env = {"GRAPH_MODULES": "tests.support.graphs", "DELIVERY_GRACE_SECONDS": "1", **extra}
        env |= {"MAX_STARTS_PER_MINUTE": "0", "MAX_WAITING_RUNS": "0"}  # one person starts every run here
        if self.proxy is not None:
            env |= self.proxy.env()
        workers = ["--workers", str(self.workers)] if self.workers else []
        return await self.start_bot(backend=self.backend, extra_env=env, args=["--sweep-seconds", "1", *workers])

    @staticmethod
    def kill_host(bot: BotProcess) -> None:
        """SIGKILL the bot and its workers, if any: a host that died."""
        for pids in worker_pids(bot).values():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            bot.process.send_signal(signal.SIGKILL)

    @staticmethod
    def worker_killed(bot: BotProcess) -> bool:
        return "exited with signal SIGKILL" in bot.output()

    async def ensure_bot(self) -> BotProcess:
        if self.bot is not None and self.bot.process.poll() is not None:
            # Every planned kill replaces ``self.bot`` at once: a dead one here died of a bug.
            tail = self.bot.output()[-2000:]
            self.unplanned_deaths.append(f"the bot died unplanned (exit {self.bot.process.returncode}): {tail}")
        if self.bot is None or self.bot.process.poll() is not None:
            self.bot = await self.start()
        return self.bot

    async def timed(self, request: Awaitable[Any]) -> Any:
        began = time.monotonic()
        answer = await request
        self.acks.append(time.monotonic() - began)
        return answer

    # -- one run -----------------------------------------------------------------------------

    async def run(self, plan: RunPlan) -> None:
        began = time.monotonic()
        print(plan.describe(), flush=True)
        try:
            await self._run(plan)
        finally:
            print(f"  run {plan.index} driven in {time.monotonic() - began:.1f} s", flush=True)

    async def _run(self, plan: RunPlan) -> None:
        if self.proxy is not None:
            arm_store(plan, self.proxy)
        arm_slack(plan, self.slack)
        text = f"run {plan.case.name} {plan.tag}"
        if plan.crash in FIRST_PASS_CRASHES or plan.crash == CARD_WRITE:
            await self._start_and_die(plan, text)
        else:
            await self._slash(plan, text)
        store = self.backend.open_store()
        run_id = await self._run_id(plan, store)
        for _ in range(3):  # the bot said the start failed (nothing recorded): try again, as a person would
            if run_id is not None or not self._start_failed(plan):
                break
            self.refused[plan.channel] += 1
            await self._slash(plan, text)
            run_id = await self._run_id(plan, store)
        if run_id is None:
            return
        self.run_ids[plan.index] = run_id
        await self._decide(plan, store, run_id)

    async def _slash(self, plan: RunPlan, text: str) -> None:
        bot = await self.ensure_bot()
        await self.timed(self.user_for(bot).slash_command(text=text, user_id=STARTER, channel_id=plan.channel))

    def _start_failed(self, plan: RunPlan) -> bool:
        """Whether the starter was told, in the run's channel, that starting failed (and nothing started)."""
        told = [r for r in self.slack.responses if r.get("user") == STARTER and r.get("channel") == plan.channel]
        return sum(FAILED_START in str(r.get("body")) for r in told) > self.refused[plan.channel]

    async def _start_and_die(self, plan: RunPlan, text: str) -> None:
        """Start the run in a bot that dies at the plan's crash point, then bring up a healthy one."""
        if self.bot is not None:
            await self.bot.stop()
        if plan.crash == CARD_WRITE:
            bot = await self.start()
            assert self.proxy is not None
            self.proxy.lose_response(
                operations={"UpdateItem"},
                when=lambda body: "card" in (body.get("ExpressionAttributeNames") or {}).values(),
                then=lambda: self.kill_host(bot),
            )
        else:
            bot = await self.start(APPROVAL_BOT_CRASH_AT=str(plan.crash))
        self.bot = bot
        # The first pass runs next to the command's ack: the bot may die before the ack is out.
        with contextlib.suppress(aiohttp.ClientError):
            await self.user_for(bot).slash_command(text=text, user_id=STARTER, channel_id=plan.channel)
        deadline = time.monotonic() + 30
        while bot.process.poll() is None and not self.worker_killed(bot) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if bot.process.poll() is None and self.worker_killed(bot):  # a worker died there; the bot lived on
            self.crashes[str(plan.crash)] += 1
            await bot.stop()
        elif bot.process.returncode == -signal.SIGKILL:
            self.crashes[str(plan.crash)] += 1
        else:
            self.notes.append(f"run {plan.index}: the crash point {plan.crash} was not reached")
            await bot.stop()
        self.bot = await self.start()

    async def _run_id(self, plan: RunPlan, store: Any) -> str | None:
        deadline = time.monotonic() + self.run_seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                return run_of(store, self.slack, plan.channel).run_id
            if self._start_failed(plan):
                return None
            await asyncio.sleep(0.1)
        self.notes.append(f"run {plan.index}: no run was announced in {plan.channel}")
        return None

    async def _decide(self, plan: RunPlan, store: Any, run_id: str) -> None:
        """Click the plan's decision on every live card of the run until it ends (or time is up)."""
        deadline = time.monotonic() + self.run_seconds
        voted: set[tuple[str, str]] = set()
        while time.monotonic() < deadline:
            run: Run | None = store.load(run_id, snapshot=False)
            if run is None or run.status.terminal:
                return
            for ask in run.asks.values():
                if ask.status is not AskStatus.PENDING:
                    continue
                card = self._live_card(plan.channel, ask.key)
                if card is None:
                    continue
                user = self._clicker(plan, ask.key, voted)
                if user is None:
                    continue
                if await self._click(plan, card, ask.key, user):
                    voted.add((ask.key, user))
                    if plan.crash == MID_RESUME and self.bot is not None and len(voted) == plan.case.approvers:
                        await asyncio.sleep(plan.kill_after)
                        self.kill_host(self.bot)
                        self.bot.process.wait(timeout=10)
                        self.crashes[MID_RESUME] += 1
                        self.bot = await self.start()
                        return  # the dead bot's lease (120 s) holds the run: the settling sweeper ends it
            await asyncio.sleep(0.2)

    def _live_card(self, channel: str, key: str) -> dict[str, Any] | None:
        for message in cards(self.slack, channel):
            if any(b.get("block_id") == f"card:{key}" for b in message.get("blocks") or []) and live_buttons(message):
                return message
        return None

    def _clicker(self, plan: RunPlan, key: str, voted: set[tuple[str, str]]) -> str | None:
        if plan.case.approvers == 1:
            return f"U0P{plan.index:04d}" if (key, f"U0P{plan.index:04d}") not in voted else None
        people = ["U0BOB"] if plan.verdict == "reject" else ["U0BOB", "U0CAROL"]
        return next((p for p in people if (key, p) not in voted), None)

    async def _click(self, plan: RunPlan, card: dict[str, Any], key: str, user: str) -> bool:
        """One decision by ``user``; True when the bot acked it without saying nothing was recorded."""
        bot = await self.ensure_bot()
        person = self.user_for(bot)
        label = LABELS[plan.verdict]
        if label not in live_buttons(card):
            self.notes.append(f"run {plan.index}: no {label} on the card of {key}")
            return False
        before = self._not_recorded(user)
        views = len(self.slack.open_views(user))
        try:
            await self.timed(person.click(message=card, label=label, user_id=user, channel_id=plan.channel))
            if plan.verdict != "approve":
                view = await self.slack.wait_for(
                    lambda: self.slack.open_views(user)[views:] or None, timeout=10, what="the modal"
                )
                typed = f"because {plan.tag}"
                if plan.verdict == "edit":
                    typed = json.dumps({"service": plan.tag, "replicas": EDITED_REPLICAS})
                values = {TEXT_BLOCK_ID: {TEXT_ACTION_ID: typed}}
                await self.timed(person.submit_view(view=view[-1], values=values, user_id=user))
        except (aiohttp.ClientError, TimeoutError) as error:
            self.notes.append(f"run {plan.index}: the {label} click of {user} got no answer ({error!r})")
            return False
        await asyncio.sleep(0.3)  # what the bot says back reaches the clicker right after the ack
        if self._not_recorded(user) > before:
            return False
        self.clicks.append(Click(run=plan.index, key=key, user=user, verdict=plan.verdict))
        return True

    def _not_recorded(self, user: str) -> int:
        """How often the bot told ``user`` alone (ephemeral or response_url) that nothing was recorded."""
        said = [str(m) for m in self.slack.ephemerals(user)]
        said += [str(r) for r in self.slack.responses if r.get("user") == user]
        return sum(NOT_RECORDED in text for text in said)
