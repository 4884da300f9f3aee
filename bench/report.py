"""``python -m bench.report``: one Markdown report from every benchmark's and suite's last run.

Each benchmark (and the reliability suites, when asked to) writes its own section to
``bench/results/<name>.md``, with the command that produced it. This module stitches those
sections into ``bench/REPORT.md`` under a header naming the machine and the versions that
ran them, in a fixed order, and lists any section that has not been run yet with the
command that would produce it, so a missing measurement is visible rather than silently
absent. ``--run`` first runs every command, one at a time (never in parallel: they time
things, and two at once on a small machine would measure each other).

Sections are kept apart, not merged into one big table, because each compares against its
own baseline: a bare Bolt app for acks, Strands' in-process resume for resume, the peers
for cost, 100 runs for 10,000. Only ratios and counts are meant to be compared across
machines; the milliseconds beside them describe the machine that ran them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

BENCH = Path(__file__).parent
RESULTS = BENCH / "results"
REPORT = BENCH / "REPORT.md"


@dataclass(frozen=True, kw_only=True)
class Section:
    name: str
    """The file stem under ``bench/results/``."""
    title: str
    command: str
    """What produces the section, from the repository's root."""


SECTIONS: tuple[Section, ...] = (
    Section(
        name="ack",
        title="Ack latency under load",
        command="python -m bench.ack_latency --concurrency 50 --rounds 30",
    ),
    Section(name="cold", title="Lambda cold ack", command="python -m bench.cold_start --samples 21 --write"),
    Section(name="cost", title="Cost of one approval cycle", command="python -m bench.cycle_cost"),
    Section(name="peers", title="Beside the peers", command="bash bench/peers/run.sh"),
    Section(name="resume", title="Resume overhead against state size", command="python -m bench.resume_size"),
    Section(name="snapshots", title="Stored state size", command="python -m bench.snapshot_size"),
    Section(name="scale", title="Scale", command="python -m bench.scale"),
    Section(name="faults", title="Faults", command="python -m pytest -q -s -m long tests/reliability/test_faults.py"),
    Section(
        name="faults-workers",
        title="Faults, served with worker processes",
        command="FAULT_WORKERS=2 python -m pytest -q -s -m long tests/reliability/test_faults.py",
    ),
    Section(
        name="fuzz",
        title="Bad input",
        command='RELIABILITY_REPORT=1 python -m pytest -q -m "" tests/reliability/test_fuzz.py',
    ),
)

VERSIONS = ("strands-agents", "slack-bolt", "slack-sdk", "aiohttp", "boto3", "moto")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GB"
    except (OSError, ValueError, IndexError):
        pass
    return "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> list[str]:
    """The lines that say where the figures come from."""
    versions = ", ".join(f"{name} {_version(name)}" for name in VERSIONS)
    return [
        f"- Machine: {os.cpu_count()} cores ({_cpu_model()}), {_memory()} of memory, "
        f"{platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; {versions}",
        "- DynamoDB and S3 are moto's server over HTTP on the same machine; Slack is the local Slack "
        "(`localslack`) over HTTP. Requests and capacity units are what AWS would bill; times include the emulators.",
    ]


def _section_date(path: Path) -> str:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def render(*, today: dt.date, results: Path = RESULTS) -> str:
    lines = [
        "# Benchmark and reliability report",
        "",
        f"Stitched on {today.isoformat()} by `python -m bench.report` from `bench/results/`.",
        "",
        *machine(),
        "",
    ]
    missing: list[Section] = []
    for section in SECTIONS:
        path = results / f"{section.name}.md"
        if not path.exists():
            missing.append(section)
            continue
        body = path.read_text().strip()
        lines += [body, "", f"<sub>Section written {_section_date(path)} by `{section.command}`.</sub>", ""]
    if missing:
        lines += ["## Not run yet", ""]
        lines += [f"- {section.title}: `{section.command}`" for section in missing]
        lines.append("")
    return "\n".join(lines)


def run_all(sections: Sequence[Section]) -> int:
    """Run each section's command in turn; the exit status of the first that failed, else 0."""
    failed = 0
    env = os.environ | {"RELIABILITY_REPORT": "1"}
    for section in sections:
        command = section.command.replace("python ", f"{shlex.quote(sys.executable)} ", 1)
        print(f"== {section.title}: {section.command}", flush=True)
        status = subprocess.call(command, shell=True, env=env, cwd=BENCH.parent)  # our own fixed commands
        if status and not failed:
            failed = status
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run every section's command first (tens of minutes)")
    parser.add_argument("--only", choices=[s.name for s in SECTIONS], action="append", help="with --run: these only")
    args = parser.parse_args(argv)
    status = 0
    if args.run:
        chosen = [s for s in SECTIONS if not args.only or s.name in args.only]
        status = run_all(chosen)
    REPORT.write_text(render(today=dt.datetime.now(tz=dt.UTC).date()))
    print(f"wrote {REPORT.relative_to(BENCH.parent)}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
