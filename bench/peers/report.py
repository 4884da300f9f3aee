"""The peer benchmark's Markdown section and JSON, from what ``cycle.measure`` returned.

Why a module of its own: the figures are measured once and shown twice (a table for
people, JSON for ``bench.report`` and for anyone re-plotting them); neither must invent a
number. Every cell comes from a measured cycle; a cycle that failed says so in its row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COMMAND = "bash bench/peers/run.sh"
NAMES = {
    "ours": (
        "ours, the engine alone (RunEngine and the DynamoDB store, Slack recorded), as the peers are "
        "libraries; the served bot's own cycle, with its App Home read and live progress, is in cost.md"
    ),
    "langgraph": "LangGraph + langgraph-checkpoint-aws DynamoDBSaver",
    "strands": "Strands SnapshotSessionManager + strands-dynamodb-storage",
    "langgraph-z": "the same LangGraph saver with enable_checkpoint_compression=True",
    "strands-z": 'the same Strands storage with compression="gzip"',
}
BUCKETS = {
    "ours": "SNAPSHOT_BUCKET",
    "langgraph": "s3_offload_config",
    "strands": "s3_bucket",
    "langgraph-z": "s3_offload_config",
    "strands-z": "s3_bucket",
}
PACKAGES = ("langgraph", "langgraph-checkpoint-aws", "strands-dynamodb-storage", "strands-agents", "boto3", "moto")
_SHORT = {"BatchWriteItem": "BatchWrite", "BatchGetItem": "BatchGet", "TransactWriteItems": "TransactWrite"}


def _ops(usage: dict[str, int]) -> str:
    parts = [f"{_SHORT.get(op, op.removesuffix('Item'))} {n}" for op, n in sorted(usage.items())]
    return " · ".join(parts) or "none"


def _sum(*maps: dict[str, int]) -> dict[str, int]:
    total: dict[str, int] = {}
    for counts in maps:
        for key, n in counts.items():
            total[key] = total.get(key, 0) + n
    return total


def totals(cycle: dict[str, Any]) -> dict[str, Any]:
    """A cycle's requests and units over both processes."""
    phases = [cycle["start"].get("usage", {}), cycle["resume"].get("usage", {})]
    dynamodb = _sum(*(p.get("dynamodb", {}) for p in phases))
    return {
        "dynamodb": dynamodb,
        "dynamodb_requests": sum(dynamodb.values()),
        "dynamodb_requests_by_phase": [sum(p.get("dynamodb", {}).values()) for p in phases],
        "write_units": sum(int(p.get("write_units", 0)) for p in phases),
        "read_units": sum(float(p.get("read_units", 0.0)) for p in phases),
        "s3": _sum(*(p.get("s3", {}) for p in phases)),
        "slack_calls": _sum(*(dict(c.get("slack_calls") or {}) for c in (cycle["start"], cycle["resume"]))),
    }


def _outcome(cycle: dict[str, Any]) -> str:
    for phase, label in (("start", "first pass"), ("resume", "resume")):
        result = cycle[phase]
        if not result.get("ok"):
            return f"**fails** ({label}: {str(result.get('error') or result.get('status'))[:140]})"
    return "yes"


def _race_cell(races: list[dict[str, Any]], cycle: dict[str, Any]) -> str:
    if cycle["system"].endswith("-z"):
        return f"as {cycle['system'].removesuffix('-z')}"
    for race in races:
        if race["system"] == cycle["system"] and race["state_bytes"] == cycle["state_bytes"] and not cycle["bucket"]:
            return str(race["side_effect_runs"]) if race.get("ok") else f"race failed: {race.get('error')}"
    return "(measured at 1 KB, no bucket)"


def guarantee(system: str, races: list[dict[str, Any]]) -> str:
    runs = next((r["side_effect_runs"] for r in races if r["system"] == system and r.get("ok")), None)
    seen = f"measured: two concurrent resumers ran `report` {runs} time(s)" if runs is not None else "not measured"
    if system == "ours":
        return (
            "**Ours**: exactly-once resumption. The decision and the claim are one conditional UpdateItem on the run's "
            "version, so of two processes resuming the same approved pause one claims it and the other backs off "
            f"({seen})."
        )
    if system == "langgraph":
        return (
            "**LangGraph + DynamoDBSaver**: at-least-once. Checkpoints are unconditional PutItems; each resumer "
            "re-runs the interrupted node and everything after it and writes its own sibling checkpoint, and a "
            f"failed conditional put of a pending write is swallowed, not raised ({seen})."
        )
    return (
        "**Strands SnapshotSessionManager + DynamoDBStorage**: at-least-once, last writer wins. The snapshot is one "
        "unconditional PutItem of the whole graph state; the only lock is an in-process `asyncio.Lock`, so each "
        f"process that resumes runs the rest of the graph ({seen})."
    )


def versions() -> dict[str, str]:
    """What ran: the peers' versions matter as much as ours (their request counts change with them)."""
    from importlib import metadata

    found: dict[str, str] = {}
    for package in PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def markdown(measured: dict[str, Any]) -> str:
    cycles, races = measured["cycles"], measured["races"]
    lines = [
        "## Beside the peers: one approval cycle on DynamoDB",
        "",
        f"Produced by `{COMMAND}` (a venv of its own, `.venv-peers`, with the `peers` extra; then "
        "`python -m bench.peers`). One cycle is plan → approval → report: the first pass runs `plan` and pauses "
        "at `approval` in one process; a **fresh process** answers (approve), resumes, runs `report` and ends. "
        "All three systems run the same three nodes against the same moto server, through the same counting "
        "middleware (`tests/support/aws.py`), which counts requests per operation and prices DynamoDB requests in "
        "capacity units as DynamoDB bills them, from item sizes (`tests/support/capacity.py`). The state is the "
        "plan node's output (English-like text, same bytes for everyone). Each library's defaults: LangGraph "
        'durability `async`, no compression; Strands `multi_agent_save_latest_on="node"`, no compression; ours '
        "compresses the snapshot (zlib) and keeps it in chunk items, or in S3 with `SNAPSHOT_BUCKET`.",
        "",
        "Slack API calls are ours only (the peers have no Slack side): counted by a recording publisher "
        "that the engine calls in place of Slack, one per API call. The last column is the race: the approval "
        "recorded, then two fresh processes resume the same pause at once (released by a barrier), and the "
        "`report` node appends one line to a marker file each time it runs.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in measured.get("versions", versions()).items()) + ".",
        "",
        "| system | state | bucket | DynamoDB requests by operation | DynamoDB requests (first pass + resume) "
        "| write units | read units | S3 requests | Slack API calls | fresh-process resume OK | `report` runs "
        "| `report` runs, 2 concurrent resumers |",
        "|---|---|---|---|---|---:|---:|---|---|---|---:|---|",
    ]
    for cycle in cycles:
        t = totals(cycle)
        by_phase = " + ".join(str(n) for n in t["dynamodb_requests_by_phase"])
        slack = str(sum(t["slack_calls"].values())) if cycle["system"] == "ours" else "n/a"
        lines.append(
            f"| {cycle['system']} | {cycle['size']} | {BUCKETS[cycle['system']] if cycle['bucket'] else 'none'} "
            f"| {_ops(t['dynamodb'])} | {t['dynamodb_requests']} ({by_phase}) | {t['write_units']} "
            f"| {t['read_units']:g} | {_ops(t['s3']) if t['s3'] else '0'} | {slack} | {_outcome(cycle)} "
            f"| {cycle['side_effect_runs']} | {_race_cell(races, cycle)} |"
        )
    lines += ["", "Systems: " + "; ".join(f"**{k}** = {v}" for k, v in NAMES.items()) + ".", ""]
    ours = [c for c in cycles if c["system"] == "ours" and c["start"].get("ok")]
    if ours:
        calls = totals(ours[0])["slack_calls"]
        lines += [f"Our Slack API calls per cycle: {_ops(calls)}.", ""]
    lines += ["What each guarantees when a pause is resumed twice:", ""]
    lines += [f"* {guarantee(system, races)}" for system in NAMES if any(r["system"] == system for r in races)]
    lines += [
        "",
        "Compression: ours always compresses the snapshot before storing it; the peers do not by default. "
        "`langgraph-z` and `strands-z` are the same peers with their own compression option on, so that a "
        "difference in units can be told apart from a difference in compression.",
    ]
    lines += [
        "",
        "How to read it: requests and units are totals over both processes of one cycle (JSON has them per "
        "process and per operation). A write unit is 1 KB of item written (the larger of before and after), a "
        "read unit 4 KB read strongly (half for an eventually consistent read); a PutItem of a 300 KB item is "
        '300 units. S3 requests are counted per HTTP method. "fails" is a measured outcome (e.g. an item over '
        "DynamoDB's 400 KB limit without a bucket), not a benchmark error.",
        "",
    ]
    return "\n".join(lines)


def write(measured: dict[str, Any], *, out_dir: Path, name: str = "peers") -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / f"{name}.md", out_dir / f"{name}.json"
    md.write_text(markdown(measured), encoding="utf-8")
    measured = {"versions": versions(), **measured}
    payload = {"command": COMMAND, "systems": NAMES, **measured}
    payload["totals"] = [
        {"system": c["system"], "size": c["size"], "bucket": c["bucket"], **totals(c)} for c in measured["cycles"]
    ]
    js.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    return md, js
