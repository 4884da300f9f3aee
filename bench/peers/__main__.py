"""``python -m bench.peers``: the peer benchmark; ``bash bench/peers/run.sh`` sets up its venv first.

Why a check up front: without the ``peers`` extra the LangGraph and Strands-storage sides
cannot run; saying so at once beats a table of import errors. ``--systems ours`` needs nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from bench.peers.cycle import ROOT, SIZES, SYSTEMS, measure
from bench.peers.report import write

_LANGGRAPH = ("langgraph", "langgraph_checkpoint_aws")
_NEEDS = {
    "langgraph": _LANGGRAPH,
    "langgraph-z": _LANGGRAPH,
    "strands": ("strands_dynamodb_storage",),
    "strands-z": ("strands_dynamodb_storage",),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--no-bucket-only", action="store_true", help="skip the runs with an S3 bucket")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    missing = [m for s in args.systems for m in _NEEDS.get(s, ()) if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"missing {', '.join(missing)}: install the peers extra (bash bench/peers/run.sh does it in .venv-peers)",
            file=sys.stderr,
        )
        return 2
    measured = measure(
        systems=args.systems,
        sizes={label: SIZES[label] for label in args.sizes},
        buckets=(False,) if args.no_bucket_only else (False, True),
    )
    md, js = write(measured, out_dir=args.out_dir)
    print(md.read_text(encoding="utf-8"))
    print(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
