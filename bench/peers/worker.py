"""One phase of one system's approval cycle, in a process of its own.

Why a process per phase: "resumed in a fresh process" must mean a fresh interpreter, with
nothing cached from the first pass (no client, no graph object, no in-memory lock). The
parent tags each process's AWS requests with ``AWS_SDK_UA_APP_ID``, so the shared counting
moto server attributes every request to its system and phase.

``python -m bench.peers.worker <system> <phase> '<json args>'`` prints one line
``PEERS-RESULT {...}``. A failure is a result (``ok: false`` with the error), not a crash:
a peer refusing a 1.6 MB state is one of the things the benchmark reports.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

RESULT_PREFIX = "PEERS-RESULT "
MODULES = {
    "ours": "bench.peers.ours",
    "langgraph": "bench.peers.langgraph_peer",
    "langgraph-z": "bench.peers.langgraph_peer",
    "strands": "bench.peers.strands_peer",
    "strands-z": "bench.peers.strands_peer",
}
BARRIER_TIMEOUT = 120.0


def barrier(directory: str, index: int) -> None:
    """Say this process is ready, then wait for the parent's ``go`` (all racers released together)."""
    Path(directory, f"ready-{index}").touch()
    go = Path(directory, "go")
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("barrier: no go from the parent")
        time.sleep(0.001)


async def run_phase(system: str, phase: str, args: dict[str, Any]) -> dict[str, Any]:
    module = importlib.import_module(MODULES[system])
    if phase == "resume":
        return dict(await module.resume(args, wait=lambda: barrier(args["barrier"], int(args["index"]))))
    return dict(await getattr(module, phase)(args))


def main(argv: list[str]) -> int:
    system, phase, raw = argv
    started = time.perf_counter()
    try:
        result = asyncio.run(run_phase(system, phase, json.loads(raw)))
    except Exception as error:  # a refused state is a finding: report it, don't crash
        detail = traceback.format_exception_only(type(error), error)[-1].strip()
        result = {"ok": False, "error": detail[:500]}
    result["seconds"] = round(time.perf_counter() - started, 3)
    result["pid"] = os.getpid()
    print(RESULT_PREFIX + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
