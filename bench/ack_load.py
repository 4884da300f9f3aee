"""Ack latency under load: bursts of concurrent clients, ours against a bare Bolt app.

Why bursts: Slack does not wait for one ack before sending the next request. With 50
requests in flight, ours acks while the work it handed off after earlier acks (starting
runs, deciding and resuming) runs on the same event loop, which a sequential bench never
sees. The p99 is where that shows.

Each round builds one mixed burst (a third ``/graph run bench-ask``, a third Approve clicks
on real pending cards, the rest ``/graph help``, in a seeded shuffled order) and sends it to
both apps, all requests at once, one app after the other; which app goes first alternates
by round, and the servers' background work is left to settle between bursts, so one side's
work never lands in the other's burst. Both apps are the ones the sequential mode serves
(``bench/ack_latency.py``), on one event loop in a thread of their own; the clients are
``--concurrency`` coroutines in a process of their own (``bench/_burst_client.py`` says why),
sharing one aiohttp pool per app (a connection each once warm). The local Slack that ours
calls runs in a process of its own too, at a low priority (``bench/_slack_apart.py`` says
why): in production Slack is another machine, and ours' hundreds of Web API calls a burst
must not take the acks' turn of this process, which the bare app's bursts never pay for.

``workers`` serves ours as ``approval-bot serve --workers N`` does (``bot.workers``): it
acks and hands each piece of work to one of N worker processes, which run the runs and
resumes against the same SQLite file and the same local Slack; a burst has settled when
the workers have reported every piece done and Slack has been quiet for a moment.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench._burst_client import BurstClient
from bench._slack_apart import SlackApart
from bench.ack_latency import (
    _LoopThread,
    _serve,
    _Servers,
    _settle,
    _tasks_now,
    bare_app,
)
from bench.graphs import SMALL
from bench.stats import Comparison, compare
from bot.server import HANDOFF_KEY, build_web_app
from bot.services import build_services
from bot.settings import Settings
from localslack import LOCAL_SIGNING_SECRET, HttpTransport

KINDS = ("help", "run", "click")


@dataclass(frozen=True, kw_only=True)
class LoadReport:
    clients: int
    rounds: int
    inline: bool
    workers: int
    comparisons: list[Comparison]
    """One per kind, then ``all`` (every request of every burst)."""
    worst_ours: float
    clicks_applied: int
    runs_started: int


def _kinds(*, clients: int, round_index: int, help_only: bool) -> list[str]:
    if help_only:
        return ["help"] * clients
    third = clients // 3
    kinds = ["run"] * third + ["click"] * third + ["help"] * (clients - 2 * third)
    random.Random(round_index).shuffle(kinds)
    return kinds


async def measure_ack_under_load(
    *,
    clients: int = 50,
    rounds: int = 10,
    warmup: int = 1,
    inline: bool = False,
    help_only: bool = False,
    chain: int = 1,
    workers: int = 0,
) -> LoadReport:
    """``warmup + rounds`` rounds of ``chain`` bursts of ``clients`` concurrent requests to each app.

    ``help_only`` is the control: bursts of ``/graph help`` alone, answered in the ack with
    no work handed off. ``chain`` > 1 is steady traffic: the bursts of a round go back to
    back, each as soon as the previous one is acked, so the work the earlier bursts handed
    off runs while the later ones are acked (nothing settles in between). ``workers`` > 0
    serves ours with that many worker processes (``approval-bot serve --workers``).
    """
    servers_loop = _LoopThread()
    slack = await SlackApart.start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ack-load-") as workdir:
            if workers:
                servers = await servers_loop.call(
                    _serve_with_workers(workdir=Path(workdir), inline=inline, workers=workers, slack=slack)
                )
            else:
                at = (slack.api_url, slack.bot_token)
                servers = await servers_loop.call(_serve(workdir=Path(workdir), inline=inline, slack_apart=at))
            try:
                return await _measure(
                    servers_loop=servers_loop,
                    servers=servers,
                    slack=slack,
                    clients=clients,
                    rounds=rounds,
                    warmup=warmup,
                    inline=inline,
                    help_only=help_only,
                    chain=chain,
                    workers=workers,
                )
            finally:
                await servers_loop.call(servers.stop())
    finally:
        servers_loop.close()
        await slack.stop()


WORKER_SETTLE_TIMEOUT = 60.0
SLACK_QUIET_SECONDS = 0.05
"""With workers, a burst has settled once they report every piece done and Slack heard nothing this long."""


async def _serve_with_workers(*, workdir: Path, inline: bool, workers: int, slack: SlackApart) -> _Servers:
    """``_serve``'s two apps, ours with ``workers`` worker processes (which read the same
    settings from their environment), against the local Slack in its own process."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DYNAMODB_", "SNAPSHOT_", "AWS_"))},
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),  # bench.graphs, from anywhere
        "SLACK_BOT_TOKEN": slack.bot_token,
        "SLACK_SIGNING_SECRET": LOCAL_SIGNING_SECRET,
        "SLACK_API_URL": slack.api_url,
        "SLACK_COMMAND": "/graph",
        "GRAPH_MODULES": "bench.graphs",
        "SQLITE_PATH": str(workdir / "runs.sqlite3"),
        # One person starts every run of the bench, far beyond a person's fair share.
        "MAX_STARTS_PER_MINUTE": "0",
        "MAX_WAITING_RUNS": "0",
        "LOG_LEVEL": "WARNING",
    }
    settings = Settings.model_validate({k: v for k, v in env.items() if k in _SETTINGS} | {"DYNAMODB_TABLE": None})
    services = build_services(settings, owner="bench")
    servers = _Servers(slack=None, services=services)
    ours = build_web_app(
        services=services, sweep_seconds=3600, process_before_response=inline, workers=workers, worker_env=env
    )
    servers.ours_url = await servers.start(ours)
    servers.bare_url = await servers.start(
        bare_app(token=slack.bot_token, api_url=slack.api_url, inline=inline).web_app()
    )
    return servers


_SETTINGS = {
    "SLACK_BOT_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_API_URL",
    "SLACK_COMMAND",
    "GRAPH_MODULES",
    "SQLITE_PATH",
    "MAX_STARTS_PER_MINUTE",
    "MAX_WAITING_RUNS",
}


async def _measure(
    *,
    servers_loop: _LoopThread,
    servers: _Servers,
    slack: SlackApart,
    clients: int,
    rounds: int,
    warmup: int,
    inline: bool,
    help_only: bool,
    chain: int,
    workers: int,
) -> LoadReport:
    ours = HttpTransport(bot_url=servers.ours_url, signing_secret=LOCAL_SIGNING_SECRET)
    clients_process = await BurstClient.start()
    baseline = await servers_loop.call(_tasks_now())

    handoff = servers.runners[0].app[HANDOFF_KEY]

    async def settle() -> None:
        await servers_loop.call(_settle(baseline=baseline))
        if not workers:
            return
        # The workers' work: every piece reported done, then no Slack call for a while (a
        # worker's call still in flight would land in the other side's burst).
        deadline = time.monotonic() + WORKER_SETTLE_TIMEOUT
        calls, quiet_since = await slack.calls(), time.monotonic()
        while handoff.pending or time.monotonic() - quiet_since < SLACK_QUIET_SECONDS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the workers did not finish their work within {WORKER_SETTLE_TIMEOUT}s")
            await asyncio.sleep(0.002)
            now = await slack.calls()
            if handoff.pending or now != calls:
                calls, quiet_since = now, time.monotonic()
        await servers_loop.call(_settle(baseline=baseline))

    times: dict[str, tuple[list[float], list[float]]] = {kind: ([], []) for kind in KINDS}
    runs_started = 0
    clicks_sent = 0
    try:
        # Cards for the first round's clicks; later rounds click the cards the previous round's runs posted.
        seeds = range(0 if help_only else clients // 3 * chain)
        starts = [{"kind": "run", "text": f"run {SMALL} load seed {i}"} for i in seeds]
        for body in (await slack.bodies([starts]))[0][0]:
            await ours.post(body)
        await settle()
        for round_index in range(warmup + rounds):
            # One burst's kinds per link of the chain, each shuffled differently.
            chained = [
                _kinds(clients=clients, round_index=round_index * chain + link, help_only=help_only)
                for link in range(chain)
            ]
            bursts, clicked = await slack.bodies(
                [
                    [
                        {"kind": kind, "text": "help" if kind == "help" else f"run {SMALL} r{round_index} l{link} c{n}"}
                        for n, kind in enumerate(kinds)
                    ]
                    for link, kinds in enumerate(chained)
                ]
            )
            pending_before = await slack.pending()
            gc.collect()
            sides = [(servers.ours_url, 0), (servers.bare_url, 1)]
            if round_index % 2:
                sides.reverse()
            measured: dict[int, list[list[float]]] = {}
            for url, side in sides:
                measured[side] = await clients_process.bursts(url=url, bursts=bursts)
                await settle()
            runs = sum(kinds.count("run") for kinds in chained)
            pending_after = await slack.pending()
            # Each clicked card decided (and only those), each run's card posted: the work being measured.
            if pending_before - pending_after != set(clicked) or len(pending_after - pending_before) != runs:
                raise RuntimeError("a burst's runs or clicks did not all take effect: not the work being measured")
            runs_started += runs
            clicks_sent += len(clicked)
            if round_index < warmup:
                continue
            for link, kinds in enumerate(chained):
                if chain > 1 and link == 0:
                    continue  # nothing runs yet when a chain's first burst arrives: that is the burst mode
                for kind, ours_time, bare_time in zip(kinds, measured[0][link], measured[1][link], strict=True):
                    times[kind][0].append(ours_time)
                    times[kind][1].append(bare_time)
        if rejected := await slack.rejected():
            raise RuntimeError(f"the bot made calls Slack would refuse: {rejected}")
    finally:
        await ours.aclose()
        await clients_process.close()
    mode = (
        (" [inline]" if inline else "")
        + (" (help only)" if help_only else "")
        + (f" (steady: {chain} bursts back to back)" if chain > 1 else "")
        + (f" ({workers} worker{'s' if workers > 1 else ''})" if workers else "")
    )
    label = {"help": "/graph help", "run": f"/graph run {SMALL}", "click": "Approve click"}
    comparisons = [
        compare(name=f"{clients} clients: {label[k]}{mode}", ours=times[k][0], baseline=times[k][1])
        for k in KINDS
        if times[k][0] and not help_only
    ]
    every_ours = [t for k in KINDS for t in times[k][0]]
    every_bare = [t for k in KINDS for t in times[k][1]]
    comparisons.append(compare(name=f"{clients} clients: all{mode}", ours=every_ours, baseline=every_bare))
    return LoadReport(
        clients=clients,
        rounds=rounds,
        inline=inline,
        workers=workers,
        comparisons=comparisons,
        worst_ours=max(every_ours),
        clicks_applied=clicks_sent,
        runs_started=runs_started,
    )
