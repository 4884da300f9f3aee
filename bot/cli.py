"""The ``approval-bot`` console script: serve, socket, create-table, sweep, demo."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from bot.logs import set_level
from bot.settings import Settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="approval-bot", description="Slack approvals for Strands graphs.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="HTTP server: Slack requests at POST /slack/events")
    serve.add_argument("--port", type=int, default=None, help="default: $PORT or 3000")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--sweep-seconds", type=float, default=60.0, help="how often to look for stuck runs")
    socket = sub.add_parser("socket", help="the same app over Socket Mode (needs SLACK_APP_TOKEN)")
    socket.add_argument("--sweep-seconds", type=float, default=60.0)
    sub.add_parser("create-table", help="create the DynamoDB table (and SNAPSHOT_BUCKET) if missing")
    sub.add_parser("sweep", help="resume stuck runs once and exit (for cron or a schedule)")
    demo = sub.add_parser("demo", help="offline demo: no Slack workspace, no AWS account")
    demo.add_argument("--script", action="store_true", help="run a scripted walk-through instead of a prompt")
    return parser


def _settings() -> Settings:
    try:
        return Settings()  # type: ignore[call-arg]  # values come from the environment
    except ValidationError as error:
        missing = [str(e["loc"][0]) for e in error.errors() if e["type"] == "missing"]
        if missing:
            raise SystemExit(f"approval-bot: set {', '.join(missing)} (see README, Configuration)") from None
        raise SystemExit(f"approval-bot: bad configuration:\n{error}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    set_level(os.environ.get("LOG_LEVEL", "INFO"))
    if args.command == "demo":
        # The demo's terminal is for the conversation; library chatter only when asked for.
        set_level(os.environ.get("LOG_LEVEL", "WARNING"))
        from demo.session import run_demo

        return int(asyncio.run(run_demo(scripted=args.script or not sys.stdin.isatty())))
    if args.command == "create-table":
        return _create_table()
    settings = _settings()
    if args.command == "serve":
        from bot.server import serve

        port = args.port if args.port is not None else settings.port
        asyncio.run(serve(settings, host=args.host, port=port, sweep_seconds=args.sweep_seconds))
    elif args.command == "socket":
        from bot.socket_mode import run_socket_mode

        asyncio.run(run_socket_mode(settings, sweep_seconds=args.sweep_seconds))
    elif args.command == "sweep":
        from bot.services import build_services

        runs = asyncio.run(build_services(settings).engine.sweep())
        for run in runs:
            print(f"{run.run_id}: {run.status.value}")
    return 0


def _create_table() -> int:
    from persistence import create_table

    table = os.environ.get("DYNAMODB_TABLE")
    if not table:
        raise SystemExit("approval-bot create-table: set DYNAMODB_TABLE (and optionally SNAPSHOT_BUCKET)")
    for line in create_table(table=table, bucket=os.environ.get("SNAPSHOT_BUCKET") or None):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
