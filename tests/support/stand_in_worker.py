"""A stand-in for ``bot.worker`` in ``tests/bot/test_workers.py``: the pool's side of the pipes, no bot.

It reports as ``bot.worker`` does: ready, then each piece started, then done.

Each line it reads is appended to ``$STAND_IN_LOG`` as ``<pid> <seq>``, then reported done;
``STAND_IN_DIE=first`` makes the first process (the one that finds no ``$STAND_IN_LOG.died``)
die on its first line before reporting it, ``always`` makes every process die so.
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
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log = Path(os.environ["STAND_IN_LOG"])
    died = Path(f"{log}.died")
    die = os.environ.get("STAND_IN_DIE", "")
    with os.fdopen(args.read_fd, "rb") as lines, os.fdopen(args.write_fd, "wb", buffering=0) as reports:
        time.sleep(args.delay)  # a restart's back-off, as ``bot.worker`` waits it out
        reports.write(b'{"ready": true}\n')
        for line in lines:
            if b'"seq"' not in line:
                continue  # the pool's word on sweeping: nothing to sweep here
            seq = json.loads(line)["seq"]
            reports.write(json.dumps({"started": seq}).encode() + b"\n")
            with log.open("a") as out:
                out.write(f"{os.getpid()} {seq}\n")
            if die == "always" or (die == "first" and not died.exists()):
                died.touch()
                os.kill(os.getpid(), signal.SIGKILL)
            reports.write(json.dumps({"done": seq}).encode() + b"\n")


if __name__ == "__main__":
    main()
