"""A stand-in for ``bot.worker`` that dies (SIGKILL) on starting work for run ``$POISON_RUN``.

It reports as ``bot.worker`` does: ready, then each piece started, then done.

Each line it reads is appended to ``$STAND_IN_LOG`` as ``<pid> <run_id>``; lines for other
runs are reported done after ``$STAND_IN_SECONDS`` (a pass that takes a moment).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--index", "--read-fd", "--write-fd"):
        parser.add_argument(name, type=int, required=True)
    parser.add_argument("--sweep-seconds", type=float, required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    log = Path(os.environ["STAND_IN_LOG"])
    poison = os.environ["POISON_RUN"]
    seconds = float(os.environ.get("STAND_IN_SECONDS") or 0)
    with os.fdopen(args.read_fd, "rb") as lines, os.fdopen(args.write_fd, "wb", buffering=0) as reports:
        time.sleep(args.delay)  # a restart's back-off, as ``bot.worker`` waits it out
        reports.write(b'{"ready": true}\n')
        for line in lines:
            if b'"seq"' not in line:
                continue  # the pool's word on sweeping: nothing to sweep here
            data = json.loads(line)
            run_id = data["work"].get("run_id", "-")
            reports.write(json.dumps({"started": data["seq"]}).encode() + b"\n")
            with log.open("a") as out:
                out.write(f"{os.getpid()} {run_id}\n")
            if run_id == poison:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(seconds)
            reports.write(json.dumps({"done": data["seq"]}).encode() + b"\n")


if __name__ == "__main__":
    main()
