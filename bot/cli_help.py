"""The environment variables each ``approval-bot`` subcommand reads, for its ``--help``.

One table of descriptions and one list per subcommand, so that ``--help`` says exactly
what a command looks at (``tests/bot/test_cli.py`` checks the lists against
``bot.settings.Settings``). serve, socket and sweep build the full ``Settings``, which
checks every variable it knows, so a malformed one stops them even where unused.
"""

from __future__ import annotations

from typing import Final

DESCRIPTIONS: Final[dict[str, str]] = {
    "SLACK_BOT_TOKEN": "the app's bot token, xoxb-… (required)",
    "SLACK_SIGNING_SECRET": "the app's signing secret (required)",
    "SLACK_APP_TOKEN": "the app-level token, xapp-… with connections:write (required here)",
    "SLACK_API_URL": "base URL of the Slack Web API (default https://slack.com/api/)",
    "SLACK_COMMAND": "the slash command handled (default /graph)",
    "PORT": "port to listen on when --port is not given (default 3000)",
    "WORKERS": "worker processes for graph passes when --workers is not given (default 0: none)",
    "GRAPH_MODULES": "comma-separated graph modules, importable or in the current directory",
    "EXAMPLE_GRAPHS": "true to offer the example graphs of graph_defs/examples (default false)",
    "GRAPH_MODEL": "bedrock (default) or offline: the model of graphs that use graph_defs.models",
    "BEDROCK_MODEL_ID": "Bedrock model or inference profile for GRAPH_MODEL=bedrock",
    "DYNAMODB_TABLE": "DynamoDB table of runs; unset for the SQLite file",
    "DYNAMODB_TABLE*": "name of the table to create (required)",
    "SNAPSHOT_BUCKET": "S3 bucket for large run states (optional)",
    "SNAPSHOT_BUCKET*": "S3 bucket for large run states, created too when set",
    "SQLITE_PATH": "the SQLite file when DYNAMODB_TABLE is unset (default .approval-bot/runs.sqlite3)",
    "AWS_REGION": "region of the table and bucket; boto3's other variables (AWS_PROFILE, keys) apply",
    "AWS_ENDPOINT_URL_DYNAMODB": "a DynamoDB endpoint instead of AWS's (e.g. a local one)",
    "AWS_ENDPOINT_URL_S3": "an S3 endpoint instead of AWS's",
    "LEASE_SECONDS": "how long a resuming process owns a run, 5 or more (default 120)",
    "DELIVERY_GRACE_SECONDS": "seconds before the sweeper delivers what another process owes Slack (default 60)",
    "CANCEL_CHECK_SECONDS": "at most how often a running pass reads the store for a cancel (default 1; 0: every node)",
    "DIRECTORY_TTL_SECONDS": "how long Slack's group and channel members decide who may answer (default 60)",
    "ASK_EXPIRES_AFTER": "seconds an ask waits when its graph sets no expires_after (default 259200, 3 days)",
    "ASK_ALARM_AFTER": "seconds after which a waiting ask gets a reminder and the sweep reports its age (default off)",
    "RUN_RETENTION_DAYS": "days a finished run is kept before it is deleted (default 30)",
    "LIVE_PROGRESS": "a run's status message: stream (Slack's streaming surface, else edits), update, off",
    "MAX_STARTS_PER_MINUTE": "runs one person may start in a minute; 0 for no limit (default 10)",
    "MAX_WAITING_RUNS": "unfinished runs one person may have at once; 0 for no limit (default 20)",
    "LOG_LEVEL": "DEBUG, INFO (default), WARNING, ERROR or CRITICAL",
    "LOG_LEVEL*": "DEBUG, INFO, WARNING (default here), ERROR or CRITICAL",
    "LOG_FORMAT": "text (default) or json: one JSON object a line, naming the run, ask, graph and request",
    "METRICS": "on to write CloudWatch metrics as EMF lines on stdout (default off; docs/metrics.md)",
}
"""A name ending in ``*`` is the same variable described for one command in particular."""

_SLACK: Final = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL", "SLACK_COMMAND")
_GRAPHS: Final = ("GRAPH_MODULES", "EXAMPLE_GRAPHS", "GRAPH_MODEL", "BEDROCK_MODEL_ID")
_STORE: Final = (
    "DYNAMODB_TABLE",
    "SNAPSHOT_BUCKET",
    "SQLITE_PATH",
    "AWS_REGION",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_S3",
)
# What the engine of serve, socket and sweep reads besides the store and the graphs.
_ENGINE: Final = (
    "LEASE_SECONDS",
    "DELIVERY_GRACE_SECONDS",
    "CANCEL_CHECK_SECONDS",
    "DIRECTORY_TTL_SECONDS",
    "ASK_EXPIRES_AFTER",
    "ASK_ALARM_AFTER",
    "RUN_RETENTION_DAYS",
    "LIVE_PROGRESS",
    "MAX_STARTS_PER_MINUTE",
    "MAX_WAITING_RUNS",
)

READS: Final[dict[str, tuple[str, ...]]] = {
    "serve": (*_SLACK, "PORT", "WORKERS", *_GRAPHS, *_STORE, *_ENGINE, "LOG_LEVEL", "LOG_FORMAT", "METRICS"),
    "socket": (*_SLACK, "SLACK_APP_TOKEN", *_GRAPHS, *_STORE, *_ENGINE, "LOG_LEVEL", "LOG_FORMAT", "METRICS"),
    "sweep": (*_SLACK, *_GRAPHS, *_STORE, *_ENGINE, "LOG_LEVEL", "LOG_FORMAT", "METRICS"),
    "create-table": (
        "DYNAMODB_TABLE*",
        "SNAPSHOT_BUCKET*",
        "AWS_REGION",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ENDPOINT_URL_S3",
        "LOG_LEVEL",
    ),
    # The demo runs its own local Slack and SQLite store, the examples on and an offline model.
    "demo": ("GRAPH_MODULES", "LOG_LEVEL*"),
}

_CHECKS_ALL: Final = (
    "serve, socket and sweep check all of the bot's settings at start: a malformed one stops\n"
    "them even where this command does not use it (PORT for sweep, say)."
)


def epilog(command: str) -> str:
    """The ``environment:`` section of ``approval-bot <command> --help``."""
    names = READS[command]
    width = max(len(name.rstrip("*")) for name in names)
    lines = [f"  {name.rstrip('*'):<{width}}  {DESCRIPTIONS[name]}" for name in names]
    tail = ["", _CHECKS_ALL] if command in ("serve", "socket", "sweep") else []
    return "\n".join(["environment:", *lines, *tail])


def variables(command: str) -> set[str]:
    """The variable names ``command``'s help lists."""
    return {name.rstrip("*") for name in READS[command]}
