"""``bench.scale``'s section of the report: Markdown for people, JSON for anything that checks.

Kept apart from the measuring so the tables can change without touching what is measured.
Milliseconds are given for context; what carries across machines are the ratios (each
against the same thing at the small size, measured in the same run) and the counts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.stats import Comparison


def _plain(value: Any) -> Any:
    """The results with every ``Comparison`` turned into its dict, for JSON."""
    if isinstance(value, Comparison):
        return value.as_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _mib(kib: int) -> str:
    return f"{kib / 1024:.1f}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _waiting(name: str, data: dict[str, Any], *, small: int, large: int) -> list[str]:
    rows: list[Comparison] = [*data["listings"], data["sweep"]["comparison"]]
    lines = [
        f"**{name}** ({large:,} waiting runs against {small:,}; filled in {data['fill_seconds']} s)",
        "",
        f"| measurement | at {small:,}, median ms | at {large:,}, median ms | ratio (median) | ratio (p95) |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.name} | {_ms(row.baseline.median)} | {_ms(row.ours.median)} | {row.ratio:.2f} | "
            f"{row.p95_ratio:.2f} |"
        )
    idle, listed = data["rss_kib_idle"], data["rss_kib_after_listing"]
    lines.append(
        f"| bot RSS idle, MiB | {_mib(idle['small'])} | {_mib(idle['large'])} | {idle['large'] / idle['small']:.2f} | |"
    )
    lines.append(
        f"| bot RSS after listing, MiB | {_mib(listed['small'])} | {_mib(listed['large'])} | "
        f"{listed['large'] / listed['small']:.2f} | |"
    )
    sweep = data["sweep"]
    requests = sweep["requests"]
    if requests:
        lines.append(
            f"| DynamoDB requests of one sweep | {_counts(requests.get('small', {}))} | "
            f"{_counts(requests.get('large', {}))} | | |"
        )
    for kind, sides in data.get("listing_requests", {}).items():
        lines.append(
            f"| DynamoDB requests of one {kind} | {_counts(sides.get('small', {}))} | "
            f"{_counts(sides.get('large', {}))} | | |"
        )
    cli = data["cli_sweep"]
    lines += [
        "",
        f"Sweeps: {sweep['runs_swept']} runs picked up, {len(sweep['runs_changed'])} of the {large:,} runs changed "
        f"(version or status), {sweep['runs_waiting_after']:,} still waiting. `approval-bot sweep` once on the "
        f"{large:,}-run store: exit {cli['exit']}, {len(cli['swept_lines'])} runs swept, {cli['seconds']} s with "
        f"process start" + (f", DynamoDB requests {_counts(cli['requests'])}" if cli["requests"] else "") + ".",
        "",
    ]
    return lines


def _counts(counts: dict[str, int]) -> str:
    shown = {k.removeprefix("dynamodb."): v for k, v in sorted(counts.items()) if k.startswith("dynamodb.")}
    return ", ".join(f"{k} {v}" for k, v in shown.items()) or "none"


def _burst_rows(name: str, data: dict[str, Any]) -> list[str]:
    lines = []
    for key in ("burst_baseline", "burst"):
        b = data[key]
        lines.append(
            f"| {name} | {b['count']} | {b['ack_p50_ms']} | {b['ack_p99_ms']} | {b['ack_max_ms']} | "
            f"{b['acks_over_3s']} | {b['server_errors']} | {b['seconds_to_last_card']} | "
            f"{b['cards']} ({b['distinct_cards']} distinct) |"
        )
    base, big = data["burst_baseline"], data["burst"]
    per_base = base["seconds_to_last_card"] / base["count"]
    per_big = big["seconds_to_last_card"] / big["count"]
    lines.append(
        f"| {name}: ratio {big['count']} / {base['count']} | | "
        f"{big['ack_p50_ms'] / base['ack_p50_ms']:.2f} | {big['ack_p99_ms'] / base['ack_p99_ms']:.2f} | | | | "
        f"{big['seconds_to_last_card'] / base['seconds_to_last_card']:.2f} (per run {per_big / per_base:.2f}) | |"
    )
    return lines


def _inbox(data: dict[str, Any]) -> list[str]:
    lines = [
        "**One approver's inbox at 10,000 runs against 100** (`python -m bench.inbox_cost`, run as it is):",
        "",
        "| listing | at 100, median ms | at 10,000, median ms | ratio (median) | net of moto's table walk |",
        "|---|---:|---:|---:|---:|",
    ]
    net = data.get("net_of_moto", {})
    for row in data["comparisons"]:
        extra = f"{net[row['name']]:.2f}" if row["name"] in net else ""
        lines.append(
            f"| {row['name']} | {row['baseline_median_ms']} | {row['ours_median_ms']} | {row['ratio']:.2f} | {extra} |"
        )
    lines.append("")
    for side, counts in data["requests"].items():
        lines.append(f"- {side}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return [*lines, ""]


def markdown(results: dict[str, Any], *, command: str) -> str:
    sizes = results["sizes"]
    small, large = sizes["baseline"], sizes["waiting"]
    lines = [
        "## Scale",
        "",
        f"Produced by `{command}`. The real `approval-bot serve` process, the local Slack as its Slack, on SQLite "
        "and on DynamoDB (moto's server, counting requests). Each size is compared with a small one in the same "
        f"run. Waiting runs: {small} started through `/graph run`, the rest copies of them written through the "
        "store API (snapshot, asks and inbox entries included). Listings are timed from the request to the answer "
        "in Slack (the ephemeral reply, or `views.publish`), interleaved between a bot on the small store and one "
        f"on the large store, {sizes['samples']} samples each; memory is the bot process's RSS from `/proc`. "
        "The sweep is `engine.sweep()`, what the server's sweeper and `approval-bot sweep` run, on the same stores.",
        "",
        "### Runs waiting at once",
        "",
    ]
    for name, data in results["backends"].items():
        lines += _waiting(name, data, small=small, large=large)
    lines += [
        "### A burst of runs",
        "",
        "Concurrent `/graph run` commands; time from the first request to the last card in the channel. "
        "Every card must be posted exactly once, no 5xx, no ack over 3 s.",
        "",
        "| store | runs | ack p50 ms | ack p99 ms | ack max ms | acks over 3 s | 5xx | s to last card | cards |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, data in results["backends"].items():
        lines += _burst_rows(name, data)
    lines.append("")
    if "inbox" in results:
        lines += _inbox(results["inbox"])
    return "\n".join(lines)


def write(results: dict[str, Any], *, out: Path, command: str) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "scale.md", out / "scale.json"
    md.write_text(markdown(results, command=command))
    js.write_text(json.dumps({"command": command, **_plain(results)}, indent=2, sort_keys=True) + "\n")
    return md, js
