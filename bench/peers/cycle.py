"""Drives the approval cycles: one moto server, one counting proxy, a process per phase.

Why one server for all: every system's requests pass through the same counting middleware
(``tests/support/aws.py``'s ``CountingMotoServer``), which counts them per operation and
prices DynamoDB requests in capacity units as DynamoDB bills them, from item sizes
(``tests/support/capacity.py``). Each child process carries its own ``AWS_SDK_UA_APP_ID``
tag, so the counts of one system's one phase never mix with another's, nor with the
set-up (tables, buckets) done here.

A cycle is ``start`` in one process (run to the pause) and ``approve`` in a fresh one
(answer, resume, run ``report``, end). The race is ``start``, the approval recorded, then
two fresh processes resuming the same pause, released together by a file barrier; the
report node's marker file says how many times the side effect ran.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peers.graph import MARKER_ENV, STATE_ENV
from bench.peers.worker import RESULT_PREFIX

ROOT = Path(__file__).resolve().parents[2]
SIZES: dict[str, int] = {"1 KB": 1024, "120 KB": 120 * 1024, "1.6 MB": int(1.6 * 1024 * 1024)}
SYSTEMS = ("ours", "langgraph", "strands", "langgraph-z", "strands-z")
COMPRESSED = {"langgraph-z": "langgraph", "strands-z": "strands"}
"""Each peer again with its own compression on (ours always compresses): same table, same code."""
CHILD_TIMEOUT = 300.0


@dataclass(frozen=True, kw_only=True)
class Stores:
    """Where each system keeps its state on the shared moto server."""

    url: str
    tables: dict[str, str]
    bucket: str
    env: dict[str, str]


@contextmanager
def moto_stores(*, systems: Sequence[str]) -> Iterator[tuple[Any, Stores]]:
    """The counting moto server, with a table per system and one bucket, for the block's length."""
    import boto3

    from tests.support.aws import REGION, CountingMotoServer, _env

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per request otherwise
    server = CountingMotoServer()
    server.start()
    try:
        env = _env(server.url)
        saved = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            suffix = uuid.uuid4().hex[:8]
            tables = {base: f"peers-{base}-{suffix}" for base in {COMPRESSED.get(s, s) for s in systems}}
            bucket = f"peers-state-{suffix}"
            _create(tables=tables, bucket=bucket, region=REGION, client=boto3.client("dynamodb"))
            server.reset_counts()
            yield server, Stores(url=server.url, tables=tables, bucket=bucket, env=env)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    finally:
        server.stop()


def _create(*, tables: dict[str, str], bucket: str, region: str, client: Any) -> None:
    import boto3

    from persistence import create_table

    for system, table in tables.items():
        if system == "ours":
            create_table(table=table)
        elif system == "langgraph":
            from bench.peers.langgraph_peer import create_table as create_lg

            create_lg(client=client, table=table)
        else:
            from bench.peers.strands_peer import create_table as create_strands

            create_strands(client=client, table=table)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})  # type: ignore[typeddict-item]


def _child_env(stores: Stores, *, tag: str, state_bytes: int, marker: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(stores.env)
    env.update({"AWS_SDK_UA_APP_ID": tag, STATE_ENV: str(state_bytes), MARKER_ENV: marker})
    env.setdefault("PYTHONPATH", str(ROOT))
    return env


def _spawn(system: str, phase: str, args: dict[str, Any], env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "bench.peers.worker", system, phase, json.dumps(args)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=CHILD_TIMEOUT)
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return dict(json.loads(line.removeprefix(RESULT_PREFIX)))
    return {"ok": False, "error": f"exit {process.returncode}: {err.strip()[-500:]}"}


def _usage(server: Any, tag: str) -> dict[str, Any]:
    counts = server.counts(app_id=tag)
    capacity = server.capacity(app_id=tag)
    return {
        "dynamodb": {op.removeprefix("dynamodb."): n for op, n in sorted(counts.items()) if op.startswith("dynamodb.")},
        "s3": dict(capacity["s3_requests"]),
        "write_units": capacity["write_units"],
        "read_units": capacity["read_units"],
        "unmetered": capacity["unmetered"],
    }


def _marker_lines(path: str) -> int:
    try:
        return len(Path(path).read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        return 0


def _phase(
    server: Any, stores: Stores, system: str, phase: str, args: dict[str, Any], *, tag: str, size: int, marker: str
) -> dict[str, Any]:
    """Run one phase in a fresh process; its result, with the requests and units its tag was charged."""
    phase_tag = f"{tag}-{phase}"
    env = _child_env(stores, tag=phase_tag, state_bytes=size, marker=marker)
    result = _result(_spawn(system, phase, args, env))
    result["usage"] = _usage(server, phase_tag)
    return result


def _args(stores: Stores, system: str, *, bucket: bool) -> dict[str, Any]:
    return {
        "table": stores.tables[COMPRESSED.get(system, system)],
        "bucket": stores.bucket if bucket else None,
        "thread": uuid.uuid4().hex,
        "compress": system in COMPRESSED,
    }


def _answer_args(args: dict[str, Any], started: dict[str, Any]) -> dict[str, Any]:
    keys = ("run_id", "ask_key", "interrupt_id")
    return {**args, **{k: started[k] for k in keys if started.get(k) is not None}}


def cycle(server: Any, stores: Stores, *, system: str, size: int, bucket: bool, workdir: str) -> dict[str, Any]:
    """One approval cycle: start in one process, approve and resume in a fresh one."""
    tag = f"{system}-{size}-{'s3' if bucket else 'nob'}"
    marker = os.path.join(workdir, f"{tag}.marker")
    args = _args(stores, system, bucket=bucket)
    started = _phase(server, stores, system, "start", args, tag=tag, size=size, marker=marker)
    resumed: dict[str, Any] = {"ok": False, "error": "not attempted: the first pass did not pause"}
    if started.get("ok"):
        resumed = _phase(
            server, stores, system, "approve", _answer_args(args, started), tag=tag, size=size, marker=marker
        )
    return {"start": started, "resume": resumed, "side_effect_runs": _marker_lines(marker)}


def race(server: Any, stores: Stores, *, system: str, size: int, workdir: str) -> dict[str, Any]:
    """Two fresh processes resume the same approved pause at once; how often did ``report`` run?"""
    tag = f"race-{system}-{size}"
    marker = os.path.join(workdir, f"{tag}.marker")
    args = _args(stores, system, bucket=False)
    started = _phase(server, stores, system, "start", args, tag=tag, size=size, marker=marker)
    if not started.get("ok"):
        return {"ok": False, "error": f"first pass: {started.get('error') or started.get('status')}"}
    answer = _answer_args(args, started)
    if system == "ours":  # the approval is recorded by a click elsewhere; the racers only resume
        decided = _phase(server, stores, system, "decide", answer, tag=tag, size=size, marker=marker)
        if not decided.get("ok"):
            return {"ok": False, "error": f"decide: {decided.get('error')}"}
    barrier = tempfile.mkdtemp(prefix="barrier-", dir=workdir)
    racers = [
        _spawn(
            system,
            "resume",
            {**answer, "barrier": barrier, "index": i},
            _child_env(stores, tag=f"{tag}-r{i}", state_bytes=size, marker=marker),
        )
        for i in range(2)
    ]
    deadline = time.monotonic() + CHILD_TIMEOUT
    while not all(Path(barrier, f"ready-{i}").exists() for i in range(2)):
        if time.monotonic() > deadline or any(p.poll() is not None for p in racers):
            break
        time.sleep(0.005)
    Path(barrier, "go").touch()
    results = [_result(p) for p in racers]
    for i, result in enumerate(results):
        result["usage"] = _usage(server, f"{tag}-r{i}")
    return {
        "ok": all(r.get("ok") for r in results),
        "resumers": results,
        "side_effect_runs": _marker_lines(marker),
    }


def measure(
    *,
    systems: Sequence[str] = SYSTEMS,
    sizes: dict[str, int] = SIZES,
    buckets: Sequence[bool] = (False, True),
    race_size: int | None = None,
) -> dict[str, Any]:
    """Every (system, size, bucket) cycle, then the two-resumer race for each system at ``race_size``."""
    race_size = race_size if race_size is not None else min(sizes.values())
    cycles: list[dict[str, Any]] = []
    races: list[dict[str, Any]] = []
    with moto_stores(systems=systems) as (server, stores), tempfile.TemporaryDirectory(prefix="peers-") as workdir:
        for label, size in sizes.items():
            for bucket in buckets:
                for system in systems:
                    measured = cycle(server, stores, system=system, size=size, bucket=bucket, workdir=workdir)
                    cycles.append({"system": system, "size": label, "state_bytes": size, "bucket": bucket, **measured})
        for system in (s for s in systems if s not in COMPRESSED):  # compression changes no guarantee
            measured = race(server, stores, system=system, size=race_size, workdir=workdir)
            races.append({"system": system, "state_bytes": race_size, "bucket": False, **measured})
    return {"cycles": cycles, "races": races}
