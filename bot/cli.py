"""The ``approval-bot`` console script: serve, socket, create-table, sweep, demo, init.

A bad setting or argument ends the command with exactly one line on stderr (naming the
setting, what is wrong and what to set) and exit status 2: argparse's errors through
``_Parser.error``, everything found later through ``bot.cli_errors.explain``. Errors it
does not recognise are bugs and keep their traceback.

This module imports little at the top (argparse, the settings), so that a command with a
bad setting fails in a fraction of a second, before Strands or boto3 are imported.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import math
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from bot.cli_errors import explain
from bot.cli_help import epilog
from bot.logs import format_named, set_level, use_format
from bot.slack_access import ConfigError

if TYPE_CHECKING:
    from bot.services import Services
    from engine.records import Run

MIN_SWEEP_SECONDS = 1.0
"""Below this a sweeper spends its time querying the store (``0`` was a busy loop on one core)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and the usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _port(text: str) -> int:
    """``--port``: refused at parse time, not as an OverflowError once the server binds."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (an integer from 1 to 65535)") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (an integer from 1 to 65535)")
    return port


def _sweep_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds):
        raise argparse.ArgumentTypeError(
            f"{text} is not a number of seconds: give one, {MIN_SWEEP_SECONDS:g} or more (default 60)"
        )
    if seconds < MIN_SWEEP_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text} is too short: sweep at most once a second (--sweep-seconds {MIN_SWEEP_SECONDS:g} or more)"
        )
    return seconds


MAX_WORKERS = 64
"""More worker processes than this is a typo: each holds the graphs' modules in memory
(``WORKERS`` has the same bound, in ``bot.settings``)."""


def _workers(text: str) -> int:
    """``--workers``: 0 (graph passes in the serving process) or a number of worker processes."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of worker processes") from None
    if not 0 <= count <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{count} is not a number of worker processes: give 0 (none, the default) to {MAX_WORKERS}"
        )
    return count


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="approval-bot", description="Slack approvals for Strands graphs.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{serve,socket,create-table,sweep,demo,init}")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=epilog(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    sweep_help = f"seconds between looks for stuck runs, {MIN_SWEEP_SECONDS:g} or more (default 60)"
    serve = command("serve", "HTTP server: Slack requests at POST /slack/events")
    serve.add_argument("--port", type=_port, default=None, help="default: $PORT or 3000")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--sweep-seconds", type=_sweep_seconds, default=60.0, help=sweep_help)
    serve.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="run graph passes and the sweeper in N worker processes, acks alone in this one "
        "(default: $WORKERS or 0, all in one process; docs/running.md says when to)",
    )
    socket = command("socket", "the same app over Socket Mode (needs SLACK_APP_TOKEN)")
    socket.add_argument("--sweep-seconds", type=_sweep_seconds, default=60.0, help=sweep_help)
    command("create-table", "create the DynamoDB table (and SNAPSHOT_BUCKET) if missing")
    command("sweep", "resume stuck runs once and exit (for cron or a schedule)")
    demo = command("demo", "offline demo: no Slack workspace, no AWS account")
    demo.add_argument("--script", action="store_true", help="run a scripted walk-through instead of a prompt")
    init_summary = "write a deployable project of your own graphs into a new or empty folder"
    init = sub.add_parser("init", help=init_summary, description=init_summary)
    init.add_argument("dir", help="the project's folder (made if missing)")
    init.add_argument(
        "--bot-source",
        metavar="SPEC",
        help="the bot in requirements.txt: a path or a pip requirement (default: where this bot was installed from)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        explained = explain(error)
        if explained is None:
            raise
        print(f"approval-bot {args.command}: {explained.line}", file=sys.stderr, flush=True)
        return explained.status


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The demo's terminal is for the conversation; library chatter only when asked for.
    set_level(os.environ.get("LOG_LEVEL"), default="WARNING" if args.command == "demo" else "INFO")
    use_format(format_named(os.environ.get("LOG_FORMAT"), on_lambda=False))
    if args.command == "create-table":
        return _create_table()
    if args.command == "init":
        from bot.scaffold.cli import run_init

        return run_init(args.dir, bot_source=args.bot_source)
    if args.command == "demo":
        _cwd_on_path()
        from demo.session import run_demo

        return int(asyncio.run(run_demo(scripted=args.script or not sys.stdin.isatty())))
    from bot.settings import load_settings

    settings = load_settings()  # a bad setting fails here, before anything else is imported
    if args.command == "socket" and settings.workers:
        raise ConfigError(
            f"WORKERS={settings.workers} is for `approval-bot serve`: Socket Mode runs in one process; "
            "unset WORKERS (or set it to 0), or serve over HTTP"
        )
    if args.command in ("serve", "socket"):
        from bot.token_shapes import check_tokens

        check_tokens(settings, socket=args.command == "socket")
    _cwd_on_path()
    if args.command == "serve":
        from bot.server import serve

        port = args.port if args.port is not None else settings.port
        workers = args.workers if args.workers is not None else settings.workers
        asyncio.run(serve(settings, host=args.host, port=port, sweep_seconds=args.sweep_seconds, workers=workers))
    elif args.command == "socket":
        from bot.socket_mode import run_socket_mode

        asyncio.run(run_socket_mode(settings, sweep_seconds=args.sweep_seconds))
    elif args.command == "sweep":
        from bot import metrics
        from bot.services import build_services

        metrics.start(on=settings.metrics)
        try:
            swept = asyncio.run(_sweep(build_services(settings)))
        finally:
            metrics.flush()
        for run in swept:
            print(f"{run.run_id}: {run.status.value}")
    return 0


async def _sweep(services: Services) -> list[Run]:
    """One sweep; the store is asked first (region, credentials, table, bucket: the same
    ``bot.preflight`` check as ``serve``), before Strands is imported, and the graph modules
    are imported before any run is resumed, so that a bad ``GRAPH_MODULES`` fails the
    command once instead of each run it finds."""
    from bot.preflight import check_store

    await check_store(services)
    await asyncio.to_thread(services.graphs.load)
    return await services.engine.sweep()


_OWN_PACKAGES = ("engine", "persistence", "graph_defs", "localslack", "demo")


def _cwd_on_path() -> None:
    """Let ``GRAPH_MODULES=refunds`` find ``refunds.py`` in the current directory.

    ``python -m bot.cli`` has the current directory on ``sys.path``; the console script
    has its own ``bin/`` folder there instead. It is added here, in the console script,
    rather than in ``graph_defs.load_graph_modules``: loading graphs must not change the
    interpreter's import path as a side effect (the Lambda handler and the tests call it,
    and Lambda's working directory, the task root, is on the path already). It is
    appended, not put first, so a file in the current directory does not shadow a
    regular installed package. An editable install (``pip install -e .``) is found
    *after* every ``sys.path`` entry, though, so a ``demo.py`` or ``engine.py`` in the
    current directory would shadow this project's own packages: those the current
    directory has a name for (a file or folder, any suffix, any case) are imported first,
    and a name in ``sys.modules`` is never looked up again. The others are left alone:
    ``localslack`` alone costs up to 0.2 s a start (aiohttp's client, the fake Slack).
    """
    cwd = os.getcwd()
    try:
        here = {name.split(".", 1)[0].lower() for name in os.listdir(cwd)}
    except OSError:
        here = set(_OWN_PACKAGES)  # unreadable: assume the worst
    for package in _OWN_PACKAGES:
        if package in here:
            importlib.import_module(package)
    if all(os.path.abspath(entry or os.curdir) != cwd for entry in sys.path):
        sys.path.append(cwd)


def _create_table() -> int:
    from persistence import create_table

    table = os.environ.get("DYNAMODB_TABLE")
    if not table:
        raise ConfigError(
            "DYNAMODB_TABLE is not set: set it to the name of the table to create (and SNAPSHOT_BUCKET for a bucket)"
        )
    for line in create_table(table=table, bucket=os.environ.get("SNAPSHOT_BUCKET") or None):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
