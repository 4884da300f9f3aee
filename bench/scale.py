"""Scale: 1,000 runs waiting at once, 100 runs started in a burst, one inbox at 10,000 runs.

A bot that holds many open approvals must not slow down, grow, or sweep harder with each of
them: listings go through indexes, a sweep reads only the sweep index (runs that are due),
and a burst of slash commands must still be acked inside Slack's 3 seconds with every card
posted once. Each figure is taken from the real ``approval-bot serve`` process (its memory
from ``/proc``), with the local Slack as its Slack, on SQLite and on DynamoDB (moto's
counting server), and set against the same thing at a small size in the same run:

- waiting runs: two bots, one on a store of 10 waiting runs and one on a store of 1,000
  (10 started through ``/graph run``, the rest copies of them written through the store
  API: the fast path); listings (``/graph runs``, ``/graph pending``, App Home) are timed
  from the request to the answer in Slack, interleaved between the two; the sweep is the
  engine's (``engine.sweep()``, what the server's sweeper and ``approval-bot sweep`` call),
  timed here against the same stores, with its DynamoDB requests counted by moto; the
  one-shot ``approval-bot sweep`` command is run once too (its requests tagged apart).
- burst: N concurrent ``/graph run`` commands, until every card is in the channel, beside
  a burst of N/10.
- inbox: ``bench.inbox_cost`` (10,000 runs against 100), run as it is.

``python -m bench.scale`` writes ``bench/results/scale.md`` and ``.json`` (about 10 minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import _scale_rig as rig
from bench._scale_report import write
from bench.graphs import SMALL
from bench.stats import Comparison, compare, percentile
from engine.records import RunStatus
from localslack import LocalSlack

ACK_LIMIT = 3.0


@dataclass(frozen=True, kw_only=True)
class Sizes:
    waiting: int = 1_000
    baseline: int = 10
    burst: int = 100
    burst_baseline: int = 10
    samples: int = 10


async def _listings(
    slack: LocalSlack, *, small: rig.Bot, large: rig.Bot, samples: int, moto: Any, requests: dict[str, Any]
) -> list[Comparison]:
    """Each listing on the large store against the same on the small one, interleaved; with
    moto, the bot's DynamoDB requests for one listing of each kind go into ``requests``."""

    def runs(bot: rig.Bot, text: str) -> Any:
        return lambda: rig.answered(
            slack,
            lambda: bot.user.slash_command(text=text, user_id=bot.viewer, channel_id=bot.channel),
            seen=lambda: len(slack.ephemerals(bot.viewer)),
            what=f"/graph {text} on {bot.name}",
        )

    last_open: dict[str, float] = {}

    def home(bot: rig.Bot) -> Any:
        def published() -> int:
            return sum(1 for c in slack.calls if c.method == "views.publish" and c.params.get("user_id") == bot.viewer)

        async def open_home() -> float:
            # The bot publishes one person's Home at most once a second (bot.home.MIN_INTERVAL);
            # opening sooner would time that pause, not the listing.
            await asyncio.sleep(max(0.0, last_open.get(bot.name, 0.0) + 1.1 - time.monotonic()))
            last_open[bot.name] = time.monotonic()
            return await rig.answered(
                slack, lambda: bot.user.open_home(user_id=bot.viewer), seen=published, what=f"App Home on {bot.name}"
            )

        return open_home

    kinds = {
        "/graph runs": (runs(small, "runs"), runs(large, "runs")),
        "/graph pending": (runs(small, "pending"), runs(large, "pending")),
        "App Home open": (home(small), home(large)),
    }
    rows: list[Comparison] = []
    for name, (on_small, on_large) in kinds.items():
        for bot, call in ((small, on_small), (large, on_large)):  # a warm-up of each, counted
            if moto is not None:
                moto.reset_counts()
            await call()
            if moto is not None:
                requests.setdefault(name, {})[bot.name] = moto.counts(app_id=rig.BOT_APP_ID)
        ours: list[float] = []
        baseline: list[float] = []
        for i in range(samples):
            pair = ((on_large, ours), (on_small, baseline)) if i % 2 else ((on_small, baseline), (on_large, ours))
            for call, into in pair:
                into.append(await call())
        rows.append(compare(name=name, ours=ours, baseline=baseline))
    return rows


def _bare_query(*, small: rig.Bot, large: rig.Bot, samples: int) -> Comparison:
    """moto's own growth: the bare Query of one inbox partition (``ANYONE``), no BatchGetItem.
    moto answers any Query by walking the whole table in Python; DynamoDB does not."""
    from engine.store_rules import ANYONE
    from persistence.dynamo_inbox import INBOX_PREFIX

    def query(bot: rig.Bot) -> float:
        store: Any = bot.store
        start = time.perf_counter()
        store._ddb.query(
            TableName=store._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": INBOX_PREFIX + ANYONE}},
            ScanIndexForward=False,
            Limit=50,
        )
        return time.perf_counter() - start

    ours: list[float] = []
    baseline: list[float] = []
    for i in range(samples):
        for bot, into in ((large, ours), (small, baseline)) if i % 2 else ((small, baseline), (large, ours)):
            into.append(query(bot))
    return compare(name="moto's bare inbox Query", ours=ours, baseline=baseline)


def _states(bot: rig.Bot, run_ids: list[str]) -> dict[str, tuple[int, str]]:
    found: dict[str, tuple[int, str]] = {}
    for run_id in run_ids:
        run = bot.store.load(run_id, snapshot=False)
        found[run_id] = (-1, "missing") if run is None else (run.version, run.status.value)
    return found


async def _sweeps(*, small: rig.Bot, large: rig.Bot, samples: int, moto: Any, large_ids: list[str]) -> dict[str, Any]:
    """``engine.sweep()`` on each store, interleaved; what one sweep sends to DynamoDB; and
    whether any run changed (none is due: each waits on a person, with no deadline)."""
    from bot.services import build_services
    from bot.settings import Settings

    engines = {}
    for bot in (small, large):
        settings = Settings.model_validate({k: v for k, v in bot.env.items() if k.isupper()})
        engines[bot.name] = build_services(settings, owner=f"bench-sweep-{bot.name}").engine
    before = _states(large, large_ids)
    times: dict[str, list[float]] = {small.name: [], large.name: []}
    requests: dict[str, dict[str, int]] = {}
    swept = 0
    for i in range(samples):
        for bot in (large, small) if i % 2 else (small, large):
            if moto is not None:
                moto.reset_counts()
            start = time.perf_counter()
            swept += len(await engines[bot.name].sweep())
            times[bot.name].append(time.perf_counter() - start)
            if moto is not None:
                requests[bot.name] = moto.counts()
    after = _states(large, large_ids)
    changed = sorted(run_id for run_id in large_ids if before[run_id] != after[run_id])
    return {
        "comparison": compare(name="engine.sweep()", ours=times[large.name], baseline=times[small.name]),
        "requests": requests,
        "runs_swept": swept,
        "runs_changed": changed,
        "runs_waiting_after": sum(1 for v in after.values() if v[1] == RunStatus.WAITING.value),
    }


def _cli_sweep(bot: rig.Bot, *, moto: Any) -> dict[str, Any]:
    """``approval-bot sweep`` once against ``bot``'s store: its exit, output, wall time
    (process start included) and DynamoDB requests (tagged with their own app id)."""
    app_id = "scale-cli-sweep"
    env = {**bot.env, "AWS_SDK_UA_APP_ID": app_id}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "sweep"], env=env, cwd=rig.REPO, capture_output=True, text=True, timeout=300
    )
    return {
        "exit": done.returncode,
        "swept_lines": [line for line in done.stdout.splitlines() if line.strip()],
        "seconds": round(time.perf_counter() - start, 3),
        "requests": moto.counts(app_id=app_id) if moto is not None else {},
    }


async def _burst(slack: LocalSlack, bot: rig.Bot, *, count: int, channel: str) -> dict[str, Any]:
    """``count`` ``/graph run`` commands at once in ``channel``; acks, statuses, time to the last card."""

    async def one(n: int) -> tuple[int, float]:
        start = time.perf_counter()
        response = await bot.user.slash_command(text=f"run {SMALL} burst {n}", user_id=rig.STARTER, channel_id=channel)
        return response.status, time.perf_counter() - start

    start = time.perf_counter()
    answers = await asyncio.gather(*(one(n) for n in range(count)))
    await slack.wait_for(lambda: len(rig.cards(slack, channel)) >= count, timeout=300, what=f"{count} cards")
    total = time.perf_counter() - start
    await asyncio.sleep(1.0)  # a card posted twice would show up now
    keys = rig.card_keys(slack, channel)
    runs = bot.store.recent(channel=channel, limit=count + 10)
    acks = [seconds for _, seconds in answers]
    return {
        "count": count,
        "statuses": sorted({status for status, _ in answers}),
        "server_errors": sum(1 for status, _ in answers if status >= 500),
        "ack_p50_ms": round(statistics.median(acks) * 1000, 1),
        "ack_p99_ms": round(percentile(acks, 0.99) * 1000, 1),
        "ack_max_ms": round(max(acks) * 1000, 1),
        "acks_over_3s": sum(1 for a in acks if a > ACK_LIMIT),
        "seconds_to_last_card": round(total, 3),
        "cards": len(rig.cards(slack, channel)),
        "distinct_cards": len(set(keys)),
        "runs": len(runs),
        "runs_waiting": sum(1 for r in runs if r.status is RunStatus.WAITING),
    }


async def measure_backend(*, backend: str, sizes: Sizes, workdir: Path, moto: Any) -> dict[str, Any]:
    async with rig.local_slack() as slack:
        small = await rig.start_bot(
            slack=slack, backend=backend, workdir=workdir, name="small", channel="C0SMALL", viewer="U0VSMALL"
        )
        try:
            large = await rig.start_bot(
                slack=slack, backend=backend, workdir=workdir, name="large", channel="C0LARGE", viewer="U0VLARGE"
            )
        except BaseException:
            await small.stop()
            raise
        try:
            result: dict[str, Any] = {"rss_kib_started": {"small": small.rss_kib, "large": large.rss_kib}}
            start = time.perf_counter()
            await rig.start_runs(small, slack, count=sizes.baseline)
            await rig.start_runs(large, slack, count=sizes.baseline)
            result["seconds_per_real_start"] = round((time.perf_counter() - start) / (2 * sizes.baseline), 3)
            start = time.perf_counter()
            large_ids = [*large.run_ids, *rig.clone_waiting(large, total=sizes.waiting)]
            result["fill_seconds"] = round(time.perf_counter() - start, 2)
            result["rss_kib_idle"] = {"small": small.rss_kib, "large": large.rss_kib}
            result["listing_requests"] = {}
            result["listings"] = await _listings(
                slack, small=small, large=large, samples=sizes.samples, moto=moto, requests=result["listing_requests"]
            )
            if moto is not None:
                result["listings"].append(_bare_query(small=small, large=large, samples=sizes.samples))
            result["rss_kib_after_listing"] = {"small": small.rss_kib, "large": large.rss_kib}
            result["sweep"] = await _sweeps(
                small=small, large=large, samples=sizes.samples, moto=moto, large_ids=large_ids
            )
            result["cli_sweep"] = _cli_sweep(large, moto=moto)
            result["burst_baseline"] = await _burst(slack, small, count=sizes.burst_baseline, channel="C0BURSTA")
            result["burst"] = await _burst(slack, small, count=sizes.burst, channel="C0BURSTB")
            result["slack_refused"] = len(slack.rejected)
            return result
        finally:
            await large.stop()
            await small.stop()


def measure(*, sizes: Sizes, backends: tuple[str, ...] = ("sqlite", "dynamodb"), inbox: bool = True) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": sizes.__dict__, "backends": {}}
    with tempfile.TemporaryDirectory() as folder:
        for backend in backends:
            workdir = Path(folder) / backend
            workdir.mkdir()
            if backend == "sqlite":
                results["backends"][backend] = asyncio.run(
                    measure_backend(backend=backend, sizes=sizes, workdir=workdir, moto=None)
                )
            else:
                with rig.counting_moto() as moto:
                    results["backends"][backend] = asyncio.run(
                        measure_backend(backend=backend, sizes=sizes, workdir=workdir, moto=moto)
                    )
    if inbox:
        from bench.inbox_cost import measure as inbox_measure

        report = inbox_measure(small=100, large=10_000, samples=20)
        results["inbox"] = report.as_dict()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--waiting", type=int, default=1_000)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--backend", choices=["sqlite", "dynamodb"], action="append")
    parser.add_argument("--no-inbox", action="store_true", help="skip bench.inbox_cost (about two minutes)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    sizes = Sizes(
        waiting=args.waiting,
        baseline=10,
        burst=args.burst,
        burst_baseline=max(1, args.burst // 10),
        samples=args.samples,
    )
    results = measure(sizes=sizes, backends=tuple(args.backend or ("sqlite", "dynamodb")), inbox=not args.no_inbox)
    command = "python -m bench.scale" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else "")
    md, js = write(results, out=args.out, command=command)
    print(md.read_text())
    print(f"wrote {md} and {js}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
