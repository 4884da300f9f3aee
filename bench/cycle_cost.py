"""What one approval cycle costs the real bot process: DynamoDB, S3 and Slack requests.

Why the real process: a cost per cycle is only worth quoting if it counts everything the
deployed bot sends, retries, background renewals and card edits included. So the bench
launches ``approval-bot serve`` as the end-to-end tests do (``tests/e2e/conftest.py``: its
environment, its health check), with the local Slack (``localslack``) as its Slack and
DynamoDB (and S3, with ``SNAPSHOT_BUCKET``) on moto's counting server
(``tests/support/aws.py``). That server counts each request by operation and prices the
DynamoDB ones in capacity units as DynamoDB bills them, from item sizes
(``tests/support/capacity.py``); only requests tagged with the bot's ``AWS_SDK_UA_APP_ID``
are counted, so the bench's own reads are not. Slack calls are the local Slack's record of
every Web API call the bot made.

One cycle is what ``tests/e2e/test_cost_and_ack.py`` measures, with its graph
(``big-context``: a node whose conversation holds a base64 blob, then asks): ``/graph run``
→ the card → an Approve click → the resume → the final message, for a conversation of
1 KB, 120 KB and 1.6 MB of text, with the state kept in DynamoDB chunk items and with it in
S3. Counting starts once the bot is healthy and stops once the run's end is recorded and no
request has come for a moment, before the bot is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.records import RunStatus
from localslack import LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser

if TYPE_CHECKING:
    from tests.e2e.conftest import Backend, BotProcess
    from tests.support.aws import CountingMotoServer

RESULTS = Path(__file__).with_name("results")
BOT_APP_ID = "cycle-cost-bot"
GRAPH = "big-context"
SIZES: dict[str, int] = {"1 KB": 768, "120 KB": 92_160, "1.6 MB": 1_200_000}
"""Conversation size → random bytes the graph's tool returns (base64 makes them 4/3 as long)."""
QUIET_SECONDS = 1.0
SERVE_ARGS = ("--sweep-seconds", "3600")
"""The sweeper's look for stuck runs (every 60 s by default) is not part of a cycle: kept out."""


@dataclass(frozen=True, kw_only=True)
class CycleCost:
    size: str
    bucket: bool
    completed: bool
    raw_state_bytes: int
    stored_state_bytes: int
    state_kind: str
    dynamodb: dict[str, int]
    write_units: int
    index_write_units: int
    """Part of ``write_units``: the global secondary indexes' writes."""
    read_units: float
    unmetered: int
    s3: dict[str, int]
    slack: dict[str, int]
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


async def _launch(*, slack: LocalSlack, backend: Backend, workdir: Path) -> BotProcess:
    """``approval-bot serve`` with the end-to-end tests' environment, once it is healthy."""
    from tests.e2e.conftest import REPO, BotProcess, _bot_env, _free_port, _wait_healthy

    port = _free_port()
    log = workdir / f"bot-{port}.log"
    full_env = _bot_env(slack=slack, backend=backend, markers=workdir / "markers.txt", extra={})
    command = [sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *SERVE_ARGS]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=full_env, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    bot = BotProcess(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        await _wait_healthy(bot)
    except BaseException:
        await bot.stop()
        raise
    return bot


async def _quiet(moto: CountingMotoServer, slack: LocalSlack) -> None:
    """Until neither moto nor the local Slack has seen a request from the bot for a moment."""
    last: tuple[int, int] = (-1, -1)
    stable_since = time.monotonic()
    while time.monotonic() - stable_since < QUIET_SECONDS:
        now = (sum(moto.counts(app_id=BOT_APP_ID).values()), len(slack.calls))
        if now != last:
            last, stable_since = now, time.monotonic()
        await asyncio.sleep(0.1)


async def one_cycle(*, moto: CountingMotoServer, size: str, bucket: bool, workdir: Path) -> CycleCost:
    """A bot of its own (fresh table, fresh local Slack) through one approval cycle."""
    import boto3

    from persistence import create_table
    from persistence.dynamodb import DynamoRunStore
    from tests.e2e.conftest import CHANNEL, Backend, cards, eventually, finished_message, run_of
    from tests.support.aws import REGION, _env
    from tests.support.source_graphs import BLOB_BYTES_VARIABLE

    table = f"cycle-{uuid.uuid4().hex[:10]}"
    create_table(table=table)
    env = {
        **_env(moto.url),
        "DYNAMODB_TABLE": table,
        "AWS_SDK_UA_APP_ID": BOT_APP_ID,
        "GRAPH_MODULES": "tests.support.graphs,tests.support.source_graphs",
        BLOB_BYTES_VARIABLE: str(SIZES[size]),
    }
    bucket_name = None
    if bucket:
        bucket_name = f"cycle-{uuid.uuid4().hex[:10]}"
        boto3.client("s3", region_name=REGION).create_bucket(
            Bucket=bucket_name,
            CreateBucketConfiguration={"LocationConstraint": REGION},  # type: ignore[typeddict-item]
        )
        env["SNAPSHOT_BUCKET"] = bucket_name
    store = DynamoRunStore(table, bucket=bucket_name)
    slack = LocalSlack()
    await slack.start()
    bot = None
    try:
        backend = Backend(name="dynamodb+s3" if bucket else "dynamodb", env=env, open_store=lambda: store)
        bot = await _launch(slack=slack, backend=backend, workdir=workdir)
        user = LocalSlackUser(slack=slack, bot_url=bot.url + "/slack/events", signing_secret=LOCAL_SIGNING_SECRET)
        try:
            await _quiet(moto, slack)  # start-up work (e.g. the first sweep) is not the cycle's
            moto.reset_counts()
            slack.calls.clear()
            started = time.perf_counter()
            await user.slash_command(text=f"run {GRAPH} cost", user_id="U0ALICE", channel_id=CHANNEL)
            (card,) = await slack.wait_for(lambda: cards(slack), timeout=120, what="a card")
            paused = await eventually(
                lambda: (r := run_of(store, slack)).status is RunStatus.WAITING and not r.owes_slack and r,
                timeout=120,
                what="the pause to be saved and its card recorded",
            )
            await user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
            await slack.wait_for(lambda: finished_message(slack), timeout=120, what="the final message")
            await eventually(lambda: run_of(store, slack).final is not None, timeout=60, what="the end")
            done = run_of(store, slack)
            await _quiet(moto, slack)
            seconds = time.perf_counter() - started
        finally:
            await user.aclose()
        counts = {
            op.removeprefix("dynamodb."): n
            for op, n in sorted(moto.counts(app_id=BOT_APP_ID).items())
            if op.startswith("dynamodb.")
        }
        capacity = moto.capacity(app_id=BOT_APP_ID)
        if slack.rejected:
            raise RuntimeError(f"the bot made calls Slack would refuse: {slack.rejected[:3]}")
        ref = paused.state_ref or {}
        return CycleCost(
            size=size,
            bucket=bucket,
            completed=done.status is RunStatus.COMPLETED,
            raw_state_bytes=len(paused.snapshot or b""),
            stored_state_bytes=int(ref.get("size", 0)),
            state_kind=str(ref.get("kind", "")),
            dynamodb=counts,
            write_units=int(capacity["write_units"]),
            index_write_units=int(capacity["index_write_units"]),
            read_units=float(capacity["read_units"]),
            unmetered=int(capacity["unmetered"]),
            s3=dict(capacity["s3_requests"]),
            slack=dict(sorted(Counter(call.method for call in slack.calls).items())),
            seconds=seconds,
        )
    finally:
        if bot is not None:
            await bot.stop()
        await slack.stop()


async def measure(*, sizes: Sequence[str] = tuple(SIZES), buckets: Sequence[bool] = (False, True)) -> list[CycleCost]:
    """One cycle per size and bucket choice, all on one counting moto server."""
    from bench.resume_cost import counting_moto

    with tempfile.TemporaryDirectory(prefix="bench-cycle-") as workdir, counting_moto() as moto:
        return [
            await one_cycle(moto=moto, size=size, bucket=bucket, workdir=Path(workdir))
            for size in sizes
            for bucket in buckets
        ]


def _ops(counts: dict[str, int]) -> str:
    return " · ".join(f"{op} {n}" for op, n in sorted(counts.items())) or "0"


def markdown(rows: Sequence[CycleCost], *, command: str) -> str:
    lines = [
        "## Cost of one approval cycle (the real bot process)",
        "",
        f"Produced by `{command}`. The real `approval-bot serve` process (launched as the end-to-end",
        "tests launch it) with the local Slack as its Slack and DynamoDB/S3 on moto's counting server;",
        "one cycle is `/graph run big-context` → card → Approve click → resume → final message, the",
        "graph of `tests/e2e/test_cost_and_ack.py` (a conversation holding a random base64 blob of the",
        "given size, then an ask). Counted from the moment the bot is idle to the moment the run's end is",
        "recorded and the bot is idle again; only the bot's own requests (its `AWS_SDK_UA_APP_ID`).",
        "Capacity units are priced as DynamoDB bills them, from item sizes (`tests/support/capacity.py`),",
        "the three keys-only global secondary indexes' writes included (an item entering or leaving an",
        "index costs one write, one whose index key changes two).",
        "",
        "| conversation | bucket | state raw → stored (kind) | DynamoDB requests by operation | total |"
        " write units (of which indexes) | read units | S3 requests | Slack API calls | completed |",
        "|---|---|---|---|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.size} | {'SNAPSHOT_BUCKET' if r.bucket else 'none'} | {r.raw_state_bytes:,} → "
            f"{r.stored_state_bytes:,} B ({r.state_kind}) | {_ops(r.dynamodb)} | {sum(r.dynamodb.values())} | "
            f"{r.write_units} ({r.index_write_units}) | {r.read_units:g} | {_ops(r.s3)} | {_ops(r.slack)} | "
            f"{'yes' if r.completed else '**no**'} |"
        )
    unmetered = sum(r.unmetered for r in rows)
    lines += [
        "",
        f"Requests the meter could not price: {unmetered}. The state is random bytes (base64), so it",
        "barely compresses: a worst case for the stored size. Without a bucket a state over the inline",
        "limit goes to chunk items (written once when the run pauses, read once on resume); with",
        "`SNAPSHOT_BUCKET` it goes to one S3 object, and DynamoDB keeps a few small records whatever",
        "the size.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cycle_cost", description=__doc__)
    parser.add_argument("--sizes", nargs="*", choices=tuple(SIZES), default=list(SIZES))
    args = parser.parse_args(argv)
    rows = asyncio.run(measure(sizes=args.sizes))
    command = "python -m bench.cycle_cost" + ("" if args.sizes == list(SIZES) else " --sizes " + " ".join(args.sizes))
    text = markdown(rows, command=command)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cost.md").write_text(text)
    data = {"command": command, "graph": GRAPH, "cycles": [r.as_dict() for r in rows]}
    (RESULTS / "cost.json").write_text(json.dumps(data, indent=2) + "\n")
    print(text)
    return 0 if all(r.completed for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
